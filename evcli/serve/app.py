"""The HTTP face of `evcli serve` (Starlette on uvicorn): receive deliveries, show the store.

Routes: POST /alerts (webhook v4: 202 queued, 400 with the reason, 503 when the queue is full),
GET / (session list), GET /sessions/ID (HTML report), GET /sessions/ID.json (export document),
GET /healthz (200 ok or 503 unhealthy, with each worker and the queue's age: serve/supervisor.py),
GET /metrics. With a token, every route but /healthz wants `Authorization: Bearer TOKEN` (or HTTP Basic with
the token as password, so a browser can ask for it); /healthz shows no alert's content, only ids and ages.
Handlers do no store, parsing or rendering work on the event loop (serve/offload.py). A store that cannot
answer (disk full, locked past the busy timeout, unreadable) is a 503 whose body names the reason.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import sqlite3
from base64 import b64decode
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from evcli.core.errors import BadInput, EvcliError, NotFound
from evcli.serve import ServeConfig, failure_reason
from evcli.serve.metrics import Received
from evcli.serve.offload import Offload, stream_page

if TYPE_CHECKING:
    from types import FrameType

    from starlette.types import ASGIApp, Receive, Scope, Send

    from evcli.serve.supervisor import Supervisor
    from evcli.store.db import TraceStore

log = logging.getLogger("evcli.serve")
MAX_BODY_BYTES = 4 * 1024 * 1024
LIST_LIMIT = 100


def create_app(config: ServeConfig, supervisor: Supervisor) -> ASGIApp:
    received = Received()
    offload = Offload(config.worker.db)

    async def post_alerts(request: Request) -> Response:
        client = request.client.host if request.client else "-"
        try:
            body = await _body(request)
            data, counts = await offload.write(lambda store: _accept(store, body, config))
        except BadInput as exc:
            received["rejected"] += 1
            log.warning("POST /alerts from %s refused (400): %s", client, exc)
            return JSONResponse({"error": str(exc)}, status_code=400)
        if counts is None:
            received["full"] += 1
            log.warning("POST /alerts from %s refused (503): the queue holds %d alerts", client, config.max_queue)
            return JSONResponse({"error": "queue full"}, status_code=503, headers={"Retry-After": "10"})
        _count(received, data, counts)
        if counts["queued"]:
            supervisor.wake()
        log.info("POST /alerts from %s: %s", client, ", ".join(f"{n} {kind}" for kind, n in counts.items()))
        return JSONResponse(counts, status_code=202)

    async def index(request: Request) -> Response:
        from evcli.serve.pages import FILTERS

        filters = {name: request.query_params[name] for name, _ in FILTERS if request.query_params.get(name)}
        try:
            page = await offload.read(lambda store: _index_page(store, filters))
        except BadInput as exc:
            return PlainTextResponse(f"bad filter: {exc}\n", status_code=400)
        return HTMLResponse(page)

    async def session(request: Request) -> Response:
        reference: str = request.path_params["reference"]
        as_json = reference.endswith(".json")
        try:
            page = await offload.page(reference.removesuffix(".json"), as_json)
        except (NotFound, BadInput) as exc:
            return PlainTextResponse(f"{exc}\n", status_code=404)
        media_type = "application/json" if as_json else "text/html; charset=utf-8"
        size = str(page.stat().st_size)
        return StreamingResponse(stream_page(page), media_type=media_type, headers={"Content-Length": size})

    async def healthz(request: Request) -> Response:
        healthy, document = supervisor.health()
        return JSONResponse(document, status_code=200 if healthy else 503)

    async def metrics(request: Request) -> Response:
        from evcli.serve.metrics import render

        counts, restarts = Received(received), supervisor.restarts
        text = await offload.read(lambda store: render(store, counts, restarts))
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        # here, not after uvicorn.run(): uvicorn ends the process by raising the signal it stopped on again
        await asyncio.to_thread(supervisor.stop)
        offload.close()

    routes = [
        Route("/alerts", post_alerts, methods=["POST"]),
        Route("/", index),
        Route("/sessions/{reference}", session),
        Route("/healthz", healthz),
        Route("/metrics", metrics),
    ]
    unavailable = dict.fromkeys((EvcliError, sqlite3.Error, OSError), _unavailable)
    app: ASGIApp = Starlette(routes=routes, exception_handlers=unavailable, lifespan=lifespan)
    return _TokenRequired(app, config.token) if config.token else app


def run(config: ServeConfig, supervisor: Supervisor, host: str, port: int) -> None:
    """Serve until SIGINT or SIGTERM; the supervisor stops restarting workers the moment either arrives (a whole
    process group may be stopped at once), then stops them once the requests in progress are answered."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            supervisor.halt()
            super().handle_exit(sig, frame)

    app = create_app(config, supervisor)
    Server(uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)).run()


def _accept(store: TraceStore, body: bytes, config: ServeConfig) -> tuple[Any, dict[str, int] | None]:
    from evcli.serve.queue import accept, read_delivery

    data = read_delivery(body)
    return data, accept(store, data, max_queue=config.max_queue, repeat_interval_s=config.repeat_interval_s)


def _index_page(store: TraceStore, filters: dict[str, str]) -> str:
    from evcli.serve.pages import session_list

    rows = store.list_sessions(LIST_LIMIT, _query(filters))
    return session_list(rows, alert_links(store, [row["session_id"] for row in rows]), filters)


async def _unavailable(request: Request, exc: Exception) -> Response:
    """A store or renderer that cannot answer now (disk full, locked, read-only, gone): 503 with the reason."""
    reason = failure_reason(exc)
    log.warning("%s %s answered 503: %s", request.method, request.url.path, reason)
    headers = {"Retry-After": "30"}
    if request.url.path == "/alerts":
        return JSONResponse({"error": reason}, status_code=503, headers=headers)
    return PlainTextResponse(f"service unavailable: {reason}\n", status_code=503, headers=headers)


async def _body(request: Request) -> bytes:
    body = bytearray()  # appended in place: `bytes +=` would copy the whole body for every chunk
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise BadInput(f"the body is larger than {MAX_BODY_BYTES} bytes")
    return bytes(body)


def _count(received: Received, data: dict[str, Any], counts: dict[str, int]) -> None:
    for alert in data["alerts"]:
        received[alert["status"]] += 1
    received["duplicates"] += counts["duplicates"]


def _query(filters: dict[str, str]):
    from evcli.store.query import SessionQuery, since_moment

    return SessionQuery(
        env=filters.get("env"),
        verdict=filters.get("verdict"),
        status=filters.get("status"),
        mode=filters.get("mode"),
        since=since_moment(filters.get("since")),
        text=filters.get("q"),
    )


def alert_links(store: TraceStore, session_ids: list[str]) -> dict[str, dict[str, Any]]:
    """For each session a delivery made: its alert row, with `resolved_at` once the alert resolved."""
    if not session_ids:
        return {}
    marks = ", ".join("?" * len(session_ids))
    firing = {row["id"]: row for row in store.alert_queue_rows(f"session_id IN ({marks})", session_ids)}
    if firing:
        ids = ", ".join("?" * len(firing))
        for row in store.alert_queue_rows(f"state = 'resolved' AND resolves IN ({ids})", list(firing)):
            firing[row["resolves"]]["resolved_at"] = row["received_at"]
    return {row["session_id"]: row for row in firing.values()}


class _TokenRequired:
    """Refuses (401) every request but /healthz without the bearer token (or Basic with it as password)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] != "/healthz" and not self._allowed(Headers(scope=scope)):
            log.warning("%s %s refused (401): no valid token", scope["method"], scope["path"])
            refused = PlainTextResponse(
                "unauthorized: send Authorization: Bearer <token>\n",
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="evcli", Basic realm="evcli"'},
            )
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, headers: Headers) -> bool:
        scheme, _, credentials = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "basic":
            try:
                credentials = b64decode(credentials, validate=True).decode().partition(":")[2]
            except (ValueError, UnicodeDecodeError):
                return False
        elif scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(credentials.strip().encode(), self.token.encode())
