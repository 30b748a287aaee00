"""The host layer's outside world beside the runner kinds (ci_onnx.runners) and GitHub
(ci_onnx.github): package registries (resolve) and the environments made from them (envs)."""
