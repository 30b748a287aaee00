"""The one escaping path (ci_onnx.contracts.escape): each context loses what it would act on, keeps the words."""

from __future__ import annotations

from ci_onnx.contracts import escape


def test_markdown_keeps_words_and_takes_away_what_acts() -> None:
    assert escape.markdown("parity[logits]: 3 of 4 > atol") == "parity[logits]: 3 of 4 › atol"
    assert escape.markdown("x\n## ✅ forged") == "x ## ✅ forged"
    assert escape.markdown("## ✅ forged").startswith("\\#")
    assert escape.markdown("1. one") == "1\\. one"
    assert escape.markdown("[a](https://e.vil)") == "\\[a]\u2060(https://e.vil)"
    assert escape.markdown("ping @team, see #12") == "ping @\u2060team, see #\u206012"
    assert escape.markdown("a | b \\| c") == "a \\| b \\\\\\| c"
    assert "<" not in escape.markdown("</details><script>")


def test_every_context_is_one_line_and_capped() -> None:
    big = "y" * 50_000_000
    for fn in (escape.markdown, escape.code, escape.html, escape.line, escape.workflow_data):
        out = fn(big)
        assert len(out) <= escape.MESSAGE_MAX and "more characters" in out
    assert escape.cap("short") == "short"


def test_code_html_and_workflow_commands() -> None:
    assert escape.code("a`b|c\nd") == "aˋb\\|c d"
    assert escape.html('<a href="x">') == "&lt;a href=&quot;x&quot;&gt;"
    assert escape.workflow_data("50%\n::error::x") == "50%25%0A::error::x"
    assert escape.workflow_property("a:b,c") == "a%3Ab%2Cc"
