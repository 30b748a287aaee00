"""Latency and throughput against batch size and each swept dim, one line per target, drawn twice:
as Mermaid ``xychart-beta`` blocks for the comment and job summary (GitHub renders them), and as
small SVG files beside report.md (written here by hand: no plotting dependency).

A chart needs two points on its x axis or more; a target that lacks one of the chart's points is
left out of it (and named), never drawn with a made-up value. Mermaid's xychart has no legend, so
each line's colour is set in the block's config and the legend follows the block as text. At most
:data:`MAX_LINES` lines a chart: more targets make more charts ("1 of 2").
"""

from __future__ import annotations

import dataclasses
import html
import math
from collections.abc import Callable, Sequence
from pathlib import Path

from ci_onnx.contracts import escape
from ci_onnx.contracts.results import LatencyStat
from ci_onnx.report.collect import Entry

PALETTE = (
    ("🟦", "#1f6feb"),
    ("🟧", "#f08c00"),
    ("🟩", "#2f9e44"),
    ("🟥", "#e03131"),
    ("🟪", "#7048e8"),
    ("🟫", "#8b5a2b"),
    ("🟨", "#e0b000"),
    ("⬛", "#343a40"),
)
"""Each line's colour, and the square that stands for it in the text legend."""
MAX_LINES = len(PALETTE)


@dataclasses.dataclass(frozen=True)
class Series:
    target: str
    values: tuple[float, ...]


@dataclasses.dataclass(frozen=True)
class Chart:
    slug: str
    """The SVG file's name: ``chart-<slug>.svg``."""
    title: str
    x_label: str
    x: tuple[int, ...]
    y_label: str
    series: tuple[Series, ...]
    left_out: tuple[str, ...] = ()
    """Targets without every point of the x axis (not drawn)."""
    group: int = 0
    """Which :data:`MAX_LINES` targets of the axis this chart draws (0: the first); the comment shows
    the first group once it has to fold, and every chart stays in report.md and the SVG files."""

    @property
    def svg_file(self) -> str:
        return f"chart-{self.slug}.svg"

    @property
    def legend(self) -> tuple[tuple[str, str], ...]:
        """(square, target) per line, in the block's colour order."""
        return tuple((PALETTE[i][0], s.target) for i, s in enumerate(self.series))

    @property
    def legend_line(self) -> str:
        """The legend as one Markdown line: ``🟦 `target` · 🟧 `target```."""
        return " · ".join(f"{square} `{escape.code(target)}`" for square, target in self.legend)

    @property
    def mermaid(self) -> str:
        return mermaid(self)


Figure = Callable[[LatencyStat], float]
FIGURES: tuple[tuple[str, str, str, Figure], ...] = (
    ("latency", "p50 latency", "ms", lambda s: s.p50_ms),
    ("throughput", "throughput", "items/s", lambda s: s.throughput),
)


def charts(entries: Sequence[Entry]) -> tuple[Chart, ...]:
    """Latency and throughput by batch size, then by each swept dim, for ``entries`` that have them."""
    by_axis: dict[str, dict[str, dict[int, LatencyStat]]] = {}  # axis → target → x → stat
    for e in entries:
        if e.result is None:
            continue
        for s in e.result.observed.latency:
            by_axis.setdefault("batch size", {}).setdefault(e.target.id, {})[s.batch_size] = s
        for s in e.result.observed.sweep_latency:
            symbol, _, size = s.point.partition("=")
            if size.isdigit():
                by_axis.setdefault(symbol, {}).setdefault(e.target.id, {})[int(size)] = s
    out: list[Chart] = []
    for axis, targets in by_axis.items():
        xs = tuple(sorted({x for points in targets.values() for x in points}))
        if len(xs) < 2:
            continue  # one point makes no chart
        whole = [t for t, points in targets.items() if all(x in points for x in xs)]
        left = tuple(t for t in targets if t not in whole)
        groups = [whole[i : i + MAX_LINES] for i in range(0, len(whole), MAX_LINES)]
        for slug, what, unit, figure in FIGURES:
            for n, group in enumerate(groups):
                part = f" ({n + 1} of {len(groups)})" if len(groups) > 1 else ""
                name = "batch" if axis == "batch size" else axis
                out.append(
                    Chart(
                        slug=f"{slug}-by-{_slug(name)}" + (f"-{n + 1}" if len(groups) > 1 else ""),
                        title=f"{what} ({unit}) by {axis}{part}",
                        x_label=axis,
                        x=xs,
                        y_label=unit,
                        series=tuple(
                            Series(t, tuple(_round(figure(targets[t][x])) for x in xs)) for t in group
                        ),
                        left_out=left,
                        group=n,
                    )
                )
    return tuple(out)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-") or "dim"


def _round(x: float) -> float:
    return float(f"{x:.4g}") if math.isfinite(x) else 0.0


def _quoted(text: str) -> str:
    """A Mermaid string: no double quote or line break can end it early."""
    return '"' + " ".join(text.replace('"', "'").split()) + '"'


def _number(x: float) -> str:
    return f"{x:.4g}" if "e" not in f"{x:.4g}" else f"{x:.6f}".rstrip("0").rstrip(".")


def mermaid(chart: Chart) -> str:
    """The ``xychart-beta`` block (without its fence): each line coloured as its legend says."""
    colours = ", ".join(PALETTE[i][1] for i in range(len(chart.series)))
    lines = [
        "---",
        "config:",
        "  themeVariables:",
        "    xyChart:",
        f'      plotColorPalette: "{colours}"',
        "---",
        "xychart-beta",
        f"  title {_quoted(chart.title)}",
        f"  x-axis {_quoted(chart.x_label)} [{', '.join(_quoted(str(x)) for x in chart.x)}]",
        f"  y-axis {_quoted(chart.y_label)}",
    ]
    lines += [f"  line [{', '.join(_number(v) for v in s.values)}]" for s in chart.series]
    return "\n".join(lines)


W, H, LEFT, RIGHT, TOP, BOTTOM, ROW = 640, 300, 64, 16, 32, 44, 18


def svg(chart: Chart) -> str:
    """The chart as a small, plain SVG: axes, ticks, one polyline per target, the legend below."""
    height = H + ROW * len(chart.series)
    top = max((v for s in chart.series for v in s.values), default=0.0) or 1.0
    step = _nice(top / 4)
    ceiling = step * math.ceil(top / step)
    plot_w, plot_h = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(i: int) -> float:
        return LEFT + (plot_w * (i + 0.5) / len(chart.x))

    def py(v: float) -> float:
        return TOP + plot_h * (1 - v / ceiling)

    esc = html.escape
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" '
        f'viewBox="0 0 {W} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{height}" fill="#ffffff"/>',
        f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">{esc(chart.title)}</text>',
    ]
    ticks = round(ceiling / step)
    for k in range(ticks + 1):
        v = step * k
        y = py(v)
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" stroke="#e9ecef"/>')
        parts.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{esc(_number(_round(v)))}</text>'
        )
    base = TOP + plot_h
    parts.append(f'<line x1="{LEFT}" y1="{base}" x2="{W - RIGHT}" y2="{base}" stroke="#495057"/>')
    parts.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}" stroke="#495057"/>')
    for i, x in enumerate(chart.x):
        parts.append(f'<text x="{px(i):.1f}" y="{base + 16}" text-anchor="middle">{x}</text>')
    parts.append(
        f'<text x="{LEFT + plot_w / 2}" y="{base + 34}" text-anchor="middle">{esc(chart.x_label)}</text>'
    )
    parts.append(
        f'<text x="14" y="{TOP + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + plot_h / 2})">{esc(chart.y_label)}</text>'
    )
    for n, s in enumerate(chart.series):
        colour = PALETTE[n][1]
        points = " ".join(f"{px(i):.1f},{py(v):.1f}" for i, v in enumerate(s.values))
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{points}"/>')
        parts += [
            f'<circle cx="{px(i):.1f}" cy="{py(v):.1f}" r="3" fill="{colour}"/>'
            for i, v in enumerate(s.values)
        ]
        y = H + ROW * n + 4
        parts.append(f'<rect x="{LEFT}" y="{y}" width="12" height="12" fill="{colour}"/>')
        parts.append(f'<text x="{LEFT + 18}" y="{y + 10}">{esc(s.target)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _nice(x: float) -> float:
    """1, 2 or 5 times a power of ten, at least ``x``: a tick step people read at a glance."""
    power = 10 ** math.floor(math.log10(x)) if x > 0 else 1.0
    return next(m * power for m in (1, 2, 5, 10) if m * power >= x)


def write_svgs(out: Path, charts: Sequence[Chart]) -> list[Path]:
    """Each chart as ``out/chart-<slug>.svg`` (beside report.md); stale charts of an earlier run go."""
    for old in out.glob("chart-*.svg"):
        old.unlink()
    written = []
    for c in charts:
        path = out / c.svg_file
        path.write_text(svg(c))
        written.append(path)
    return written
