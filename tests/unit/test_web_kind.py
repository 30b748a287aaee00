"""The web runner without a browser: its command line, ids that parse back, the plan's routing of its
cells, its one-line errors, the placement it reads from the console, and the sweep of a browser."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ci_onnx import matrix
from ci_onnx import plan as planning
from ci_onnx.contracts import proc
from ci_onnx.contracts.errors import EnvironmentProblem
from ci_onnx.contracts.results import SCHEMA_VERSION, Observation
from ci_onnx.contracts.serde import dumps
from ci_onnx.contracts.target import Target
from ci_onnx.contracts.verify_options import VerifyOptions
from ci_onnx.plan import cijobs
from ci_onnx.runners import base, web
from tests.conftest import FakeIndex
from tests.support.cells import HOOKS
from tests.unit.test_runners import INDEX, cfg

WEB_INDEX = FakeIndex({**INDEX.releases, "npm:onnxruntime-web": ["1.29.0", "1.22.0"]})


def _env(tmp_path: Path) -> base.RunnerEnv:
    return base.RunnerEnv("web", "1.22.0", tmp_path / "npm", "/usr/bin/node", "onnxruntime-web")


@pytest.mark.parametrize(
    ("provider", "ep", "threads"), [("wasm", "wasm", "1"), ("wasmmt", "wasm", "2"), ("webgpu", "webgpu", "1")]
)
def test_the_driver_gets_the_cells_ep_and_threads(
    tmp_path: Path, provider: str, ep: str, threads: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = Target("1.22.0", provider, 17, "dynamo", runner="web")
    monkeypatch.setattr(web, "served_sizes", lambda bundle: [1, 8])
    x = base.Launch(tmp_path, t, tmp_path / "o", VerifyOptions(latency_runs=7), ep)
    args = web.argv(_env(tmp_path), "/usr/bin/chromium", tmp_path / "p", x)
    flags = dict(zip(args[2::2], args[3::2], strict=True))
    assert args[1] == str(web.DRIVER) and web.DRIVER.is_file()
    assert (flags["--ep"], flags["--threads"], flags["--target-id"]) == (ep, threads, t.id)
    assert (flags["--chromium"], flags["--batch-sizes"], flags["--latency-runs"]) == (
        "/usr/bin/chromium",
        "1,8",
        "7",
    )
    assert flags["--modules"] == str(tmp_path / "npm")


@pytest.mark.parametrize("provider", ["wasm", "wasmmt", "webgpu"])
def test_web_ids_parse_back(provider: str) -> None:
    t = Target("1.22.0", provider, 17, "dynamo", runner="web")
    assert t.id == f"web-ort1.22.0-{provider}-op17-dynamo"
    assert Target.from_id(t.id) == t
    assert provider in matrix.runners()["web"].providers and provider in web.WASM_THREADS


def test_the_plan_routes_web_cells_to_the_web_job_and_python_keeps_its_own() -> None:
    plan = planning.expand(
        cfg(runners=("python", "web"), providers=("cpu", "wasm", "wasmmt", "webgpu"), runtimes=("1.22.0",)),
        FakeIndex({**WEB_INDEX.releases, "onnxruntime": ["1.22.0"]}),
    )
    jobs = {t.id: cijobs.job_of(t) for t in plan.targets}
    assert jobs == {
        "ort1.22.0-cpu-op17-dynamo": "container",
        "web-ort1.22.0-wasm-op17-dynamo": "web",
        "web-ort1.22.0-wasmmt-op17-dynamo": "web",
        "web-ort1.22.0-webgpu-op17-dynamo": "web",
    }
    out = cijobs.github_outputs(plan)
    assert (out["container-targets"], out["web-targets"], out["node-targets"]) == ("1", "3", "0")
    cells = json.loads(out["matrix-web"])["include"]
    assert {c["package"] for c in cells} == {"onnxruntime-web"} and all(
        c["runs-on"] == ["ubuntu-latest"] for c in cells
    )
    assert "web-ort" not in out["matrix"] + out["matrix-runner"]


def _browser(where: Path, name: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / name).write_text("#!/bin/sh\n")
    (where / name).chmod(0o755)
    return where / name


def test_the_browser_is_the_given_one_else_the_first_found_on_path_or_in_usr_bin(tmp_path: Path) -> None:
    usual, path, empty = tmp_path / "usr-bin", tmp_path / "bin", tmp_path / "empty"
    empty.mkdir()
    chromium = _browser(path, "chromium")
    assert web.chromium({"PATH": str(path)}, usual=empty) == str(chromium)
    assert web.chromium({"PATH": "", web.CHROMIUM_ENV: str(chromium)}, usual=empty) == str(chromium)
    chrome = _browser(path, "google-chrome-stable")  # Chrome before Chromium, as on GitHub's images
    assert web.chromium({"PATH": str(path)}, usual=empty) == str(chrome)
    # not on PATH: the usual folder, in the same order
    _browser(usual, "chromium-browser")
    assert web.chromium({"PATH": str(empty)}, usual=usual) == str(usual / "chromium-browser")
    assert web.chromium({}, usual=usual) == str(usual / "chromium-browser")  # no PATH at all
    _browser(usual, "google-chrome")
    assert web.chromium({"PATH": str(empty)}, usual=usual) == str(usual / "google-chrome")
    assert web.chromium({"PATH": str(path)}, usual=usual) == str(chrome)  # PATH first
    (usual / "google-chrome").chmod(0o644)  # not executable: not a browser
    assert web.chromium({"PATH": str(empty)}, usual=usual) == str(usual / "chromium-browser")


def test_no_browser_is_one_line_that_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentProblem) as err:
        web.chromium({"PATH": str(tmp_path)}, usual=tmp_path)
    assert "\n" not in err.value.message
    assert "scripts/setup-web" in err.value.message and web.CHROMIUM_ENV in err.value.message
    assert all(name in err.value.message for name in web.CHROMIUM_NAMES)
    chromium = _browser(tmp_path / "bin", "chromium")  # a set variable is taken at its word
    with pytest.raises(EnvironmentProblem, match="ONNX_GATE_CHROMIUM=/nowhere: no executable there"):
        web.chromium({"PATH": str(chromium.parent), web.CHROMIUM_ENV: "/nowhere"})


def _fake_tools(tmp_path: Path, npm_body: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in {"chromium": "", "node": "", "npm": npm_body}.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin"}


def test_a_release_npm_does_not_have_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    environ = _fake_tools(tmp_path, "echo 'npm error code ETARGET' >&2; exit 1")
    how = base.Provisioning(tmp_path / "cache", environ)
    with pytest.raises(EnvironmentProblem) as err:
        base.provision(Target("1.19.9", "wasm", 17, "dynamo", runner="web"), how)
    assert err.value.message == (
        "web runner: onnxruntime-web@1.19.9: onnxruntime-web has no release 1.19.9 on the npm registry; "
        "pick a released version (`npm view onnxruntime-web versions`)"
    )
    assert not web.install_dir(tmp_path / "cache", "onnxruntime-web", "1.19.9").exists()


def test_one_install_per_release_with_the_pinned_playwright(tmp_path: Path) -> None:
    log = tmp_path / "npm.log"
    script = (
        f'echo "$@" >> {log}; prefix=$3; mkdir -p $prefix/node_modules/onnxruntime-web; '
        'echo \'{"version": "1.22.0"}\' > $prefix/node_modules/onnxruntime-web/package.json'
    )
    how = base.Provisioning(tmp_path / "cache", _fake_tools(tmp_path, script))
    t = Target("1.22.0", "webgpu", 17, "dynamo", runner="web")
    first = base.provision(t, how)
    again = base.provision(Target("1.22.0", "wasm", 18, "torchscript", runner="web"), how)
    assert first == again and first.package == "onnxruntime-web"
    calls = log.read_text().splitlines()
    assert len(calls) == 1 and f"playwright-core@{web.PLAYWRIGHT_CORE}" in calls[0].split()
    assert "onnxruntime-web@1.22.0" in calls[0].split() and "--ignore-scripts" in calls[0].split()


def _obs(tmp_path: Path, requested: str, log: str | None) -> Observation:
    obs = Observation(
        SCHEMA_VERSION, "web-ort1.22.0-webgpu-op17-dynamo", None, providers_requested=(requested,)
    )
    (tmp_path / "observation.json").write_text(dumps(obs))
    if log is not None:
        (tmp_path / "verbose.log").write_text(log)
    return web.RUNNER.collect(tmp_path)


LOG = (
    "2026-12-01 13:45:44.70 [V:onnxruntime:, session_state.cc:1263 VerifyEachNodeIsAssignedToAnEp] "
    " Node(s) placed on [JsExecutionProvider]. Number of nodes: 2\n"
    "2026-12-01 13:45:44.70 [V:onnxruntime:, session_state.cc:1263 VerifyEachNodeIsAssignedToAnEp]   Conv (c1)\n"
    "2026-12-01 13:45:44.70 [V:onnxruntime:, session_state.cc:1263 VerifyEachNodeIsAssignedToAnEp]   Relu (r1)\n"
    "2026-12-01 13:45:44.70 [V:onnxruntime:, session_state.cc:1263 VerifyEachNodeIsAssignedToAnEp] "
    " Node(s) placed on [CPUExecutionProvider]. Number of nodes: 1\n"
    "2026-12-01 13:45:44.70 [V:onnxruntime:, session_state.cc:1263 VerifyEachNodeIsAssignedToAnEp]   Shape (s1)\n"
)


def test_placement_comes_from_the_consoles_verbose_log(tmp_path: Path) -> None:
    obs = _obs(tmp_path, "WebGpuExecutionProvider", LOG)
    assert obs.placement is not None and obs.placement.source == "verbose-log"
    assert obs.placement.nodes_by_provider == {"CPUExecutionProvider": 1, "JsExecutionProvider": 2}
    assert [(n.name, n.op_type) for n in obs.placement.fallback_nodes] == [("s1", "Shape")]
    assert base.read_observation(tmp_path).placement == obs.placement  # written back for the judge


def test_the_page_marks_where_its_runs_begin_on_the_console() -> None:
    """The line the verbose log is split at (bench_web, the e2e tests) is the one the page logs."""
    page = (web.DRIVER.parent / "page.mjs").read_text()
    assert f"const RUNS_BEGIN = '{web.RUNS_BEGIN}';" in page and "console.log(RUNS_BEGIN);" in page
    hook = (HOOKS / "page_hook.mjs").read_text()  # the tests' hook hangs or throws a page there
    assert f"const RUNS_BEGIN = '{web.RUNS_BEGIN}';" in hook


@pytest.mark.parametrize("log", [None, "a console with no placements\n"])
def test_a_console_without_placements_is_a_placement_error(tmp_path: Path, log: str | None) -> None:
    obs = _obs(tmp_path, "CPUExecutionProvider", log)
    assert obs.placement is None and obs.placement_error == "the browser's console held no node placements"


def test_the_sweep_kills_the_browser_of_a_profile_and_its_group(tmp_path: Path) -> None:
    profile = tmp_path / "profile"
    other = tmp_path / "other"
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    leader = subprocess.Popen(
        [sys.executable, "-c", code, f"--user-data-dir={profile}"], start_new_session=True
    )
    bystander = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", f"--user-data-dir={other}"]
    )
    try:
        deadline = time.monotonic() + 10
        while len(_group(leader.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert web.browser_pids(profile) == [leader.pid]
        assert web.sweep(profile) == 1
        assert leader.wait(10) < 0
        # the grandchild took the same SIGKILL; the kernel may list it a moment longer while it dies
        deadline = time.monotonic() + 10
        while _group(leader.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _group(leader.pid) == []
        assert bystander.poll() is None  # another cell's browser is left alone
    finally:
        bystander.kill()
        bystander.wait()


def _group(pgid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                pids.append(int(entry.name))
    return pids


def test_the_profile_is_fresh_and_removed(tmp_path: Path) -> None:
    with web.fresh_profile() as profile:
        assert profile.is_dir() and not any(profile.iterdir())
    assert not profile.exists()


@pytest.mark.skipif(shutil.which("node") is None, reason="the driver's flags are read by Node.js")
def test_the_browser_flags_are_the_ones_the_target_needs() -> None:
    script = f"import {{ flags }} from {json.dumps(str(web.DRIVER))}; console.log(JSON.stringify([flags('wasm'), flags('webgpu')]))"
    done = proc.run(["node", "--input-type=module", "-e", script], timeout=60, env=os.environ)
    assert done.ok, done.stderr
    wasm, webgpu = json.loads(done.stdout)
    common = ["--headless", "--no-sandbox", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--no-first-run"]  # fmt: skip
    assert set(common) <= set(wasm) and set(common) <= set(webgpu)
    assert "--disable-gpu" in wasm and "--disable-gpu" not in webgpu
    assert {"--enable-unsafe-webgpu", "--use-webgpu-adapter=swiftshader", "--use-vulkan=swiftshader"} <= set(
        webgpu
    )
    assert not any(f.startswith("--user-data-dir") for f in wasm + webgpu)  # the driver's fresh one only


def test_the_node_runners_webgpu_finds_swiftshader_where_chromium_ships_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ci_onnx.runners import node

    lib = tmp_path / "chromium"
    monkeypatch.setattr(node, "CHROMIUM_LIB_DIRS", (tmp_path / "absent", lib))
    assert node.swiftshader({}) == {}
    lib.mkdir()
    (lib / node.SWIFTSHADER_ICD).write_text("{}")
    got = node.swiftshader({"LD_LIBRARY_PATH": "/opt/x"})
    assert got == {"LD_LIBRARY_PATH": f"{lib}:/opt/x", "VK_ICD_FILENAMES": str(lib / node.SWIFTSHADER_ICD)}
    assert proc.child_environment(got) == got  # both reach the runner's process
    assert "webgpu" in matrix.runners()["node"].providers


def test_a_group_is_one_driver_per_flag_set_and_each_cell_keeps_its_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ci_onnx.runners import batch

    (tmp_path / "b").mkdir()
    monkeypatch.setattr(web, "chromium", lambda environ: "/usr/bin/chromium")
    monkeypatch.setattr(web, "served_sizes", lambda bundle: [1, 8])
    calls: list[tuple[tuple[str, ...], list[batch.Job]]] = []
    swept: list[Path] = []
    real_sweep = web.sweep
    monkeypatch.setattr(web, "sweep", lambda profile: swept.append(profile) or real_sweep(profile))

    def run_jobs(program, jobs, *, workdir, env, on_done, what):  # type: ignore[no-untyped-def]
        calls.append((tuple(program), list(jobs)))
        assert workdir.is_dir() and program[-2:] == ("--profile-root", str(workdir))
        done = []
        for j, job in enumerate(jobs):
            hung = "wasm-" in job.label and "wasmmt" not in job.label
            one = proc.Completed(tuple(program), -9 if hung else 0, "", job.label, 1.0, hung)
            on_done(j, one)
            done.append(one)
        return done

    monkeypatch.setattr(batch, "run_jobs", run_jobs)
    providers = ["webgpu", "wasm", "wasmmt"]
    launches = [
        base.Launch(tmp_path / "b", Target("1.22.0", p, 17, "dynamo", runner="web"), tmp_path / p,
                    VerifyOptions(timeout_s=30.0 + i), "x")
        for i, p in enumerate(providers)
    ]  # fmt: skip
    heard: list[int] = []
    got = web.RUNNER.launch_many(_env(tmp_path), launches, base_env={}, on_done=lambda i, d: heard.append(i))
    assert [d.stderr for d in got] == [f"{x.target.id} runner" for x in launches]  # back in order
    assert sorted(heard) == [0, 1, 2] and got[1].timed_out
    assert [[job.label.split("-")[2] for job in jobs] for _, jobs in calls] == [
        ["webgpu"],
        ["wasm", "wasmmt"],
    ]
    assert [job.timeout_s for _, jobs in calls for job in jobs] == [30.0, 31.0, 32.0]  # each cell's own
    wasm_job = dict(zip(calls[1][1][0].argv[::2], calls[1][1][0].argv[1::2], strict=True))
    assert (wasm_job["--out"], wasm_job["--ep"]) == (str((tmp_path / "wasm").resolve()), "wasm")
    assert len(swept) == 3  # the hung cell's browser at once, then each flag set's at the end


def test_a_batch_browser_is_swept_by_the_profile_it_lives_under(tmp_path: Path) -> None:
    root = tmp_path / "root"
    inside = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", f"--user-data-dir={root}/playwright_x"]
    )
    beside = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", f"--user-data-dir={root}2/playwright_x"]
    )
    try:
        # a child's /proc cmdline is its parent's until it has exec'd: wait for both to show theirs
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not all(
            b"--user-data-dir" in Path(f"/proc/{p.pid}/cmdline").read_bytes() for p in (inside, beside)
        ):
            time.sleep(0.01)
        assert web.browser_pids(root) == [inside.pid]
    finally:
        for p in (inside, beside):
            p.kill()
            p.wait()


@pytest.mark.parametrize(("provider", "flags"), [("wasm", "wasm"), ("wasmmt", "wasm"), ("webgpu", "webgpu")])
def test_providers_share_a_browser_where_their_flags_match(provider: str, flags: str) -> None:
    assert web.flag_set(provider) == flags


def test_each_web_bench_writes_only_its_own_section_of_web_md(tmp_path: Path) -> None:
    from bench import bench_web

    md = tmp_path / "WEB.md"
    minilm = f"{bench_web.MINILM_SECTION}\n\none\n"
    bench_web.write_section(md, bench_web.MINILM_SECTION, minilm)  # no file yet: the section alone
    assert md.read_text() == minilm
    bench_web.write_section(md, None, "# overhead\n\nfirst\n")
    assert md.read_text() == f"# overhead\n\nfirst\n\n{minilm}"
    bench_web.write_section(md, bench_web.MINILM_SECTION, f"{bench_web.MINILM_SECTION}\n\ntwo\n")
    assert md.read_text() == f"# overhead\n\nfirst\n\n{bench_web.MINILM_SECTION}\n\ntwo\n"
    bench_web.write_section(md, None, "# overhead\n\nsecond\n")
    assert md.read_text() == f"# overhead\n\nsecond\n\n{bench_web.MINILM_SECTION}\n\ntwo\n"
