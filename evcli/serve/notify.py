"""`--notify-url`: post a finished report to a chat webhook, within one deadline for the whole request.

The deadline (`WorkerSpec.notify_timeout_s`, `--notify-timeout`) bounds connect, send and every byte of the
answer together: httpx's own timeouts are per operation, so a peer that sends one byte every few seconds
would hold the worker for as long as it likes. A notification that fails is logged and not retried.

A webhook URL is a credential (chat webhooks carry their token in the path or the query), so a log line
shows it only as `shown_url` makes it: no user or password, every query value masked, and the path cut at
the first segment that is not a plain lowercase word.
"""

from __future__ import annotations

import asyncio
import logging
import re
from itertools import takewhile
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from evcli.serve import failure_reason

if TYPE_CHECKING:
    from evcli.store.db import TraceStore

log = logging.getLogger("evcli.serve")
MASK = "***"
_PLAIN_SEGMENT = re.compile(r"[a-z][a-z_-]{0,23}|")  # `services`, `api`, `hooks`; tokens have digits or capitals
_URL = re.compile(r"https?://[^\s'\"<>]+")


def notify(url: str, store: TraceStore, session_id: str, alertname: str, deadline_s: float, form: str = "md") -> None:
    """Post the Markdown brief report (`text`, as chat incoming webhooks expect) and the session's outcome;
    `form` slack: a Slack message (`text` and Block Kit `blocks` only, as Slack's incoming webhooks take)."""
    import httpx

    from evcli.report import render, slack_message

    try:
        document = store.load(session_id)
    except Exception as exc:  # the store is locked or gone: the report cannot be sent, the worker goes on
        log.warning("notification of session %s skipped: %s", session_id, failure_reason(exc))
        return
    if form == "slack":
        message = slack_message(document)
        body = {"text": message["text"], "blocks": message["blocks"]}
    else:
        body = {
            "text": render(document, "md", brief=True),
            "session_id": session_id,
            "alertname": alertname,
            "verdict": document.run.verdict,
        }
    try:
        asyncio.run(_post(url, body, deadline_s))
    except (httpx.HTTPError, TimeoutError) as exc:
        log.warning("notification of session %s to %s failed: %s", session_id, shown_url(url), _reason(exc, deadline_s))


async def _post(url: str, body: dict[str, Any], deadline_s: float) -> None:
    import httpx

    async with asyncio.timeout(deadline_s), httpx.AsyncClient(timeout=deadline_s) as client:
        (await client.post(url, json=body)).raise_for_status()


def _reason(exc: Exception, deadline_s: float) -> str:
    import httpx

    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return f"no complete answer within {deadline_s:g} s (--notify-timeout)"
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code} {exc.response.reason_phrase}".rstrip()
    text = _URL.sub(lambda match: shown_url(match.group()), str(exc))  # an error may quote the URL
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def shown_url(url: str) -> str:
    """`url` as a log may show it: `https://u:p@hooks.example/services/T0/B1?token=x` -> `https://hooks.example/services/***?token=***`."""
    from evcli.backends.http import split_credentials

    parts = urlsplit(split_credentials(url)[0])
    segments = parts.path.split("/")[1:]
    kept = list(takewhile(_PLAIN_SEGMENT.fullmatch, segments))
    path = "".join(f"/{segment}" for segment in kept) + (f"/{MASK}" if len(kept) < len(segments) else "")
    query = "&".join(f"{key}={MASK}" for key, _ in parse_qsl(parts.query, keep_blank_values=True))
    return urlunsplit((parts.scheme, parts.netloc, path, query, ""))
