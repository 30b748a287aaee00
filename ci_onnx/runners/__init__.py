"""Runner kinds, the host's side: what provisions a runtime, launches its observer and collects.

Each kind is one module behind the Protocol in :mod:`ci_onnx.runners.base`, named by its row in
matrix/runners.toml, which also declares what the kind can do (its ``can`` block). What runs inside
the environment is elsewhere: the Python observer in :mod:`ci_onnx.observer`, the JavaScript and C
observers beside their kinds (``node/``, ``web/``, ``native/``).
"""
