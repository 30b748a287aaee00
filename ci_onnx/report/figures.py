"""How the report writes a number: one place for every table and line (view, failures, versus)."""

from __future__ import annotations

import math


def fmt_num(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if x == 0:
        return "0"
    return f"{x:.2e}" if abs(x) < 1e-3 or abs(x) >= 1e4 else f"{x:.4g}"


def fmt_ms(x: float) -> str:
    return "—" if math.isnan(x) else (f"{x:.2f}" if x < 100 else f"{x:.0f}")


def fmt_share(x: float) -> str:
    return f"{100 * x:.1f} %"
