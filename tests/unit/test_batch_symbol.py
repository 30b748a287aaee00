"""The one batch rule (bundle.batch_symbol / batch_axis) and the observer's split and stack along it."""

from __future__ import annotations

import numpy as np

from ci_onnx.contracts.bundle import TensorSpec, batch_axis, batch_symbol
from ci_onnx.contracts.tensorproto import Tensor
from ci_onnx.export import inputs
from ci_onnx.observer import feeds


def spec(name: str, *shape: int | str, dtype: str = "float32") -> TensorSpec:
    return TensorSpec(name, tuple(shape), dtype)


def test_axis_0_of_every_input_is_the_batch_as_before() -> None:
    assert batch_symbol([spec("ids", "batch", "seq"), spec("mask", "batch", "seq")]) == "batch"
    assert batch_symbol([spec("x", "n", 3)]) == "n"


def test_a_seq_first_rnns_batch_is_the_batch_named_symbol_every_input_carries() -> None:
    x, h0 = spec("x", "seq", "batch", 8), spec("h0", 2, "batch", 16)
    assert batch_symbol([x, h0]) == "batch"
    assert (batch_axis(x, "batch"), batch_axis(h0, "batch")) == (1, 1)
    # declared dynamic by name where the file wrote a number
    assert (
        batch_symbol([spec("x", 5, 2, 8), spec("h0", 2, 2, 16)], {"x": {"1": "bs"}, "h0": {"1": "bs"}})
        == "bs"
    )


def test_a_shared_symbol_not_named_like_a_batch_is_never_taken_for_it() -> None:
    assert batch_symbol([spec("ids", "batch", "seq"), spec("positions", "seq")]) == ""
    assert batch_symbol([spec("a", "seq", "b2"), spec("c", 1, "b2")]) == ""


def test_a_0d_or_sequence_input_carries_no_batch_and_hides_none() -> None:
    assert batch_symbol([spec("x", "batch", 8), spec("temperature")]) == "batch"
    assert batch_symbol([spec("xs", dtype="seq(tensor(float))"), spec("y", "N")]) == "N"


def test_an_output_with_the_batch_on_two_axes_has_no_batch_axis() -> None:
    assert batch_axis(spec("scores", "batch", "batch"), "batch") is None
    assert batch_axis(spec("hn", 2, "batch", 16), "batch") == 1
    assert batch_axis(spec("loss"), "batch") is None


def test_random_inputs_bind_the_batch_once_on_every_axis() -> None:
    drawn = inputs.random_inputs([spec("x", "seq", "batch", 8), spec("h0", 2, "batch", 16)], 3, 0, {"seq": 5})
    assert drawn["x"].shape == (5, 3, 8) and drawn["h0"].shape == (2, 3, 16)
    assert inputs.count_of(drawn, [spec("x", "seq", "batch", 8), spec("h0", 2, "batch", 16)]) == 3


def test_the_observer_splits_each_input_along_its_own_axis() -> None:
    data = {
        "x": Tensor("x", 1, np.arange(5 * 3 * 2, dtype=np.float32).reshape(5, 3, 2)),
        "h0": Tensor("h0", 1, np.arange(2 * 3, dtype=np.float32).reshape(2, 3, 1)),
    }
    axes = {"x": 1, "h0": 1}
    one = feeds.sample(data, 2, axes)
    assert one["x"].array.shape == (5, 1, 2) and one["h0"].array.shape == (2, 1, 1)
    np.testing.assert_array_equal(one["x"].array[:, 0], data["x"].array[:, 2])
    four = feeds.first(data, 4, axes)  # cycles past the 3 samples
    assert four["x"].array.shape == (5, 4, 2)
    np.testing.assert_array_equal(four["x"].array[:, 3], data["x"].array[:, 0])


def test_without_a_shared_batch_each_symbolic_axis_0_is_drawn_at_the_count() -> None:
    specs = [spec("a", "M", 3), spec("b", "N", 3)]
    drawn = inputs.random_inputs(specs, 4, 0, {})
    assert drawn["a"].shape == (4, 3) and drawn["b"].shape == (4, 3)
    assert inputs.random_inputs(specs, 4, 0, {"N": 2})["b"].shape == (2, 3)
