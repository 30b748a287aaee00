"""The search for the first failing release, with fake verifiers (and a real index for the list)."""

from __future__ import annotations

import math

import pytest

from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.target import Status
from ci_onnx.host.resolve import PipIndex, releases_between
from ci_onnx.nightly.bisect import bisect
from tests.support import pypi

RELEASES = [f"1.{minor}.{patch}" for minor in (30, 31, 32, 33) for patch in range(4)]  # 16, oldest first


class Verifier:
    """Passes every release below ``first_bad``; counts and records what it was asked."""

    def __init__(self, first_bad: str, odd: dict[str, Status] | None = None) -> None:
        self.first_bad = first_bad
        self.odd = odd or {}
        self.asked: list[str] = []

    def __call__(self, version: str) -> Status:
        self.asked.append(version)
        if version in self.odd:
            return self.odd[version]
        return Status.PASSED if RELEASES.index(version) < RELEASES.index(self.first_bad) else Status.FAILED


@pytest.mark.parametrize("first_bad", RELEASES[1:])
def test_the_first_bad_release_in_at_most_log2_n_verifications(first_bad: str) -> None:
    good, bad = RELEASES[0], RELEASES[-1]
    between = RELEASES[1:]
    verify = Verifier(first_bad)
    found = bisect(good, bad, between, verify_at=verify)
    assert found.first_bad == first_bad and found.exact
    assert found.good == RELEASES[RELEASES.index(first_bad) - 1]
    assert len(verify.asked) <= math.ceil(math.log2(len(between)))
    assert bad not in verify.asked  # known to fail already
    assert len(set(verify.asked)) == len(verify.asked)


def test_all_bad_names_the_release_right_after_the_good_one() -> None:
    verify = Verifier(RELEASES[1])
    found = bisect(RELEASES[0], RELEASES[8], RELEASES[1:9], verify_at=verify)
    assert (found.good, found.first_bad) == (RELEASES[0], RELEASES[1])
    assert len(verify.asked) == math.ceil(math.log2(8))


@pytest.mark.parametrize("odd", [Status.ERROR, Status.SKIPPED, Status.FAILED])
def test_an_error_or_a_flaky_failure_counts_as_not_good(odd: Status) -> None:
    # the break is at 1.33.0, but 1.31.3 errors (say, its wheel failed to install): not good
    verify = Verifier("1.33.0", {"1.31.3": odd})
    found = bisect("1.30.0", "1.33.3", RELEASES[1:], verify_at=verify)
    assert found.first_bad == "1.31.3"
    assert ("1.31.3", odd) in found.verdicts


def test_a_verifier_that_raises_a_gate_error_counts_as_an_error() -> None:
    def broken(version: str) -> Status:
        raise EnvironmentProblem(f"could not install onnxruntime=={version}")

    logged: list[str] = []
    found = bisect("1.30.0", "1.30.3", ["1.30.1", "1.30.2", "1.30.3"], verify_at=broken, log=logged.append)
    assert found.first_bad == "1.30.1"
    assert "could not install onnxruntime==1.30.2" not in " ".join(logged)
    assert "could not install onnxruntime==1.30.1" in " ".join(logged)


def test_a_single_release_between_needs_no_verification() -> None:
    verify = Verifier("1.32.0")
    found = bisect("1.31.3", "1.32.0", ["1.32.0"], verify_at=verify)
    assert (found.good, found.first_bad, found.exact, verify.asked) == ("1.31.3", "1.32.0", True, [])


def test_no_release_between_names_the_bad_one() -> None:
    """A nightly pre-release is not among the final releases: the window is the bad one alone."""
    found = bisect("1.33.3", "1.34.0.dev20261128", [], verify_at=Verifier("1.33.3"))
    assert (found.first_bad, found.verified, found.exact) == ("1.34.0.dev20261128", (), True)


def test_the_nights_results_cost_nothing() -> None:
    verify = Verifier("1.32.2")
    known = {"1.32.0": Status.PASSED, "1.33.0": Status.FAILED}
    found = bisect("1.30.0", "1.33.3", RELEASES[1:], known=known, verify_at=verify)
    assert found.first_bad == "1.32.2"
    assert verify.asked and all("1.32." in v for v in verify.asked)
    assert len(verify.asked) <= math.ceil(math.log2(4))


def test_without_a_verifier_the_answer_is_a_range() -> None:
    known = {"1.31.0": Status.PASSED, "1.32.0": Status.FAILED}
    found = bisect("1.30.0", "1.33.3", RELEASES[1:], known=known)
    assert (found.good, found.first_bad) == ("1.31.0", "1.32.0")
    assert found.untried == ("1.31.1", "1.31.2", "1.31.3") and not found.exact


def test_the_releases_come_from_a_pep_503_index() -> None:
    files = {"onnxruntime": [pypi.wheel_name("onnxruntime", v) for v in RELEASES]}
    files["onnxruntime"].append(pypi.wheel_name("onnxruntime", "1.33.0rc1"))
    with pypi.serve(files) as url:
        index = PipIndex(env=pypi.pip_env(url))
        between = releases_between("1.31.1", "1.33.0", "onnxruntime", index)
    assert between == ["1.31.2", "1.31.3", "1.32.0", "1.32.1", "1.32.2", "1.32.3", "1.33.0"]
    verify = Verifier("1.32.1")
    found = bisect("1.31.1", "1.33.0", between, verify_at=verify)
    assert found.first_bad == "1.32.1" and len(verify.asked) == 3
