"""A stand-in for the ``docker`` CLI and ghcr.io, for the release workflow under act (tests only).

There is no Docker engine here, and ghcr.io cannot be reached. The stand-in keeps what the release
needs to be judged on, in a state folder ($DOCKER_STANDIN_STATE), and records every call:

- ``build --target STAGE --tag IMAGE --build-arg K=V …``: an image record whose labels are the
  Dockerfile's own LABEL lines of that stage, with its ARG defaults and the build arguments put in
  (so the labels the release gets are the ones the Dockerfile declares); nothing is built.
- ``inspect --format '{{ index .Config.Labels "KEY" }}' IMAGE``: that label.
- ``run … IMAGE python -c CODE``: nothing runs. The torch probe answers from the Dockerfile's text
  (whether the stage installs torch); any other code prints that it was not run.
- ``login`` / ``logout``: a credential in the state folder (never in ~/.docker).
- ``push IMAGE``: refused without a login; else the image is in the registry, private, as a new
  ghcr package is.
- ``pull IMAGE``: the registry's answer. With no login and an empty $DOCKER_CONFIG it succeeds only
  for a package listed in the state's ``public`` file (what "Change visibility → Public" does),
  else it fails with ghcr's "denied".

Stdlib only: it runs with whatever python3 the host has.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

DENIED = 'Error response from daemon: Head "https://ghcr.io/v2/{repo}/manifests/{tag}": denied: denied'


def _state() -> Path:
    return Path(os.environ["DOCKER_STANDIN_STATE"])


def _record(path: Path) -> dict[str, object]:
    return json.loads(path.read_text()) if path.is_file() else {}


def _stage_lines(dockerfile: str, target: str) -> list[str]:
    """The instructions of ``target`` and of the stages it is FROM, base first."""
    text = re.sub(r"\\\n\s*", " ", dockerfile)
    stages: dict[str, tuple[str, list[str]]] = {}
    current = ""
    for line in (ln.strip() for ln in text.splitlines()):
        m = re.match(r"FROM\s+(\S+)\s+AS\s+(\S+)", line, re.I)
        if m:
            current = m.group(2)
            stages[current] = (m.group(1), [])
        elif current and line and not line.startswith("#"):
            stages[current][1].append(line)
    chain: list[str] = []
    name = target
    while name in stages:
        parent, lines = stages[name]
        chain = lines + chain
        name = parent
    return chain


def _labels(dockerfile: str, target: str, args: dict[str, str]) -> dict[str, str]:
    values: dict[str, str] = {}
    labels: dict[str, str] = {}
    for line in _stage_lines(dockerfile, target):
        m = re.match(r"ARG\s+(\w+)(?:=(\S*))?", line)
        if m:
            values[m.group(1)] = args.get(m.group(1), m.group(2) or "")
        if line.startswith("LABEL "):
            for key, value in re.findall(r'(\S+?)="([^"]*)"', line):
                labels[key] = re.sub(r"\$\{(\w+)\}", lambda v: values.get(v.group(1), ""), value)
    return labels


def _split(image: str) -> tuple[str, str]:
    name, _, tag = image.rpartition(":")
    return name, tag


def _logged_in() -> bool:
    return (_state() / "credentials").is_file()


def main(argv: list[str]) -> int:
    state = _state()
    state.mkdir(parents=True, exist_ok=True)
    config = os.environ.get("DOCKER_CONFIG", "")
    with (state / "calls.jsonl").open("a") as fh:
        fh.write(json.dumps({"argv": argv, "docker_config": config, "logged_in": _logged_in()}) + "\n")
    command, rest = argv[0], argv[1:]
    if command == "build":
        args = dict(rest[i + 1].split("=", 1) for i, a in enumerate(rest) if a == "--build-arg")
        target = rest[rest.index("--target") + 1]
        tag = rest[rest.index("--tag") + 1]
        labels = _labels(Path(rest[-1], "Dockerfile").read_text(), target, args)
        torch = any(
            "torch" in line for line in _stage_lines(Path(rest[-1], "Dockerfile").read_text(), target)
        )
        (state / "images").mkdir(exist_ok=True)
        record = {"tag": tag, "target": target, "labels": labels, "torch": torch}
        (state / "images" / f"{tag.replace('/', '_')}.json").write_text(json.dumps(record))
        print(f"docker stand-in: recorded {tag} (stage {target}); nothing was built")
        return 0
    if command in ("inspect", "run"):
        image = next(a for a in rest if re.match(r"[\w.-]+/", a) and ":" in a)
        record = _record(state / "images" / f"{image.replace('/', '_')}.json")
        if not record:
            print(f"Error: No such image: {image}", file=sys.stderr)
            return 1
        if command == "inspect":
            key = re.search(r'Labels "([^"]+)"', " ".join(rest))
            print(record["labels"].get(key.group(1), "") if key else json.dumps(record))  # type: ignore[union-attr]
        elif 'find_spec("torch")' in " ".join(rest):
            print(record["torch"])
        else:
            print(f"docker stand-in: {image} not run (no Docker engine here)")
        return 0
    if command == "login":
        sys.stdin.read()
        (state / "credentials").write_text(rest[rest.index("--username") + 1])
        print("Login Succeeded")
        return 0
    if command == "logout":
        (state / "credentials").unlink(missing_ok=True)
        return 0
    if command == "push":
        if not _logged_in():
            print("denied: requested access to the resource is denied", file=sys.stderr)
            return 1
        record = _record(state / "images" / f"{rest[0].replace('/', '_')}.json")
        if not record:
            print(f"An image does not exist locally with the tag: {rest[0]}", file=sys.stderr)
            return 1
        (state / "registry").mkdir(exist_ok=True)
        (state / "registry" / f"{rest[0].replace('/', '_')}.json").write_text(json.dumps(record))
        print(f"docker stand-in: pushed {rest[0]}")
        return 0
    if command == "pull":
        name, tag = _split(rest[0])
        repo = name.removeprefix("ghcr.io/")
        public = (state / "public").read_text().split() if (state / "public").is_file() else []
        anonymous = not _logged_in() and not (config and (Path(config) / "config.json").is_file())
        pushed = (state / "registry" / f"{rest[0].replace('/', '_')}.json").is_file()
        if pushed and (repo in public or not anonymous):
            print(f"docker stand-in: pulled {rest[0]}")
            return 0
        print(DENIED.format(repo=repo, tag=tag), file=sys.stderr)
        return 1
    print(f"docker stand-in: {command} is not played", file=sys.stderr)
    return 1


def install(bin_dir: Path, state: Path) -> Path:
    """A ``docker`` in ``bin_dir`` (put it first on PATH) that is this stand-in, keeping ``state``."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    state.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "docker"
    script.write_text(
        "#!/bin/sh\n# STAND-IN for docker (tests/act/docker_standin.py): records calls, builds and runs nothing.\n"
        f'DOCKER_STANDIN_STATE="${{DOCKER_STANDIN_STATE:-{state}}}" exec python3 "{Path(__file__).resolve()}" "$@"\n'
    )
    script.chmod(0o755)
    return bin_dir


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
