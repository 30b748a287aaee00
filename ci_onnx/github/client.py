"""A small GitHub REST client: timeouts, retries with backoff on 5xx and rate limits, pagination.

The token goes into the Authorization header and nowhere else: not in errors, logs or ``repr``.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Iterator, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import requests

from ci_onnx.errors import EnvironmentProblem

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


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    backoff_s: float = 1.0
    """First wait after a 5xx or a dropped connection; doubled each attempt."""
    max_wait_s: float = 60.0
    """Longest single wait (a Retry-After or rate-limit reset beyond it is not waited for)."""


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

    def request(
        self, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None
    ) -> Response:
        url = path if path.startswith("http") else f"{self.api_url}{path}"
        what = f"{method} {url.removeprefix(self.api_url).split('?')[0]}"
        for attempt in range(1, self._retry.attempts + 1):
            last = attempt == self._retry.attempts
            try:
                r = self._session.request(method, url, json=json, params=params, timeout=self._timeout)
            except (requests.ConnectionError, requests.Timeout) as exc:
                if last:
                    raise GitHubError(f"GitHub did not answer {what}: {type(exc).__name__}") from None
                self._wait(self._backoff(attempt), f"{what}: {type(exc).__name__}", attempt)
                continue
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
        self, path: str, params: Mapping[str, Any] | None = None, *, max_pages: int = 100
    ) -> Iterator[Any]:
        """Every item of a list endpoint, following Link rel="next" for at most ``max_pages`` pages."""
        url: str | None = path
        query: Mapping[str, Any] | None = {"per_page": 100, **(params or {})}
        for _ in range(max_pages):
            if url is None:
                return
            r = self.request("GET", url, params=query)
            yield from r.data or []
            m = _NEXT.search(r.headers.get("Link", ""))
            url, query = (m.group(1), None) if m else (None, None)
        self._log(f"stopped after {max_pages} pages of {path}")

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
