"""Messages fit a line without a cut word, and the runtime's key line survives."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ci_onnx.contracts.shorten import fit

ORT = (
    "[ONNXRuntimeError] : 1 : FAIL : Load model from /home/runner/work/digits/digits/onnx-gate-out/"
    "bundles/op17-dynamo/model.onnx failed:Unsupported model IR version: 10, max supported IR version: 9"
)


def test_the_runtimes_key_line_is_kept_whole() -> None:
    short = fit(ORT, 120)
    assert len(short) <= 120
    assert short.endswith("Unsupported model IR version: 10, max supported IR version: 9")
    assert short.startswith("[ONNXRuntimeError] : 1 : FAIL")


def test_what_fits_is_left_alone_on_one_line() -> None:
    assert fit("a\n  b", 10) == "a b"


def test_leading_line_breaks_do_not_shift_the_cut_into_a_word() -> None:
    # found by the property below: the prefix was measured on the stripped text, taken from the raw one
    out = fit("\n \n gamma, gamma, failed:x", 21)
    assert "fai" not in out.replace("failed:", "") and len(out) <= 21


@given(
    st.lists(st.sampled_from(["alpha", "beta", "gamma,", "delta:", "failed:x", "\n"]), max_size=60),
    st.integers(20, 200),
)
def test_never_longer_than_the_limit_and_never_a_cut_word(words: list[str], limit: int) -> None:
    text = " ".join(words)
    out = fit(text, limit)
    assert len(out) <= limit
    source = set(" ".join(text.split()).replace("failed:", "failed: ").split())
    for word in out.replace("…", " ").split():
        assert (
            word in source
            or word.rstrip(",;:") in {w.rstrip(",;:") for w in source}
            or word.startswith("failed:")
        ), word
