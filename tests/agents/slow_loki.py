"""A Loki stand-in on 127.0.0.1 whose searches take a known time, for the concurrent tool-call tests.

It answers `/ready`, the service label's values and `/loki/api/v1/query_range`. A search whose LogQL
holds `MARKER` as a keyword sleeps `delays[service]` seconds (DEFAULT_DELAY otherwise) before it
answers one line of that service, and is logged in `searches` with when it started and ended (the
searches the session set-up makes, for the question's words, answer at once and are not logged).
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MARKER = "upstream"
SERVICES = ("checkout", "payments", "search")
DEFAULT_DELAY = 0.8
_SERVICE = re.compile(r'\{service="([^"]+)"\}')


@dataclass
class Search:
    service: str
    logql: str
    started: float
    ended: float = 0.0


@dataclass
class SlowLoki:
    url: str = ""
    delays: dict[str, float] = field(default_factory=dict)
    searches: list[Search] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def marked(self) -> list[Search]:
        """The searches for MARKER, in the order they started."""
        with self.lock:
            return sorted(self.searches, key=lambda search: search.started)

    def answer(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        if path.endswith("/label/service/values"):
            return {"status": "success", "data": list(SERVICES)}
        logql = params.get("query", "")
        found = _SERVICE.search(logql)
        service = found.group(1) if found else SERVICES[0]
        if MARKER in logql:
            search = Search(service, logql, time.perf_counter())
            time.sleep(self.delays.get(service, DEFAULT_DELAY))
            search.ended = time.perf_counter()
            with self.lock:
                self.searches.append(search)
        now_ns = time.time_ns() - 60 * 10**9  # inside the live default range (the last hour)
        line = f"ERROR {service}: {MARKER} connect timeout after 3000 ms"
        return {
            "status": "success",
            "data": {
                "resultType": "streams",
                "result": [{"stream": {"service": service}, "values": [[str(now_ns), line]]}],
            },
        }


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def start(loki: SlowLoki) -> tuple[SlowLoki, _Server]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            target = urllib.parse.urlsplit(self.path)
            body = b"ready" if target.path == "/ready" else b""
            if not body:
                body = json.dumps(loki.answer(target.path, dict(urllib.parse.parse_qsl(target.query)))).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    loki.url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return loki, server
