"""The step of the android-emulator-runner stand-in: record the inputs, then fail, booting nothing.

Each call writes $ACT_ARTIFACTS/emulator-runner/<job's first target>-<n>.json (the inputs by name,
and the job's TARGETS, the matrix entry's targets comma-separated) so a test can read what the workflow asked the real action for; then it prints
one ::error:: line saying that there is no emulator here, and exits 1. Stdlib only.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

PREFIX = "EMU_"


def main() -> int:
    inputs = {
        k[len(PREFIX) :].lower().replace("_", "-"): v for k, v in os.environ.items() if k.startswith(PREFIX)
    }
    targets = [t for t in os.environ.get("TARGETS", "").split(",") if t] or ["unknown"]
    folder = Path(os.environ["ACT_ARTIFACTS"]) / "emulator-runner"
    folder.mkdir(parents=True, exist_ok=True)
    n = len(list(folder.glob(f"{targets[0]}-*.json")))
    record = {"targets": targets, "inputs": inputs}
    (folder / f"{targets[0]}-{n}.json").write_text(json.dumps(record, indent=1))
    print(
        f"::error::android-emulator-runner stand-in: no emulator here (act on a host without the Android "
        f"SDK): api-level {inputs.get('api-level')} {inputs.get('arch')} was not booted and its script "
        "did not run"
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
