"""Extract the GitHub REST operations onnx-gate uses from @octokit/openapi into a small test-data file.

    npm install --prefix /tmp/octokit @octokit/openapi
    python -m tests.fakegithub.vendor_openapi /tmp/octokit/node_modules/@octokit/openapi

writes tests/data/github-openapi-subset.json: per operation, its method, path, parameters, request body
schema and success response schemas, with every $ref resolved and descriptions and examples dropped.
The package is not committed; the subset records its version.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OPERATIONS = (
    "users/get-authenticated",
    "issues/list-comments",
    "issues/create-comment",
    "issues/update-comment",
    "issues/delete-comment",
    "checks/create",
    "checks/update",
    "checks/list-for-ref",
    "repos/create-commit-status",
    # the nightly tracking issue
    "issues/list-for-repo",
    "issues/create",
    "issues/update",
    # the fork-safe pair's trusted job checks the pull request's head before it posts
    "pulls/get",
    # the project's release (scripts/release.py): the moving major and minor tags, the release notes
    "git/get-ref",
    "git/create-ref",
    "git/update-ref",
    "repos/get-release-by-tag",
    "repos/create-release",
    "repos/update-release",
    # a pull request's baseline: the run of its base commit, that run's artifacts, the zip
    "actions/list-workflow-runs-for-repo",
    "actions/list-workflow-run-artifacts",
    "actions/download-artifact",
    # a policy change approved by a label: who applied it, and whether they may write
    "issues/list-events",
    "repos/get-collaborator-permission-level",
    # a fallback baseline must be of a commit on the base branch's history
    "repos/compare-commits",
)
DROP = {"description", "examples", "example", "externalDocs", "x-github", "x-octokit", "summary", "title"}
OUT = Path(__file__).parent.parent / "data" / "github-openapi-subset.json"


def resolve(node: Any, spec: dict[str, Any], stack: tuple[str, ...] = (), names: bool = False) -> Any:
    """``node`` with $refs replaced; ``names``: its keys are property names, kept whatever they are."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            if ref in stack:  # a recursive schema: stop here rather than loop
                return {}
            target: Any = spec
            for part in ref.removeprefix("#/").split("/"):
                target = target[part]
            return resolve(target, spec, (*stack, ref))
        return {
            k: resolve(v, spec, stack, names=k == "properties" and not names)
            for k, v in node.items()
            if names or k not in DROP
        }
    if isinstance(node, list):
        return [resolve(v, spec, stack) for v in node]
    return node


def extract(package_dir: Path) -> dict[str, Any]:
    version = json.loads((package_dir / "package.json").read_text())["version"]
    spec = json.loads((package_dir / "generated" / "api.github.com.json").read_text())
    found: dict[str, Any] = {}
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if not isinstance(op, dict) or op.get("operationId") not in OPERATIONS:
                continue
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            responses = {}
            for status, response in op.get("responses", {}).items():
                response = resolve(response, spec)
                if status.startswith("2"):
                    schema = response.get("content", {}).get("application/json", {}).get("schema")
                    responses[status] = schema
            found[op["operationId"]] = {
                "method": method.upper(),
                "path": path,
                "parameters": resolve(op.get("parameters", []), spec),
                "requestBody": resolve(body, spec) if body else None,
                "requestBodyRequired": bool(op.get("requestBody", {}).get("required")),
                "responses": responses,
            }
    missing = set(OPERATIONS) - set(found)
    if missing:
        raise SystemExit(f"operations not found in the spec: {sorted(missing)}")
    return {
        "source": "npm @octokit/openapi, generated/api.github.com.json",
        "version": version,
        "operations": {k: found[k] for k in OPERATIONS},
    }


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        raise SystemExit(__doc__)
    subset = extract(Path(argv[0]))
    OUT.write_text(json.dumps(subset, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes, @octokit/openapi {subset['version']})")


if __name__ == "__main__":
    main(sys.argv[1:])
