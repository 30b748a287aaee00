"""Declared inputs onto forward signatures: positional, *args, keyword-only, defaults, nested leaves."""

from __future__ import annotations

from typing import Any

import pytest

from ci_onnx.contracts.errors import ConfigError
from ci_onnx.export import signature


def _echo(binding: signature.Binding, names: list[str]) -> Any:
    def record(*args: Any, **kwargs: Any) -> Any:
        return args, kwargs

    return binding.call(record, {n: f"<{n}>" for n in names})


def test_inputs_named_after_no_parameter_fill_the_positionals_in_order() -> None:
    def forward(x: Any, y: Any = None) -> None: ...

    b = signature.bind(forward, ["input", "other"])
    assert _echo(b, ["input", "other"]) == (("<input>", "<other>"), {})
    assert not b.obvious and b.describe() == "forward(x=input, y=other)"


def test_a_wrapper_taking_star_args_takes_every_input() -> None:
    def forward(*args: Any) -> None: ...

    b = signature.bind(forward, ["ids", "mask"])
    assert _echo(b, ["ids", "mask"]) == (("<ids>", "<mask>"), {})
    assert b.describe() == "forward(*args=ids, *args=mask)"


def test_names_bind_by_keyword_and_skipped_positionals_keep_their_defaults() -> None:
    def forward(ids: Any, past: Any = None, *, mask: Any = None, scale: float = 2.0) -> None: ...

    names = ["ids", "mask"]
    b = signature.bind(forward, names)
    assert _echo(b, names) == ((), {"ids": "<ids>", "mask": "<mask>"})
    assert b.obvious


def test_loose_inputs_fill_positionals_then_star_args_around_named_ones() -> None:
    def forward(a: Any, flag: bool = True, *rest: Any) -> None: ...

    b = signature.bind(forward, ["a", "r0", "r1"])
    assert _echo(b, ["a", "r0", "r1"]) == (("<a>", "<r0>", "<r1>"), {})
    assert b.describe() == "forward(a=a, flag=r0, *rest=r1)"
    named = signature.bind(forward, ["flag", "r0"])  # flag by name comes first: r0 fills a
    assert _echo(named, ["flag", "r0"]) == (("<r0>",), {"flag": "<flag>"})


def test_a_named_input_before_star_args_is_passed_by_position() -> None:
    def forward(a: Any, flag: bool = True, *rest: Any) -> None: ...

    b = signature.bind(forward, ["flag", "x", "y"])
    assert _echo(b, ["flag", "x", "y"]) == (("<x>", "<flag>", "<y>"), {})


def test_dotted_names_build_nested_tuples_and_dicts() -> None:
    def forward(ids: Any, past: Any = None, extra: Any = None) -> None: ...

    names = ["ids", "past.0.0", "past.0.1", "past.1.0", "past.1.1", "extra.scale"]
    b = signature.bind(forward, names)
    _, kwargs = _echo(b, names)
    assert kwargs["past"] == (("<past.0.0>", "<past.0.1>"), ("<past.1.0>", "<past.1.1>"))
    assert kwargs["extra"] == {"scale": "<extra.scale>"}
    assert "past=((past.0.0, past.0.1), (past.1.0, past.1.1))" in b.describe()


def test_keyword_inputs_reach_var_keyword() -> None:
    def forward(x: Any, **kw: Any) -> None: ...

    b = signature.bind(forward, ["x", "temperature"])
    assert _echo(b, ["x", "temperature"]) == ((), {"x": "<x>", "temperature": "<temperature>"})


def test_a_required_parameter_no_input_reaches_names_it_and_the_fix() -> None:
    def forward(ids: Any, mask: Any) -> None: ...

    with pytest.raises(ConfigError, match=r"needs the parameter 'mask'.*declare model.inputs.mask"):
        signature.bind(forward, ["ids"])


def test_too_many_inputs_for_the_signature_names_them() -> None:
    def forward(x: Any) -> None: ...

    with pytest.raises(ConfigError, match=r"'b' fit\(s\) no parameter of forward\(x\)"):
        signature.bind(forward, ["a", "b"])


def test_a_tuple_numbered_with_a_gap_is_an_error() -> None:
    def forward(past: Any) -> None: ...

    with pytest.raises(ConfigError, match=r"numbered \[0, 2\]"):
        signature.bind(forward, ["past.0", "past.2"])


def test_flatten_follows_the_returned_structure() -> None:
    torch = pytest.importorskip("torch")
    a, b, c = torch.zeros(()), torch.ones(2), torch.ones(2, 2)

    class Output:  # ModelOutput-like: to_tuple drops the fields that are None
        def to_tuple(self) -> tuple[Any, ...]:
            return (a, (b, c))

    assert [t.shape for t in signature.flatten(Output())] == [(), (2,), (2, 2)]
    assert [t.shape for t in signature.flatten({"x": a, "y": [None, b]})] == [(), (2,)]


def test_the_export_finding_shows_a_binding_that_is_not_obvious() -> None:
    from ci_onnx.export import pipeline, torch_export

    done = torch_export.ExportOutcome(ok=True, duration_s=1.0)
    wrapper = pipeline.export_finding(done, "dynamo", 18, signature.bind(lambda *args: None, ["ids", "mask"]))
    assert wrapper.message.endswith("; inputs bound as forward(*args=ids, *args=mask)")
    assert wrapper.figures["call"] == "forward(*args=ids, *args=mask)"
    plain = pipeline.export_finding(done, "dynamo", 18, signature.bind(lambda x: None, ["x"]))
    assert "bound as" not in plain.message
