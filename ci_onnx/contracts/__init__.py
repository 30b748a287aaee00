"""The contracts layer: the frozen types the stages exchange (Target, Manifest, Observation,
TargetResult, the options and settings a config adds) and what they stand on (errors, the one
process helper, escaping, serialisation). Nothing here knows a stage; the observer imports some of
these inside a target's environment (``ci_onnx.observer.CONTRACTS``), so this file stays empty."""
