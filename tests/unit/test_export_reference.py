"""The reference's outputs are matched by the names the model's structure gives, else by position."""

from __future__ import annotations

from ci_onnx.export import reference


def test_outputs_are_matched_by_the_structures_names_when_every_declared_name_is_one() -> None:
    named = [("boxes", "B"), ("scores", "S")]
    assert reference.match(["scores", "boxes"], named) == {"scores": "S", "boxes": "B"}


def test_a_plain_tuple_or_other_names_are_matched_by_position() -> None:
    assert reference.match(["a", "b"], [(None, "A"), (None, "B")]) == {"a": "A", "b": "B"}
    assert reference.match(["a", "b"], [("out", "A"), ("aux", "B")]) == {"a": "A", "b": "B"}
    mixed = [("logits", "L"), (None, "P")]  # a name for one leaf only: position decides
    assert reference.match(["logits", "past"], mixed) == {"logits": "L", "past": "P"}
