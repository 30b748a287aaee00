"""The CLI's commands, one module each; ci_onnx/cli/__init__.py assembles the group."""
