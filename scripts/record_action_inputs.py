"""Record the declared inputs of each action the workflows pin, for the pin checks in the tests.

    git clone --bare https://github.com/actions/checkout /tmp/checkout.git
    python scripts/record_action_inputs.py actions/checkout /tmp/checkout.git

reads action.yml at the pinned commit (ci_onnx.orchestration.scaffold.PINNED) of that clone and writes
tests/data/actions/<owner>--<repo>.json: the commit, its tag, what the action runs on, and each
input's name, whether it is required and its default. Only that metadata is recorded: no code, no
descriptions. ``--from COMMIT`` reads another commit where the pinned one is not in the clone, and
``--file PATH`` an action.yml read at ``--from`` elsewhere (no clone); the record then says so
(``read_from``), and the tests name it as unverified for that pin.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ci_onnx.orchestration import scaffold  # noqa: E402

OUT = ROOT / "tests" / "data" / "actions"


def record_path(action: str) -> Path:
    return OUT / (action.replace("/", "--") + ".json")


def _text(value: Any) -> str | None:
    """A default as the runner passes it: a string (YAML's true is "true")."""
    if value is None:
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


def declared(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    inputs = spec.get("inputs") or {}
    return {
        name: {
            "required": bool((meta or {}).get("required", False)),
            "default": _text((meta or {}).get("default")),
        }
        for name, meta in inputs.items()
    }


def record(action: str, clone: Path | None, read_from: str = "", file: Path | None = None) -> dict[str, Any]:
    sha, tag = scaffold.PINNED[action]
    commit = read_from or sha
    text = file.read_text() if file else ""
    for name in () if file or clone is None else ("action.yml", "action.yaml"):
        done = subprocess.run(
            ["git", "-C", str(clone), "show", f"{commit}:{name}"], capture_output=True, text=True, check=False
        )
        if done.returncode == 0:
            text = done.stdout
            break
    if not text:
        raise SystemExit(f"{clone}: no action.yml at {commit}")
    spec = YAML(typ="safe").load(text)
    tagged = ""
    if clone is not None:
        tagged = subprocess.run(
            ["git", "-C", str(clone), "rev-list", "-n", "1", tag], capture_output=True, text=True, check=False
        ).stdout.strip()
    return {
        "action": action,
        "sha": sha,
        "tag": tag,
        "tag_is_sha": tagged == sha,
        "read_from": commit,
        "using": str(spec.get("runs", {}).get("using", "")),
        "inputs": declared(spec),
    }


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=sorted(scaffold.PINNED))
    parser.add_argument("clone", type=Path, nargs="?")
    parser.add_argument("--from", dest="read_from", default="")
    parser.add_argument("--file", type=Path)
    args = parser.parse_args(argv)
    if (args.clone is None) == (args.file is None) or (args.file and not args.read_from):
        parser.error("give a clone, or --file with --from")
    data = record(args.action, args.clone, args.read_from, args.file)
    OUT.mkdir(parents=True, exist_ok=True)
    record_path(args.action).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {record_path(args.action).relative_to(ROOT)} ({len(data['inputs'])} inputs)")


if __name__ == "__main__":
    main(sys.argv[1:])
