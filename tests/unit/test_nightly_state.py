"""What nights remember: the family key, the state in the issue body, the state file."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci_onnx.contracts.errors import UsageError
from ci_onnx.contracts.target import Target
from ci_onnx.nightly.families import FamilyKey
from ci_onnx.nightly.state import Memory, TrackState, embed, extract, read_memory, write_memory


def test_the_family_survives_a_new_release_but_not_a_new_spec() -> None:
    a = FamilyKey.of(Target("1.32.0", "cpu", 17, "dynamo", runtime_spec="latest"))
    b = FamilyKey.of(Target("1.32.1", "cpu", 17, "dynamo", runtime_spec="latest"))
    c = FamilyKey.of(Target("1.32.1", "cpu", 17, "dynamo", runtime_spec="latest-2"))
    pinned = FamilyKey.of(Target("1.20.1", "cpu", 17, "dynamo"))
    assert a == b and a.id == "cpu-op17-dynamo@latest" and pinned.id == "cpu-op17-dynamo@1.20.1"
    assert a != c and a.marker not in f"body\n{c.marker}\n"  # a marker never finds another family's issue
    fp16 = FamilyKey.of(Target("1.32.0", "openvino", 18, "torchscript", "fp16", "nightly"))
    assert fp16.id == "openvino-op18-torchscript-fp16@nightly" and fp16.package == "onnxruntime-openvino"


def test_cells_that_differ_only_by_session_options_or_api_level_are_families_of_their_own() -> None:
    """The family is the target's id without its release: a second id format had dropped these two,
    so a preset's cells or another API level's shared one tracking issue and pooled their verdicts."""
    plain = Target("1.32.0", "cpu", 17, "dynamo", runtime_spec="latest")
    no_opt = Target("1.32.0", "cpu", 17, "dynamo", runtime_spec="latest", session_options="no_opt")
    api34 = Target("1.22.0", "cpu", 17, "dynamo", runtime_spec="latest", runner="android", api_level=34)
    api30 = Target("1.22.0", "cpu", 17, "dynamo", runtime_spec="latest", runner="android", api_level=30)
    keys = [FamilyKey.of(t) for t in (plain, no_opt, api34, api30)]
    assert [k.id for k in keys] == [
        "cpu-op17-dynamo@latest",
        "cpu-op17-dynamo-so-no_opt@latest",
        "android-api34-cpu-op17-dynamo@latest",
        "android-api30-cpu-op17-dynamo@latest",
    ]
    assert len({k.cell for k in keys}) == len({k.marker for k in keys}) == 4
    for t in (plain, no_opt, api34):  # the family is the id with its release left out, nothing else
        assert t.id.replace(f"ort{t.runtime}-", "") == t.family


def test_the_state_round_trips_through_an_issue_body() -> None:
    s = TrackState(1, "cpu-op17-dynamo@latest", "1.31.3", "1.31.2", ("x--y",), "1.32.0", "2026-11-27", 3)
    hidden = embed(s)
    assert "--" not in hidden.removeprefix("<!--").removesuffix("-->")  # cannot end the comment early
    assert extract(f"<!-- marker -->\n{hidden}\n## text") == s


@pytest.mark.parametrize(
    "body",
    [
        "",
        "no state here",
        '<!-- onnx-gate:nightly-state {"schema_version":1} -->',
        "<!-- onnx-gate:nightly-state {oops} -->",
    ],
)
def test_a_body_without_readable_state_gives_none(body: str) -> None:
    assert extract(body) is None


def test_the_state_file(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "nightly-state.json"
    assert read_memory(path) == Memory(1, {})  # the first night, or an evicted cache
    write_memory(path, Memory(1, {"cpu-op17-dynamo@latest": "1.31.1"}))
    assert read_memory(path).last_good == {"cpu-op17-dynamo@latest": "1.31.1"}
    path.write_text("[1, 2]")
    with pytest.raises(UsageError, match=r"nightly-state\.json: not a nightly state file .* delete it"):
        read_memory(path)
