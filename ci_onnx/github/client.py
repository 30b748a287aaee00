"""A small GitHub REST client: timeouts, retries with backoff on 5xx and rate limits, pagination.

The token goes into the Authorization header and nowhere else: not in errors, logs or ``repr`` (every
message that leaves this module passes :meth:`Client.redact`). A POST is not idempotent: when one fails
in a way that leaves unknown whether GitHub acted on it (a 5xx, a timeout, a reset), the client does
not retry it but raises :class:`Ambiguous`, so the caller can look before it posts again.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Iterator, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import requests

from ci_onnx.contracts.errors import EnvironmentProblem

Log = Callable[[str], None]
API_VERSION = "2022-11-28"
_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')
SECONDARY_RATE_LIMIT_WAIT_S = 60.0


class GitHubError(EnvironmentProblem):
    """GitHub refused or failed a request; the message names the request and GitHub's answer."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class Forbidden(GitHubError):
    """401/403 that is not a rate limit: the token may not do this (a fork's read-only token)."""


class NotFound(GitHubError):
    pass


class RateLimited(GitHubError):
    """The rate limit resets later than we are willing to wait."""


class Ambiguous(GitHubError):
    """A POST failed after it may have reached GitHub: look for what it would have created."""


class BadToken(GitHubError):
    """The token cannot be sent at all (characters no token has); it is not shown."""


RETRYABLE_POST = re.compile(r"/repos/[^/]+/[^/]+/statuses/[^/?]+$")
"""POSTs that are idempotent (the latest commit status of a context wins): retried as any request.
Matched on the whole path, so a repository named ``statuses`` does not make its check runs retried."""


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    backoff_s: float = 1.0
    """First wait after a 5xx or a dropped connection; doubled each attempt."""
    max_wait_s: float = 60.0
    """Longest single wait (a Retry-After or rate-limit reset beyond it is not waited for)."""
    total_s: float = 180.0
    """No retry starts once this long has passed since the first attempt (slow replies add up)."""
    budget_s: float = 600.0
    """All the requests of one client together: past this, a request fails at once, so a GitHub that
    answers every request slowly cannot hold a report job for an hour."""


@dataclasses.dataclass(frozen=True)
class Response:
    status: int
    data: Any
    headers: Mapping[str, str]


class Client:
    def __init__(
        self,
        token: str,
        api_url: str = "https://api.github.com",
        *,
        timeout: tuple[float, float] = (10.0, 30.0),
        retry: RetryPolicy = RetryPolicy(),
        sleep: Callable[[float], None] = time.sleep,
        log: Log = lambda _msg: None,
        session: requests.Session | None = None,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self._timeout = timeout
        self._retry = retry
        self._sleep = sleep
        self._log = log
        self._session = session or requests.Session()
        self._started = time.monotonic()
        token = token.strip()
        self._token = token
        if token and not _sendable(token):
            raise BadToken(
                "the GitHub token holds characters no token has (a space, a control character, or one "
                "outside latin-1); check how the secret was pasted"
            )
        self._session.headers.update(
            {
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
                "User-Agent": "onnx-gate",
            }
        )
        if token:
            self._session.headers["Authorization"] = f"Bearer {token}"

    def __repr__(self) -> str:
        return f"Client({self.api_url!r}, token=***)"

    def redact(self, text: str) -> str:
        return text.replace(self._token, "***") if len(self._token) >= 8 else text

    def request(
        self, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None
    ) -> Response:
        try:
            return self._request(method, path, json=json, params=params)
        except GitHubError as exc:
            exc.message = self.redact(exc.message)
            exc.args = (exc.message,)
            raise

    def _request(self, method: str, path: str, *, json: Any, params: Mapping[str, Any] | None) -> Response:
        url = path if path.startswith("http") else f"{self.api_url}{path}"
        what = f"{method} {url.removeprefix(self.api_url).split('?')[0]}"
        if time.monotonic() - self._started > self._retry.budget_s:
            raise GitHubError(
                f"not sending {what}: GitHub has been too slow "
                f"({self._retry.budget_s:.0f} s spent on this report already)"
            )
        once = method == "POST" and not RETRYABLE_POST.search(url.split("?")[0])
        start = time.monotonic()
        for attempt in range(1, self._retry.attempts + 1):
            last = attempt == self._retry.attempts or time.monotonic() - start > self._retry.total_s
            try:
                r = self._session.request(method, url, json=json, params=params, timeout=self._timeout)
            except (requests.ConnectionError, requests.Timeout) as exc:
                if once:
                    raise Ambiguous(f"GitHub did not answer {what} ({type(exc).__name__})") from None
                if last:
                    raise GitHubError(f"GitHub did not answer {what}: {type(exc).__name__}") from None
                self._wait(self._backoff(attempt), f"{what}: {type(exc).__name__}", attempt)
                continue
            except (requests.RequestException, ValueError, UnicodeError) as exc:
                # InvalidHeader and friends quote the header, token and all: say only what kind it was
                raise GitHubError(f"could not send {what} ({type(exc).__name__})") from None
            if once and r.status_code >= 500:
                raise Ambiguous(f"GitHub answered {r.status_code} to {what}", r.status_code)
            wait = self._retry_wait(r, attempt)
            if wait is None:
                return self._result(r, what)
            if last:
                if r.status_code in (403, 429):
                    raise RateLimited(
                        f"GitHub still rate-limits {what} after {attempt} attempts", r.status_code
                    )
                return self._result(r, what)
            self._wait(wait, f"{what}: GitHub answered {r.status_code}", attempt)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def paginate(
        self, path: str, params: Mapping[str, Any] | None = None, *, max_pages: int = 100, key: str = ""
    ) -> Iterator[Any]:
        """Every item of a list endpoint, following Link rel="next" for at most ``max_pages`` pages;
        ``key``: the endpoint wraps its list in an object (``{"workflow_runs": [...]}``)."""
        url: str | None = path
        query: Mapping[str, Any] | None = {"per_page": 100, **(params or {})}
        for _ in range(max_pages):
            if url is None:
                return
            r = self.request("GET", url, params=query)
            data = (r.data.get(key) if isinstance(r.data, dict) else None) if key else r.data
            yield from data or []
            m = _NEXT.search(r.headers.get("Link", ""))
            url, query = (m.group(1), None) if m else (None, None)
        self._log(f"stopped after {max_pages} pages of {path}")

    def pause(self, attempt: int, why: str) -> None:
        """Wait as before retry number ``attempt`` (the policy's backoff, logged)."""
        self._wait(self._backoff(attempt), why, attempt)

    def download(self, path: str, *, max_bytes: int) -> bytes:
        """The body of ``path`` after GitHub's redirect (an artifact's zip). The token goes to GitHub
        only: requests drops the Authorization header when a redirect leaves the API's host, as it
        must for the storage the redirect points to. Larger than ``max_bytes``: a GitHubError."""
        url = path if path.startswith("http") else f"{self.api_url}{path}"
        what = f"GET {url.removeprefix(self.api_url).split('?')[0]}"
        try:
            with self._session.get(url, timeout=self._timeout, stream=True, allow_redirects=True) as r:
                if r.status_code >= 400:
                    kind = {401: Forbidden, 403: Forbidden, 404: NotFound}.get(r.status_code, GitHubError)
                    raise kind(self.redact(f"GitHub answered {r.status_code} to {what}"), r.status_code)
                chunks: list[bytes] = []
                size = 0
                for chunk in r.iter_content(1 << 16):
                    size += len(chunk)
                    if size > max_bytes:
                        raise GitHubError(f"{what}: larger than {max_bytes >> 20} MiB; not read")
                    chunks.append(chunk)
        except (requests.RequestException, ValueError, UnicodeError) as exc:
            raise GitHubError(f"could not download {what} ({type(exc).__name__})") from None
        return b"".join(chunks)

    def _backoff(self, attempt: int) -> float:
        return min(self._retry.backoff_s * 2 ** (attempt - 1), self._retry.max_wait_s)

    def _retry_wait(self, r: requests.Response, attempt: int) -> float | None:
        """Seconds to wait before retrying ``r``, or None when it is final."""
        if r.status_code >= 500:
            return self._backoff(attempt)
        if r.status_code not in (403, 429):
            return None
        after = _retry_after(r.headers.get("Retry-After"))
        if after is None and r.headers.get("x-ratelimit-remaining") == "0":
            reset = r.headers.get("x-ratelimit-reset", "")
            after = max(0.0, float(reset) - time.time()) if reset.isdigit() else self._backoff(attempt)
        if after is None and "rate limit" in _message(r).lower():
            after = SECONDARY_RATE_LIMIT_WAIT_S  # GitHub's advice when a secondary limit names no time
        if after is None:
            return None  # a plain 403: not allowed, retrying will not help
        if after > self._retry.max_wait_s:
            raise RateLimited(
                f"GitHub's rate limit for this token resets in {after:.0f} s, longer than onnx-gate "
                f"waits ({self._retry.max_wait_s:.0f} s)",
                r.status_code,
            )
        return after

    def _wait(self, seconds: float, why: str, attempt: int) -> None:
        self._log(f"{why}; retrying in {seconds:.1f} s (attempt {attempt + 1} of {self._retry.attempts})")
        self._sleep(seconds)

    def _result(self, r: requests.Response, what: str) -> Response:
        try:
            data = r.json() if r.content else None
        except ValueError:
            data = None
            if r.status_code < 400:
                kind = r.headers.get("Content-Type", "no content type").split(";")[0]
                raise GitHubError(
                    f"GitHub answered {r.status_code} to {what} with a body that is not JSON ({kind}); "
                    "a proxy or an outage page in the way?",
                    r.status_code,
                ) from None
        if r.status_code < 400:
            return Response(r.status_code, data, r.headers)
        message = data.get("message", "") if isinstance(data, dict) else ""
        details = data.get("errors") if isinstance(data, dict) else None
        text = f"GitHub answered {r.status_code} to {what}: {message or r.reason}"
        if details:
            text += f" ({details})"
        if r.status_code in (401, 403):
            raise Forbidden(text, r.status_code)
        if r.status_code == 404:
            raise NotFound(text, r.status_code)
        raise GitHubError(text, r.status_code)


def _sendable(token: str) -> bool:
    """What a GitHub token is made of: printable ASCII, no whitespace inside."""
    return all(33 <= ord(c) <= 126 for c in token)


def _message(r: requests.Response) -> str:
    try:
        data = r.json()
    except ValueError:
        return ""
    return str(data.get("message", "")) if isinstance(data, dict) else ""


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    if value.strip().isdigit():
        return float(value.strip())
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None
