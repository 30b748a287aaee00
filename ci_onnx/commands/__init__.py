"""The CLI's commands, one module each; ci_onnx/cli.py assembles the group."""
