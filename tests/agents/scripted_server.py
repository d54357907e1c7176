"""A scripted OpenAI-compatible chat server on 127.0.0.1 that stands in for a model.

A script is a list of reply specs (answered in order) or a function from the
request body to a reply spec. A spec is a dict:

    {"content": "..."}                                  an assistant message
    {"tool_calls": [{"name": ..., "arguments": {...}}]}  tool calls (arguments may be a raw string)
    {"status": 500, "error": "..."}                      an HTTP error in OpenAI's error format
    {"sleep": 3.0, ...}                                  wait first (past the client's timeout)
    {"raw": "not json", "status": 200}                   a body that is not a chat completion
    {"raw": b"...", "status": 200}                       a body sent as these bytes (e.g. not UTF-8)
    {"usage": {"prompt_tokens": 7, "completion_tokens": 3}}   overrides the computed usage

The same specs answer Anthropic's Messages API too (POST /v1/messages, where litellm sends an
`anthropic/…` model given this server as its api_base): text and tool calls as content blocks, errors
in Anthropic's format, and a "usage" override in Anthropic's names (`input_tokens`, `output_tokens`,
`cache_read_input_tokens`, `cache_creation_input_tokens`). And Bedrock's Converse API (POST
/model/ID/converse, for a `bedrock/…` model; litellm signs it with whatever AWS_* keys are set), with a
"usage" override in its names (`inputTokens`, `outputTokens`, `cacheReadInputTokens`, `cacheWriteInputTokens`).

The helpers `answer`, `calls` and `error` build them. Every request body is
recorded in `requests`, and the time spent answering each (excluding scripted
sleeps) in `handling_seconds`, so a test can subtract it from wall time. A
request whose client closed the connection while the server slept (the client
gave up: it abandoned the request) is counted in `abandoned`.

Use it as a context manager or a fixture: `stop()` shuts the server down, closes
the connections clients keep alive and joins the serving thread and every
handler thread, so nothing of a server outlives its test (a handler left
blocked on a kept-alive connection used to print a traceback into a later
test's output). A handler's unexpected exception is kept in `handler_errors`,
not printed; a client dropping its connection is not an error.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Spec = dict[str, Any]
Script = list[Spec] | Callable[[dict[str, Any]], Spec]

ROLES = ("planner", "executor", "verifier", "composer")
ANTHROPIC_PATH = "/v1/messages"
BEDROCK_CONVERSE_PATH = re.compile(r"/model/[^/]+/converse")


def answer(content: str | dict[str, Any], **extra: Any) -> Spec:
    """An assistant message; a dict is sent as its JSON text."""
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    return {"content": text, **extra}


def calls(*tool_calls: tuple[str, dict[str, Any] | str], **extra: Any) -> Spec:
    return {"tool_calls": [{"name": name, "arguments": arguments} for name, arguments in tool_calls], **extra}


def error(status: int, message: str = "scripted failure", **extra: Any) -> Spec:
    return {"status": status, "error": message, **extra}


def role_of(body: dict[str, Any]) -> str | None:
    """Which evcli role a request is for, from the first line of its system prompt ("You are the Planner …")."""
    if isinstance(body.get("system"), list):  # Anthropic's and Bedrock's APIs: the system prompt as blocks
        text = "".join(block.get("text") or "" for block in body["system"])
        first_line = text.splitlines()[0].lower() if text else ""
        return next((role for role in ROLES if f"you are the {role}" in first_line), None)
    for message in body.get("messages") or []:
        if message.get("role") == "system":
            first_line = (message.get("content") or "").splitlines()[0].lower() if message.get("content") else ""
            return next((role for role in ROLES if f"you are the {role}" in first_line), None)
    return None


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [m.get("content") or "" for m in body.get("messages") or [] if m.get("role") == "tool"]


def _tool_input(arguments: dict[str, Any] | str) -> Any:
    """A call's arguments as Anthropic's and Bedrock's APIs carry them: an object, not its JSON text."""
    return json.loads(arguments) if isinstance(arguments, str) else arguments


def _peer_closed(connection: socket.socket) -> bool:
    """Whether the client has closed its end (a peeked read sees EOF or a reset, without waiting)."""
    try:
        return connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False  # open, nothing sent
    except OSError:
        return True


class _JoiningServer(ThreadingHTTPServer):
    """A threading HTTP server whose handler threads are joined on close, not left as daemons."""

    daemon_threads = False
    block_on_close = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.errors: list[BaseException] = []
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """Wake handlers waiting for another request on a kept-alive connection: they see EOF and end."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if error is not None and not isinstance(error, (ConnectionError, TimeoutError)):
            self.errors.append(error)


class ScriptedServer:
    def __init__(self, script: Script, *, model: str = "scripted") -> None:
        self.script = script
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.handling_seconds: list[float] = []
        self.abandoned = 0
        self._lock = threading.Lock()
        self._position = itertools.count()
        self._ids = itertools.count(1)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
            # Headers and body leave in one segment: no Nagle / delayed-ACK stall to skew timings.
            wbufsize = 1 << 16
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                started = time.perf_counter()
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                anthropic = self.path.rstrip("/") == ANTHROPIC_PATH
                converse = BEDROCK_CONVERSE_PATH.fullmatch(self.path) is not None
                chat = self.path.rstrip("/") in ("/v1/chat/completions", "/chat/completions")
                if not (anthropic or converse or chat):
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}", "type": "not_found"}}))
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    not_json = {"error": {"message": "request body is not JSON", "type": "invalid_request_error"}}
                    self._send(400, json.dumps(not_json))
                    return
                with server._lock:
                    server.requests.append(body)
                    server.paths.append(self.path)
                spec = server._next_spec(body)
                slept = 0.0
                if spec.get("sleep"):
                    time.sleep(spec["sleep"])
                    slept = spec["sleep"]
                    if _peer_closed(self.connection):
                        with server._lock:
                            server.abandoned += 1
                render = (
                    server._render_anthropic if anthropic else server._render_converse if converse else server._render
                )
                status, text = render(spec, body)
                with contextlib.suppress(OSError):  # the client gave up (timeout): nobody to answer
                    self._send(status, text)
                with server._lock:
                    server.handling_seconds.append(time.perf_counter() - started - slept)

            def _send(self, status: int, text: str | bytes) -> None:
                data = text if isinstance(text, bytes) else text.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

        self._httpd = _JoiningServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="scripted-model-server", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    @property
    def handler_errors(self) -> list[BaseException]:
        return self._httpd.errors

    def stop(self) -> None:
        """Stop serving, drop kept-alive connections, join every thread."""
        if self._thread.is_alive():
            self._httpd.shutdown()
            self._thread.join()
        self._httpd.close_connections()
        self._httpd.server_close()  # joins the handler threads (block_on_close)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def requests_for(self, role: str) -> list[dict[str, Any]]:
        return [body for body in self.requests if role_of(body) == role]

    # --- answering -------------------------------------------------------------------

    def _next_spec(self, body: dict[str, Any]) -> Spec:
        if callable(self.script):
            return self.script(body)
        position = next(self._position)
        if position >= len(self.script):
            return error(500, f"script exhausted after {len(self.script)} replies")
        return self.script[position]

    def _render(self, spec: Spec, body: dict[str, Any]) -> tuple[int, str | bytes]:
        if "raw" in spec:
            return spec.get("status", 200), spec["raw"]
        status = spec.get("status", 200)
        if status >= 400:
            kind = {
                400: "invalid_request_error",
                401: "authentication_error",
                404: "not_found_error",
                429: "rate_limit_error",
            }.get(status, "server_error")
            return status, json.dumps({"error": {"message": spec.get("error", "error"), "type": kind, "code": None}})
        message: dict[str, Any] = {"role": "assistant", "content": spec.get("content")}
        if spec.get("tool_calls"):
            message["tool_calls"] = [
                {
                    "id": call.get("id") or f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": call["arguments"]
                        if isinstance(call["arguments"], str)
                        else json.dumps(call["arguments"], ensure_ascii=False),
                    },
                }
                for call in spec["tool_calls"]
            ]
        prompt_tokens = sum(len(str(m.get("content") or "")) for m in body.get("messages") or []) // 4
        completion_tokens = len(json.dumps(message, ensure_ascii=False)) // 4
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, **spec.get("usage", {})}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        response = {
            "id": f"chatcmpl-scripted-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if spec.get("tool_calls") else "stop"}
            ],
            "usage": usage,
        }
        return status, json.dumps(response, ensure_ascii=False)

    def _render_anthropic(self, spec: Spec, body: dict[str, Any]) -> tuple[int, str | bytes]:
        """The spec as Anthropic's Messages API answers: a message of content blocks, or an error."""
        if "raw" in spec:
            return spec.get("status", 200), spec["raw"]
        status = spec.get("status", 200)
        if status >= 400:
            kind = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}
            error = {"type": kind.get(status, "api_error"), "message": spec.get("error", "error")}
            return status, json.dumps({"type": "error", "error": error})
        content: list[dict[str, Any]] = [{"type": "text", "text": spec["content"]}] if spec.get("content") else []
        for call in spec.get("tool_calls") or []:
            content.append(
                {
                    "type": "tool_use",
                    "id": call.get("id") or f"toolu_{next(self._ids)}",
                    "name": call["name"],
                    "input": _tool_input(call["arguments"]),
                }
            )
        sent = json.dumps([body.get("system"), body.get("messages")], ensure_ascii=False)
        usage = {
            "input_tokens": len(sent) // 4,
            "output_tokens": len(json.dumps(content)) // 4,
            **spec.get("usage", {}),
        }
        response = {
            "id": f"msg_scripted_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or self.model,
            "content": content,
            "stop_reason": "tool_use" if spec.get("tool_calls") else "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        return status, json.dumps(response, ensure_ascii=False)

    def _render_converse(self, spec: Spec, body: dict[str, Any]) -> tuple[int, str | bytes]:
        """The spec as Bedrock's Converse API answers: an output message of content blocks, or an error."""
        if "raw" in spec:
            return spec.get("status", 200), spec["raw"]
        status = spec.get("status", 200)
        if status >= 400:
            return status, json.dumps({"message": spec.get("error", "error")})
        content: list[dict[str, Any]] = [{"text": spec["content"]}] if spec.get("content") else []
        for call in spec.get("tool_calls") or []:
            tool_use = {
                "toolUseId": call.get("id") or f"tooluse_{next(self._ids)}",
                "name": call["name"],
                "input": _tool_input(call["arguments"]),
            }
            content.append({"toolUse": tool_use})
        sent = json.dumps([body.get("system"), body.get("messages")], ensure_ascii=False)
        usage = {"inputTokens": len(sent) // 4, "outputTokens": len(json.dumps(content)) // 4, **spec.get("usage", {})}
        usage["totalTokens"] = usage["inputTokens"] + usage["outputTokens"]
        response = {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": "tool_use" if spec.get("tool_calls") else "end_turn",
            "usage": usage,
            "metrics": {"latencyMs": 1},
        }
        return status, json.dumps(response, ensure_ascii=False)
