"""The child process of one export.

``python -m ci_onnx.export.worker --config … --opset 17 --exporter dynamo --bundle-dir …``

It records what the export read (ci_onnx/export/record.py) into the bundle's export finding.
Exit 0 when the bundle is written (whatever its findings say), the GateError's exit code with one line
on stderr when the input is wrong. A crash or a hang is the parent's to record.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ci_onnx.contracts.bundle import write_manifest
from ci_onnx.contracts.errors import EXIT_PASS, GateError
from ci_onnx.export import record


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ci_onnx.export.worker")
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--model", default="", help="The model's name, in a config of several.")
    parser.add_argument("--opset", type=int, required=True)
    parser.add_argument("--exporter", choices=["dynamo", "torchscript", "onnx"], required=True)
    parser.add_argument("--bundle-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        from ci_onnx.config import cascade

        cfg = cascade.load_one(args.config, args.model)
        recorder = record.Recorder().start()  # the config is keyed by its values, not recorded
        if args.exporter == "onnx":
            from ci_onnx.export import onnx_only

            manifest = onnx_only.make_bundle(cfg, args.bundle_dir)
            recorder.add([cfg.resolve(cfg.model.onnx), *record.external_data(cfg.resolve(cfg.model.onnx))])
        else:
            from ci_onnx.export import pipeline

            manifest = pipeline.export_bundle(cfg, args.opset, args.exporter, args.bundle_dir)
        read = recorder.record(record.repository_of(cfg.root), exclude=[args.bundle_dir])
        write_manifest(args.bundle_dir, record.attach(manifest, read))
    except GateError as exc:
        print(f"onnx-gate: error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    return EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
