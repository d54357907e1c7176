"""The HTTP face of `evcli serve` (Starlette on uvicorn): receive deliveries, show the store.

Routes: POST /alerts (webhook v4: 202 queued, 400 with the reason, 503 when the queue is full),
GET / (session list), GET /sessions/ID (HTML report), GET /sessions/ID.json (export document),
GET /healthz, GET /metrics. With a token, every route but /healthz wants `Authorization: Bearer TOKEN`
(or HTTP Basic with the token as password, so a browser can ask for it). Handlers are `async` and use the
one store connection on the event loop's thread only: no two requests share a transaction.
"""

from __future__ import annotations

import hmac
import logging
from base64 import b64decode
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from evcli.errors import BadInput, NotFound
from evcli.serve import ServeConfig
from evcli.serve.metrics import Received

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from evcli.store.db import TraceStore

log = logging.getLogger("evcli.serve")
MAX_BODY_BYTES = 4 * 1024 * 1024
LIST_LIMIT = 100


def create_app(config: ServeConfig, store: TraceStore) -> ASGIApp:
    received = Received()

    async def post_alerts(request: Request) -> Response:
        from evcli.serve.queue import accept, read_delivery

        client = request.client.host if request.client else "-"
        try:
            body = await _body(request)
            data = read_delivery(body)
            counts = accept(store, data, max_queue=config.max_queue, repeat_interval_s=config.repeat_interval_s)
        except BadInput as exc:
            received["rejected"] += 1
            log.warning("POST /alerts from %s refused (400): %s", client, exc)
            return JSONResponse({"error": str(exc)}, status_code=400)
        if counts is None:
            received["full"] += 1
            log.warning("POST /alerts from %s refused (503): the queue holds %d alerts", client, config.max_queue)
            return JSONResponse({"error": "queue full"}, status_code=503, headers={"Retry-After": "10"})
        _count(received, data, counts)
        log.info("POST /alerts from %s: %s", client, ", ".join(f"{n} {kind}" for kind, n in counts.items()))
        return JSONResponse(counts, status_code=202)

    async def index(request: Request) -> Response:
        from evcli.serve.pages import FILTERS, session_list

        filters = {name: request.query_params[name] for name, _ in FILTERS if request.query_params.get(name)}
        try:
            rows = store.list_sessions(LIST_LIMIT, _query(filters))
        except BadInput as exc:
            return PlainTextResponse(f"bad filter: {exc}\n", status_code=400)
        return HTMLResponse(session_list(rows, alert_links(store, [row["session_id"] for row in rows]), filters))

    async def session(request: Request) -> Response:
        from evcli.report import render
        from evcli.store.documents import to_canonical

        reference: str = request.path_params["reference"]
        as_json = reference.endswith(".json")
        try:
            document = store.load(store.resolve(reference.removesuffix(".json")))
        except (NotFound, BadInput) as exc:
            return PlainTextResponse(f"{exc}\n", status_code=404)
        if as_json:
            return Response(to_canonical(document) + "\n", media_type="application/json")
        return HTMLResponse(render(document, "html"))

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def metrics(request: Request) -> Response:
        from evcli.serve.metrics import render

        return PlainTextResponse(render(store, received), media_type="text/plain; version=0.0.4")

    routes = [
        Route("/alerts", post_alerts, methods=["POST"]),
        Route("/", index),
        Route("/sessions/{reference}", session),
        Route("/healthz", healthz),
        Route("/metrics", metrics),
    ]
    app: ASGIApp = Starlette(routes=routes)
    return _TokenRequired(app, config.token) if config.token else app


async def _body(request: Request) -> bytes:
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise BadInput(f"the body is larger than {MAX_BODY_BYTES} bytes")
    return body


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
