"""Regenerate the golden Markdown files: ``python -m tests.golden.regen`` (then review the diff)."""

from __future__ import annotations

from pathlib import Path

from tests.golden import cases

HERE = Path(__file__).parent


def main() -> None:
    for name, text in cases.rendered().items():
        (HERE / name).write_text(text)
        print(f"wrote tests/golden/{name} ({len(text):,} characters)")


if __name__ == "__main__":
    main()
