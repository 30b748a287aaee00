"""A local stand-in for the GitHub REST API, for tests.

Every request must match an operation of the vendored OpenAPI subset (method and path), carry the
token, and send a body valid against that operation's request schema; every answer is shaped by and
checked against the operation's response schema. Anything off is recorded in ``violations`` (tests
assert it stays empty) and answered 400. It plays pagination (Link headers), scripted faults (a 500,
a rate-limit 403 with Retry-After, a 422), a read-only token, and a barrier that makes two reporters
race. It binds 127.0.0.1 on an ephemeral port, serves from a thread, and stops by itself.
"""

from __future__ import annotations

import dataclasses
import io
import json
import re
import socket
import threading
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from tests.fakegithub import spec

TOKEN = "ghs_fake0123456789abcdefTOKEN"
ACTIONS_BOT = "github-actions[bot]"
BLOBS = "/_blobs/"
"""Where artifact zips are served: on ``localhost`` rather than the API's 127.0.0.1, so a download
that follows GitHub's redirect goes to another host, as it does to GitHub's storage."""


@dataclasses.dataclass
class Fault:
    """Answer the next ``times`` requests matching ``method`` and ``path`` (a regex) with this.

    ``after``: GitHub acts on the request first, then the answer is lost (a 502 from a proxy: the
    ambiguous failure). ``delay_s``: answer this late (slow replies, client timeouts). ``html``: send this
    body as text/html instead of JSON. ``reset``: close the connection without an answer."""

    method: str
    path: str
    status: int
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    body: dict[str, Any] = dataclasses.field(default_factory=dict)
    times: int = 1
    after: bool = False
    delay_s: float = 0.0
    html: str = ""
    reset: bool = False


@dataclasses.dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    operation: str
    status: int = 0


class State:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.next_id = 1000
        self.comments: dict[int, dict[str, Any]] = {}
        self.check_runs: dict[int, dict[str, Any]] = {}
        self.annotations: dict[int, list[dict[str, Any]]] = {}
        self.statuses: list[dict[str, Any]] = []
        self.issues: dict[int, dict[str, Any]] = {}
        self.pulls: set[int] = set()
        self.pull_heads: dict[int, str] = {}
        """Pull request number → head commit, for pulls/get (the fork-safe pair checks it)."""
        """Issue numbers that are pull requests (the issues API lists those too)."""
        self.faults: list[Fault] = []
        self.requests: list[Recorded] = []
        self.violations: list[str] = []
        self.login = ACTIONS_BOT
        self.user_endpoint_allowed = False  # GITHUB_TOKEN is an installation token: GET /user is 403
        self.read_only = False
        self.checks_forbidden = False
        self.refs: dict[str, str] = {}
        """Git refs (``tags/v1``) → commit, for the release's moving tags."""
        self.releases: dict[int, dict[str, Any]] = {}
        self.list_lag = 0
        """How many listings of a commit's check runs miss a run just created (GitHub's lists are read
        from replicas: a new run can show up a moment late)."""
        self.unlisted: dict[int, int] = {}
        self.list_barrier: threading.Barrier | None = None
        self.barrier_uses = 0
        self.workflow_runs: list[dict[str, Any]] = []
        """Workflow runs, newest last: id, head_sha, head_branch, event, conclusion, head_repo."""
        self.artifacts: dict[int, list[dict[str, Any]]] = {}
        """Run id → its artifacts (id, name, expired)."""
        self.blobs: dict[int, bytes] = {}
        """Artifact id → its zip, served from the storage host a download redirects to."""
        self.actions_forbidden = False
        """The token has no ``actions: read``."""
        self.history: dict[str, list[str]] = {}
        """Branch → the commits on its history, oldest first (repos/compare-commits)."""
        self.pull_bases: dict[int, tuple[str, str]] = {}
        """Pull request number → its base (commit, branch), for pulls/get."""
        self.pull_authors: dict[int, str] = {}
        """Pull request number → its author's login (pulls/get's ``user``)."""
        self.issue_events: dict[int, list[dict[str, Any]]] = {}
        """Issue or pull request number → its events, oldest first: ``{"event": "labeled", "label":
        "name", "actor": "login"}``."""
        self.permissions: dict[str, str] = {}
        """Login → its permission on the repository (admin, write, read, none)."""

    def label(self, number: int, name: str, actor: str, *, removed: bool = False) -> None:
        with self.lock:
            self.next_id += 1
            self.issue_events.setdefault(number, []).append(
                {
                    "id": self.next_id,
                    "event": "unlabeled" if removed else "labeled",
                    "label": name,
                    "actor": actor,
                }
            )

    def add_run(
        self,
        head_sha: str,
        *,
        branch: str = "main",
        event: str = "push",
        conclusion: str = "success",
        head_repo: str = "acme/digits",
        artifacts: dict[str, bytes] | None = None,
        on_branch: bool = True,
    ) -> int:
        """A completed workflow run and the artifacts it uploaded (name → zip); ``on_branch``: its
        commit is on ``branch``'s history (a tag named like the branch gives a run that is not)."""
        rid = self.new_id()
        if on_branch and event == "push":
            self.history.setdefault(branch, []).append(head_sha)
        self.workflow_runs.append(
            {"id": rid, "head_sha": head_sha, "head_branch": branch, "event": event,
             "conclusion": conclusion, "head_repo": head_repo}
        )  # fmt: skip
        self.artifacts[rid] = []
        for name, data in (artifacts or {}).items():
            aid = self.new_id()
            self.artifacts[rid].append({"id": aid, "name": name, "expired": False, "size": len(data)})
            self.blobs[aid] = data
        return rid

    def new_id(self) -> int:
        with self.lock:
            self.next_id += 1
            return self.next_id

    def add_comment(self, issue: int, body: str, login: str) -> dict[str, Any]:
        cid = self.new_id()
        c = {
            "id": cid,
            "issue": issue,
            "body": body,
            "login": login,
            "created_at": f"2026-11-29T21:{cid % 60:02d}:00Z",
        }
        self.comments[cid] = c
        return c


def _user(login: str) -> dict[str, Any]:
    schema = spec.match("GET", "/repos/o/r/issues/1/comments")
    assert schema is not None
    user_schema = schema.responses["200"]["items"]["properties"]["user"]
    return spec.example(
        user_schema["anyOf"][0] if "anyOf" in user_schema else user_schema, {"login": login, "type": "Bot"}
    )


class Handler(BaseHTTPRequestHandler):
    server: FakeGitHub

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _send(self, status: int, data: Any = None, headers: dict[str, str] | None = None) -> None:
        payload = b"" if data is None else json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    def _send_raw(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _blob(self) -> None:
        """The artifact storage a download redirects to (another host): it must get no token."""
        state = self.server.state
        if self.headers.get("Authorization"):
            state.violations.append(f"GET {self.path}: the GitHub token was sent to the artifact storage")
        data = state.blobs.get(int(self.path.rsplit("/", 1)[-1].removesuffix(".zip") or 0))
        if data is None:
            return self._send(404, {"message": "no such blob"})
        return self._send_raw(200, data, "application/zip")

    def _handle(self, method: str) -> None:
        state = self.server.state
        if method == "GET" and self.path.startswith(BLOBS):
            return self._blob()
        url = urlsplit(self.path)
        query = dict(parse_qsl(url.query))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = "<not JSON>"
        op = spec.match(method, url.path)
        rec = Recorded(method, url.path, query, body, op.id if op else "")
        with state.lock:
            state.requests.append(rec)
        if op is None:
            state.violations.append(f"{method} {url.path}: no such operation in the OpenAPI subset")
            rec.status = 404
            return self._send(404, {"message": "Not Found (fake: no such operation)"})
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            rec.status = 401
            return self._send(401, {"message": "Bad credentials"})
        problems = op.check_request(query, body)
        if problems:
            state.violations.extend(f"{method} {url.path}: {p}" for p in problems)
            rec.status = 400
            return self._send(
                400, {"message": "fake: request does not match the OpenAPI description", "errors": problems}
            )
        with state.lock:
            fault = next(
                (f for f in state.faults if f.method == method and re.search(f.path, url.path)), None
            )
            if fault:
                fault.times -= 1
                if fault.times <= 0:
                    state.faults.remove(fault)
        if fault and fault.after:
            self.server.route(op.id, url.path, query, body)  # GitHub did it; the answer is lost
        if fault:
            rec.status = fault.status
            if fault.delay_s:
                time.sleep(fault.delay_s)
            if fault.reset:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return None
            if fault.html:
                return self._send_raw(fault.status, fault.html.encode(), "text/html; charset=utf-8")
            if fault.status < 300 and fault.after:
                return self._send(fault.status, None, fault.headers)
            return self._send(
                fault.status, fault.body or {"message": f"fake fault {fault.status}"}, fault.headers
            )
        status, data, headers = self.server.route(op.id, url.path, query, body)
        rec.status = status
        if status < 300:
            state.violations.extend(
                f"{method} {url.path} → {status}: {p}" for p in op.check_response(status, data)
            )
        self._send(status, data, headers)


class FakeGitHub(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: str = "acme", repo: str = "digits") -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.state = State()
        self.repo = f"{owner}/{repo}"

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    # --- routing -------------------------------------------------------------------------------

    def route(self, op: str, path: str, query: dict[str, str], body: Any) -> tuple[int, Any, dict[str, str]]:
        s = self.state
        parts = path.strip("/").split("/")
        forbidden: tuple[int, Any, dict[str, str]] = (
            403,
            {"message": "Resource not accessible by integration"},
            {},
        )
        if op == "users/get-authenticated":
            if not s.user_endpoint_allowed:
                return forbidden
            return 200, spec.example(self._schema(op, "200"), {"login": s.login}), {}
        if op.startswith("actions/"):
            return forbidden if s.actions_forbidden else self._actions(op, parts, query)
        reads = ("issues/list-comments", "issues/list-for-repo", "pulls/get", "issues/list-events",
                 "repos/get-collaborator-permission-level")  # fmt: skip
        if s.read_only and op not in reads:
            return forbidden
        if op == "pulls/get":
            number = int(parts[4])
            if number not in s.pull_heads:
                return 404, {"message": "Not Found"}, {}
            pull = spec.example(self._schema(op, "200"), {"number": number, "state": "open"})
            pull["head"]["sha"] = s.pull_heads[number]
            pull["user"]["login"] = s.pull_authors.get(number, "author")
            if number in s.pull_bases:
                pull["base"]["sha"], pull["base"]["ref"] = s.pull_bases[number]
            return 200, pull, {}
        if op == "repos/compare-commits":
            return self._compare(parts[4])
        if op == "issues/list-events":
            return self._issue_events(int(parts[4]), query)
        if op == "repos/get-collaborator-permission-level":
            login = parts[4]
            permission = s.permissions.get(login, "read")
            found = spec.example(self._schema(op, "200"), {"permission": permission, "role_name": permission})
            if isinstance(found.get("user"), dict):
                found["user"]["login"] = login
            return 200, found, {}
        if op == "issues/list-comments":
            return self._list_comments(int(parts[4]), query)
        if op.startswith("git/") or (op.startswith("repos/") and "release" in op):
            return self._release(op, path, body)
        if op.startswith("issues/") and "comment" not in op:
            return self._issues(op, parts, query, body)
        with s.lock:
            if op == "issues/create-comment":
                c = s.add_comment(int(parts[4]), body["body"], s.login)
                return 201, self._comment(c), {}
            if op in ("issues/update-comment", "issues/delete-comment"):
                found = s.comments.get(int(parts[5]))
                if found is None:
                    return 404, {"message": "Not Found"}, {}
                if op == "issues/delete-comment":
                    del s.comments[found["id"]]
                    return 204, None, {}
                found["body"] = body["body"]
                return 200, self._comment(found), {}
            if op == "checks/list-for-ref":
                return self._list_check_runs(parts[4], query)
            if op in ("checks/create", "checks/update"):
                if s.checks_forbidden:
                    return forbidden
                return self._check_run(op, parts, body)
            if op == "repos/create-commit-status":
                s.statuses.append({"sha": parts[4], **body})
                return (
                    201,
                    spec.example(
                        self._schema(op, "201"),
                        {"state": body["state"], "context": body.get("context", "default")},
                    ),
                    {},
                )
        return 501, {"message": f"fake: {op} is not played"}, {}

    def _release(self, op: str, path: str, body: Any) -> tuple[int, Any, dict[str, str]]:
        """The moving tags (git refs) and the releases: what scripts/release.py asks."""
        s = self.state
        with s.lock:
            if op in ("git/get-ref", "git/update-ref"):
                ref = (
                    path.split("/git/ref/", 1)[-1] if op == "git/get-ref" else path.split("/git/refs/", 1)[-1]
                )
                if ref not in s.refs:
                    return 422 if op == "git/update-ref" else 404, {"message": "Reference does not exist"}, {}
                if op == "git/update-ref":
                    s.refs[ref] = body["sha"]
                return 200, self._ref(op, ref), {}
            if op == "git/create-ref":
                ref = body["ref"].removeprefix("refs/")
                if ref in s.refs:
                    return 422, {"message": "Reference already exists"}, {}
                s.refs[ref] = body["sha"]
                return 201, self._ref(op, ref), {}
            if op == "repos/get-release-by-tag":
                tag = path.rsplit("/", 1)[-1]
                found = next((r for r in s.releases.values() if r["tag_name"] == tag), None)
                return (
                    (200, self._shaped_release(op, found), {})
                    if found
                    else (404, {"message": "Not Found"}, {})
                )
            if op == "repos/create-release":
                if any(r["tag_name"] == body["tag_name"] for r in s.releases.values()):
                    return 422, {"message": "Validation Failed", "errors": [{"code": "already_exists"}]}, {}
                rid = s.new_id()
                s.releases[rid] = {"id": rid, **body}
                return 201, self._shaped_release(op, s.releases[rid]), {}
            if op == "repos/update-release":
                found = s.releases.get(int(path.rsplit("/", 1)[-1]))
                if found is None:
                    return 404, {"message": "Not Found"}, {}
                found.update(body)
                return 200, self._shaped_release(op, found), {}
        return 501, {"message": f"fake: {op} is not played"}, {}

    def _ref(self, op: str, ref: str) -> dict[str, Any]:
        status = "201" if op == "git/create-ref" else "200"
        sha = self.state.refs[ref]
        return spec.example(
            self._schema(op, status),
            {
                "ref": f"refs/{ref}",
                "url": f"{self.url}/repos/{self.repo}/git/refs/{ref}",
                "object": {
                    "type": "commit",
                    "sha": sha,
                    "url": f"{self.url}/repos/{self.repo}/git/commits/{sha}",
                },
            },
        )

    def _shaped_release(self, op: str, r: dict[str, Any]) -> dict[str, Any]:
        status = "201" if op == "repos/create-release" else "200"
        return spec.example(
            self._schema(op, status),
            {
                "id": r["id"],
                "tag_name": r["tag_name"],
                "name": r.get("name"),
                "body": r.get("body"),
                "draft": bool(r.get("draft", False)),
                "prerelease": bool(r.get("prerelease", False)),
                "html_url": f"https://github.com/{self.repo}/releases/tag/{r['tag_name']}",
                "author": _user(self.state.login),
                "assets": [],
            },
        )

    def _actions(self, op: str, parts: list[str], query: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        s = self.state
        if op == "actions/download-artifact":
            aid = int(parts[5])
            if aid not in s.blobs or parts[6] != "zip":
                return 404, {"message": "Not Found"}, {}
            port = self.server_address[1]
            return 302, None, {"Location": f"http://localhost:{port}{BLOBS}{aid}.zip"}
        if op == "actions/list-workflow-run-artifacts":
            rid = int(parts[5])
            found = [a for a in s.artifacts.get(rid, []) if query.get("name", a["name"]) == a["name"]]
            schema = self._schema(op, "200")["properties"]["artifacts"]["items"]
            shaped = [
                spec.example(
                    schema,
                    {
                        "id": a["id"],
                        "name": a["name"],
                        "size_in_bytes": a["size"],
                        "expired": a["expired"],
                        "archive_download_url": f"{self.url}/repos/{self.repo}/actions/artifacts/{a['id']}/zip",
                    },
                )
                for a in found
            ]
            return 200, {"total_count": len(shaped), "artifacts": shaped}, {}
        runs = [
            r
            for r in reversed(s.workflow_runs)  # newest first, as GitHub lists them
            if query.get("head_sha", r["head_sha"]) == r["head_sha"]
            and query.get("branch", r["head_branch"]) == r["head_branch"]
            and query.get("event", r["event"]) == r["event"]
            and query.get("status", r["conclusion"]) in (r["conclusion"], "completed")
        ]
        schema = self._schema(op, "200")["properties"]["workflow_runs"]["items"]
        repo = spec.example(schema["properties"]["repository"], {"full_name": self.repo})
        shaped = [
            spec.example(
                schema,
                {
                    "id": r["id"],
                    "head_sha": r["head_sha"],
                    "head_branch": r["head_branch"],
                    "event": r["event"],
                    "status": "completed",
                    "conclusion": r["conclusion"],
                    "run_number": r["id"],
                    "html_url": f"https://github.com/{self.repo}/actions/runs/{r['id']}",
                    "repository": repo,
                    "head_repository": spec.example(
                        schema["properties"]["head_repository"], {"full_name": r["head_repo"]}
                    ),
                },
            )
            for r in runs
        ]
        return 200, {"total_count": len(shaped), "workflow_runs": shaped}, {}

    def _schema(self, op: str, status: str) -> Any:
        found = next(o for o in spec.load()[1] if o.id == op)
        return found.responses[status]

    def _comment(self, c: dict[str, Any]) -> dict[str, Any]:
        base = f"{self.url}/repos/{self.repo}"
        return spec.example(
            self._schema("issues/create-comment", "201"),
            {
                "id": c["id"],
                "node_id": f"IC_{c['id']}",
                "body": c["body"],
                "user": _user(c["login"]),
                "url": f"{base}/issues/comments/{c['id']}",
                "html_url": f"https://github.com/{self.repo}/pull/{c['issue']}#issuecomment-{c['id']}",
                "issue_url": f"{base}/issues/{c['issue']}",
                "created_at": c["created_at"],
                "updated_at": c["created_at"],
            },
        )

    def _issue(self, i: dict[str, Any]) -> dict[str, Any]:
        shaped = spec.example(
            self._schema("issues/create", "201"),
            {
                "id": 500_000 + i["number"],
                "number": i["number"],
                "title": i["title"],
                "body": i.get("body"),
                "state": i["state"],
                "labels": [
                    spec.example({"type": "object", "required": ["name"]}, {"name": n}) for n in i["labels"]
                ],
                "user": _user(self.state.login),
                "html_url": f"https://github.com/{self.repo}/issues/{i['number']}",
                "closed_at": None,
                "assignee": None,
                "milestone": None,
            },
        )
        if i["number"] in self.state.pulls:
            shaped["pull_request"] = {"url": None, "html_url": None, "diff_url": None, "patch_url": None}
        return shaped

    def _issues(
        self, op: str, parts: list[str], query: dict[str, str], body: Any
    ) -> tuple[int, Any, dict[str, str]]:
        s = self.state
        with s.lock:
            if op == "issues/create":
                number = len(s.issues) + 1
                labels = [x if isinstance(x, str) else x.get("name", "") for x in body.get("labels", [])]
                s.issues[number] = {
                    "number": number,
                    "title": body["title"],
                    "body": body.get("body"),
                    "state": "open",
                    "labels": labels,
                }
                return 201, self._issue(s.issues[number]), {}
            if op == "issues/update":
                issue = s.issues.get(int(parts[4]))
                if issue is None:
                    return 404, {"message": "Not Found"}, {}
                issue.update({k: v for k, v in body.items() if k in ("title", "body", "state")})
                return 200, self._issue(issue), {}
            state = query.get("state", "open")
            label = query.get("labels", "")
            found = [
                i
                for _, i in sorted(s.issues.items())
                if (state == "all" or i["state"] == state) and (not label or label in i["labels"])
            ]
        chunk, headers = self._page(found, query, f"/repos/{self.repo}/issues")
        return 200, [self._issue(i) for i in chunk], headers

    def _page(self, items: list[Any], query: dict[str, str], path: str) -> tuple[list[Any], dict[str, str]]:
        """One page of ``items`` as ``query`` asks (per_page, page), with the Link to the next one."""
        per_page = min(int(query.get("per_page", 30)), 100)
        page = int(query.get("page", 1))
        headers = {}
        if page * per_page < len(items):
            nxt = urlencode({**query, "per_page": per_page, "page": page + 1})
            headers["Link"] = f'<{self.url}{path}?{nxt}>; rel="next"'
        return items[(page - 1) * per_page : page * per_page], headers

    def _compare(self, basehead: str) -> tuple[int, Any, dict[str, str]]:
        """``BRANCH...SHA``: behind (or identical) where SHA is on BRANCH's history, else diverged."""
        branch, _, sha = basehead.partition("...")
        with self.state.lock:
            history = list(self.state.history.get(branch, []))
        if not history:
            return 404, {"message": "Not Found"}, {}
        if sha == history[-1]:
            status, behind = "identical", 0
        elif sha in history:
            status, behind = "behind", len(history) - 1 - history.index(sha)
        else:
            status, behind = "diverged", len(history)
        found = spec.example(
            self._schema("repos/compare-commits", "200"),
            {"status": status, "ahead_by": 1 if status == "diverged" else 0, "behind_by": behind,
             "total_commits": 0, "commits": []},
        )  # fmt: skip
        return 200, found, {}

    def _issue_events(self, number: int, query: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        with self.state.lock:
            events = list(self.state.issue_events.get(number, []))
        chunk, headers = self._page(events, query, f"/repos/{self.repo}/issues/{number}/events")
        # the description's first variant is the labeled (and unlabeled) issue event
        labeled = self._schema("issues/list-events", "200")["items"]["anyOf"][0]
        shaped = []
        for e in chunk:
            item = spec.example(
                labeled, {"id": e["id"], "event": e["event"], "commit_id": None, "commit_url": None}
            )
            item["actor"]["login"] = e["actor"]
            item["label"]["name"] = e["label"]
            shaped.append(item)
        return 200, shaped, headers

    def _list_comments(self, issue: int, query: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        s = self.state
        barrier = None
        with s.lock:
            if s.list_barrier is not None and s.barrier_uses < s.list_barrier.parties:
                s.barrier_uses += 1
                barrier = s.list_barrier
        if barrier is not None:
            barrier.wait(
                timeout=60
            )  # generous: on a loaded machine the other reporter can take a while to list
        with s.lock:
            items = sorted((c for c in s.comments.values() if c["issue"] == issue), key=lambda c: c["id"])
        per_page = min(int(query.get("per_page", 30)), 100)
        page = int(query.get("page", 1))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers = {}
        if page * per_page < len(items):
            nxt = f"{self.url}/repos/{self.repo}/issues/{issue}/comments?per_page={per_page}&page={page + 1}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        return 200, [self._comment(c) for c in chunk], headers

    def _shaped_run(self, rid: int, op: str, status: str) -> dict[str, Any]:
        s = self.state
        run = s.check_runs[rid]
        schema = self._schema(op, status)
        if op == "checks/list-for-ref":
            schema = schema["properties"]["check_runs"]["items"]
        out_schema = schema["properties"]["output"]
        return spec.example(
            schema,
            {
                "id": rid,
                "name": run["name"],
                "head_sha": run.get("head_sha", "0" * 40),
                "external_id": run.get("external_id"),
                "status": run.get("status", "queued"),
                "conclusion": run.get("conclusion"),
                "html_url": f"https://github.com/{self.repo}/runs/{rid}",
                "output": spec.example(
                    out_schema,
                    {
                        "title": run.get("output", {}).get("title"),
                        "summary": run.get("output", {}).get("summary"),
                        "text": None,
                        "annotations_count": len(s.annotations[rid]),
                    },
                ),
            },
        )

    def _list_check_runs(self, sha: str, query: dict[str, str]) -> tuple[int, Any, dict[str, str]]:
        s = self.state
        if s.checks_forbidden:
            return 403, {"message": "Resource not accessible by integration"}, {}
        ids = [
            rid
            for rid, run in sorted(s.check_runs.items())
            if run.get("head_sha") == sha and query.get("check_name", run["name"]) == run["name"]
        ]
        late = [rid for rid in ids if s.unlisted.get(rid, 0) > 0]
        for rid in late:
            s.unlisted[rid] -= 1
        ids = [rid for rid in ids if rid not in late]
        runs = [self._shaped_run(rid, "checks/list-for-ref", "200") for rid in ids]
        return 200, {"total_count": len(runs), "check_runs": runs}, {}

    def _check_run(self, op: str, parts: list[str], body: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        s = self.state
        if op == "checks/create":
            rid = s.new_id()
            s.check_runs[rid] = dict(body)
            s.annotations[rid] = []
            s.unlisted[rid] = s.list_lag
        else:
            rid = int(parts[4])
            if rid not in s.check_runs:
                return 404, {"message": "Not Found"}, {}
            s.check_runs[rid].update({k: v for k, v in body.items() if k != "output"})
        output = body.get("output", {})
        s.annotations[rid].extend(output.get("annotations", []))
        if output:
            s.check_runs[rid]["output"] = {k: v for k, v in output.items() if k != "annotations"}
        shaped = self._shaped_run(rid, op, "201" if op == "checks/create" else "200")
        return (201 if op == "checks/create" else 200), shaped, {}


def zip_dir(directory: Path) -> bytes:
    """``directory``'s files as the zip GitHub serves for an artifact (paths relative to it)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(directory).as_posix())
    return buf.getvalue()


@contextmanager
def running(lifetime_s: float = 60.0) -> Iterator[FakeGitHub]:
    """A fake GitHub serving in a thread; it shuts down on exit, or after ``lifetime_s`` regardless."""
    server = FakeGitHub()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    watchdog = threading.Timer(lifetime_s, server.shutdown)
    watchdog.daemon = True
    watchdog.start()
    try:
        yield server
    finally:
        watchdog.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
