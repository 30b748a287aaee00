"""The report stage: collect every target's result, judge the gate, render it for people.

``collect`` gathers TargetResults (and the plan, so a target that never reported is missing),
``gate`` decides what blocks (against a ``baseline`` where there is one, with the expected-failure
``ledger``; ``diff`` and ``noise`` compare figures), ``view`` turns them into a view model that
holds every figure already formatted (one module per table: ``parity``, ``fallback``, ``latency``,
``serving``, ``precisions``…, each with its "vs base" column; ``versus``: the comparison's own
tables and lines), ``render`` lays the view out
with jinja2 templates within GitHub's size limits. Publishing lives in ``ci_onnx.github``.
"""

CHECK_NAME = "onnx-gate"
"""The check run the report creates, its conclusion computed from the results: the one check to
require. The docs, ``onnx-gate init`` and the workflows name it from here."""
