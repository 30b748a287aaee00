"""Tell the pull request: the sticky comment, and a check run (or a commit status where not allowed).

A token that may not write (a pull request from a fork gets a read-only GITHUB_TOKEN) makes nothing
crash: the job summary already holds the report, and the log says how to get comments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import PurePath

from ci_onnx.contracts import escape
from ci_onnx.github.checks import MAX_TITLE, Annotation, CheckRunResult, publish_check_run, publish_status
from ci_onnx.github.client import Ambiguous, Client, Forbidden, GitHubError
from ci_onnx.github.comments import CommentResult, upsert
from ci_onnx.github.context import GitHubContext
from ci_onnx.report import CHECK_NAME, limits
from ci_onnx.report.render import marker, render_within
from ci_onnx.report.view import ReportView

Say = Callable[[str], None]

FORK_HELP = (
    "the token is read-only here (a pull request from a fork gets one), so onnx-gate could not {what}. "
    "The report is in the job summary. For comments on pull requests from forks, upload onnx-gate-out "
    "as an artifact and run `onnx-gate report` in a second workflow triggered by `workflow_run` "
    "(it runs in the base repository with `pull-requests: write` and `checks: write`)."
)


@dataclasses.dataclass(frozen=True)
class Published:
    comment: CommentResult | None = None
    check: CheckRunResult | None = None
    status_posted: bool = False


def annotations_for(view: ReportView, config_path: str) -> list[Annotation]:
    """One failure annotation per blocking target, on the config that declares it.

    GitHub wants a path relative to the repository; an absolute one is reduced to its file name.
    """
    if PurePath(config_path).is_absolute():
        config_path = PurePath(config_path).name
    out = []
    for f in view.failures:
        details = "\n".join(f"{c.name}: {c.message} {c.figures}".rstrip() for c in f.checks)
        out.append(
            Annotation(
                path=config_path,
                message=f.reason,
                title=f"{f.target} {f.outcome}",
                raw_details=(details + "\n" if details else "") + f"reproduce: {f.reproduce}",
            )
        )
    if view.junit:
        for case in view.junit.failing:
            out.append(
                Annotation(
                    path=case.file,
                    message=case.message or case.result,
                    title=case.label,
                    raw_details=case.content or "",
                )
            )
    return out


def publish(
    view: ReportView,
    ctx: GitHubContext,
    client: Client,
    *,
    info: Say,
    warn: Say,
    check_name: str = CHECK_NAME,
    config_path: str = "onnx-gate.yml",
    comment_key: str = "",
) -> Published:
    repo = ctx.repo
    if repo is None:
        return Published()
    comment = None
    if ctx.pr_number is not None:
        mark = marker(comment_key)
        body = render_within(view, limits.COMMENT, marker=mark)
        try:
            comment = upsert(client, repo, ctx.pr_number, body, mark)
            info(f"{comment.action} the report comment: {comment.url}")
            if comment.left_duplicates:
                warn(
                    f"pull request #{ctx.pr_number} holds {comment.left_duplicates} older copy(ies) of the "
                    "report comment that GitHub did not let onnx-gate delete; the next report removes them"
                )
        except Forbidden:
            warn(FORK_HELP.format(what=f"comment on pull request #{ctx.pr_number}"))
        except Ambiguous as exc:
            warn(
                f"the report comment on pull request #{ctx.pr_number} may or may not have been posted "
                f"(GitHub failed to confirm it: {exc.message}); the next report finds it and edits it"
            )
        except GitHubError as exc:
            warn(f"could not comment on pull request #{ctx.pr_number}: {exc.message}")
    else:
        info("no pull request in this event: no comment")
    check, status = None, False
    if ctx.sha:
        summary = render_within(view, limits.CHECK_SUMMARY)
        title = escape.line(("❌ " if view.blocks else "✅ ") + view.headline, MAX_TITLE)
        notes = annotations_for(view, config_path)
        for attempt_notes in (notes, []) if notes else ([],):
            try:
                check = publish_check_run(
                    client,
                    repo,
                    sha=ctx.sha,
                    name=check_name,
                    success=not view.blocks,
                    title=title,
                    summary=summary,
                    annotations=attempt_notes,
                    details_url=ctx.run_url,
                )
                info(f"check run {check_name!r} {check.action}: {check.url}")
                break
            except Forbidden:
                status = _status(view, ctx, client, check_name, info, warn)
                break
            except Ambiguous as exc:
                warn(
                    f"the check run {check_name!r} may or may not have been created (GitHub failed to "
                    f"confirm it: {exc.message}); a re-run of this job finds it and updates it"
                )
                break
            except GitHubError as exc:
                if exc.status == 422 and attempt_notes:  # GitHub refused an annotation: keep the check
                    warn(f"GitHub refused the check run's annotations ({exc.message}); retrying without them")
                    continue
                warn(f"could not create the check run: {exc.message}")
                break
    return Published(comment, check, status)


def _status(view: ReportView, ctx: GitHubContext, client: Client, name: str, info: Say, warn: Say) -> bool:
    repo = ctx.repo
    assert repo is not None
    try:
        publish_status(
            client,
            repo,
            sha=ctx.sha,
            context=name,
            success=not view.blocks,
            description=view.headline,
            target_url=ctx.run_url,
        )
    except Forbidden:
        warn(FORK_HELP.format(what="create a check run or a commit status"))
        return False
    except GitHubError as exc:
        warn(f"could not set the commit status: {exc.message}")
        return False
    info(f"this token may not create check runs; set commit status {name!r} instead")
    return True
