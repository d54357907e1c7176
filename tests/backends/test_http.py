"""The HTTP helper against real loopback servers: POST with a JSON or form body, errors as one line;
a Connection built from a BackendSpec: auth read at request time, X-Scope-OrgID, retries with backoff
(429 then success, Retry-After honoured and bounded, 503 until retries run out), secrets masked."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from evcli.backends import http
from evcli.backends.http import Connection, HttpAuth, HttpStatusError, MissingSecret, get_json, post_json
from evcli.contracts import BackendAuth, BackendSpec
from evcli.core.errors import BackendError


class _Echo(BaseHTTPRequestHandler):
    """Answers with what it received: method, path, content type, authorization and body."""

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode()
        status = 503 if self.path.startswith("/fail") else 200
        payload = json.dumps(
            {
                "method": self.command,
                "path": self.path,
                "type": self.headers.get("Content-Type"),
                "auth": self.headers.get("Authorization"),
                "body": body,
            }
        ).encode()
        if status != 200:
            payload = b"backend\nunavailable"
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def echo_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_post_sends_a_json_body_with_its_content_type(echo_url):
    answer = post_json(
        echo_url + "/search",
        json_body={"query": {"match": {"message": "timeout"}}},
        params={"size": 5},
        auth=HttpAuth(token="s3cret"),
    )

    assert answer["method"] == "POST" and answer["path"] == "/search?size=5"
    assert answer["type"] == "application/json"
    assert json.loads(answer["body"]) == {"query": {"match": {"message": "timeout"}}}
    assert answer["auth"] == "Bearer s3cret"


def test_post_sends_a_form_body(echo_url):
    answer = post_json(echo_url + "/api", form=[("query", 'up{job="a b"}'), ("match[]", "x"), ("match[]", "y")])

    assert answer["type"] == "application/x-www-form-urlencoded"
    assert answer["body"] == "query=up%7Bjob%3D%22a+b%22%7D&match%5B%5D=x&match%5B%5D=y"


def test_post_failure_is_one_line_naming_the_method_without_credentials(echo_url):
    url = echo_url.replace("http://", "http://user:pw@") + "/fail"

    with pytest.raises(BackendError) as caught:
        post_json(url, json_body={})

    message = str(caught.value)
    assert message == f"POST {echo_url}/fail answered HTTP 503: backend unavailable"
    assert "pw" not in message and "\n" not in message


def test_get_still_sends_no_body(echo_url):
    answer = get_json(echo_url + "/x", {"a": ["1", "2"]})

    assert (answer["method"], answer["path"], answer["body"], answer["type"]) == ("GET", "/x?a=1&a=2", "", None)


def test_a_json_body_and_a_form_together_are_refused(echo_url):
    with pytest.raises(ValueError, match="not both"):
        post_json(echo_url, json_body={}, form={"a": "b"})


# --- a backend as its BackendSpec describes it (issue 12) ------------------------------------------


class _Scripted(BaseHTTPRequestHandler):
    """Answers each request with the next (status, headers) of `script`, then 200 with what it received;
    a request without the expected tenant header is refused with 401."""

    script: list[tuple[int, dict[str, str]]] = []
    seen: list[dict[str, str | None]] = []

    def do_GET(self) -> None:
        self.seen.append({"auth": self.headers.get("Authorization"), "tenant": self.headers.get("X-Scope-OrgID")})
        status, headers = self.script.pop(0) if self.script else (200, {})
        if self.headers.get("X-Scope-OrgID") != "team-a":
            status, headers = 401, {}
        body = json.dumps(self.seen[-1]).encode() if status == 200 else b"no org id" if status == 401 else b"busy"
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def scripted() -> Iterator[tuple[str, type[_Scripted]]]:
    handler = type("Handler", (_Scripted,), {"script": [], "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def _spec(url: str, **fields: Any) -> BackendSpec:
    return BackendSpec(url=url, headers={"X-Scope-OrgID": "team-a"}, **fields)


def test_the_token_is_read_from_its_variable_at_request_time_and_sent_with_the_headers(scripted, monkeypatch):
    url, handler = scripted
    connection = Connection.from_spec(_spec(url, auth=BackendAuth(kind="bearer", token_env="EVCLI_TEST_TOKEN")))
    monkeypatch.setenv("EVCLI_TEST_TOKEN", "first-token")
    connection.get_json("/x")
    monkeypatch.setenv("EVCLI_TEST_TOKEN", "rotated-token")  # never kept: the next request reads it again

    assert connection.get_json("/x") == {"auth": "Bearer rotated-token", "tenant": "team-a"}
    assert "first-token" not in repr(vars(connection)) and "rotated-token" not in repr(vars(connection))


def test_basic_auth_reads_the_password_from_a_file(scripted, tmp_path):
    url, _ = scripted
    (tmp_path / "pw").write_text("s3cret\n")
    auth = BackendAuth(kind="basic", username="evcli", password_file=str(tmp_path / "pw"))

    answer = Connection.from_spec(_spec(url, auth=auth)).get_json("/x")

    assert answer["auth"] == "Basic " + base64.b64encode(b"evcli:s3cret").decode()


def test_a_missing_secret_names_the_variable_never_a_value(scripted, monkeypatch):
    url, handler = scripted
    monkeypatch.delenv("EVCLI_TEST_TOKEN", raising=False)
    connection = Connection.from_spec(_spec(url, auth=BackendAuth(kind="bearer", token_env="EVCLI_TEST_TOKEN")))

    with pytest.raises(MissingSecret, match=r"the token is not set \(\$EVCLI_TEST_TOKEN\)"):
        connection.get_json("/x")
    assert handler.seen == []  # nothing sent without it


def test_429_then_success_is_retried_honouring_retry_after(scripted):
    url, handler = scripted
    handler.script[:] = [(429, {"Retry-After": "0.3"}), (503, {})]
    started = time.perf_counter()

    answer = Connection.from_spec(_spec(url, retries=2)).get_json("/x")

    assert answer["tenant"] == "team-a" and len(handler.seen) == 3
    assert 0.3 <= time.perf_counter() - started < 2


def test_a_long_retry_after_is_bounded(scripted, monkeypatch):
    url, handler = scripted
    monkeypatch.setattr(http, "MAX_RETRY_AFTER", 0.2)
    handler.script[:] = [(503, {"Retry-After": "3600"})]
    started = time.perf_counter()

    Connection.from_spec(_spec(url, retries=1)).get_json("/x")

    assert time.perf_counter() - started < 1


def test_503_until_the_retries_run_out_is_one_line_with_the_secret_masked(scripted, monkeypatch):
    url, handler = scripted
    monkeypatch.setenv("EVCLI_TEST_TOKEN", "busy")  # the body echoes a word equal to the secret
    handler.script[:] = [(503, {})] * 3
    spec = _spec(url, retries=2, auth=BackendAuth(kind="bearer", token_env="EVCLI_TEST_TOKEN"))

    with pytest.raises(HttpStatusError) as caught:
        Connection.from_spec(spec).get_json("/x")

    assert str(caught.value) == f"GET {url}/x answered HTTP 503: ****"
    assert caught.value.status == 503 and len(handler.seen) == 3


def test_other_statuses_are_not_retried(scripted):
    url, handler = scripted
    handler.script[:] = [(500, {})]

    with pytest.raises(HttpStatusError, match="HTTP 500"):
        Connection.from_spec(_spec(url, retries=3)).get_json("/x")
    assert len(handler.seen) == 1


def test_without_the_tenant_header_the_server_refuses(scripted):
    url, _ = scripted

    with pytest.raises(HttpStatusError, match="HTTP 401: no org id"):
        Connection.from_spec(BackendSpec(url=url)).get_json("/x")


def test_a_refused_connection_is_retried_then_named(closed_url):
    started = time.perf_counter()

    with pytest.raises(BackendError, match=r"failed: connection refused") as caught:
        Connection.from_spec(BackendSpec(url=closed_url, retries=2)).get_json("/x")

    assert closed_url in str(caught.value)
    assert http.BACKOFF_S * 3 <= time.perf_counter() - started < 2  # 0.1 s + 0.2 s of backoff


def test_a_missing_ca_bundle_is_a_backend_error(tmp_path):
    spec = BackendSpec(url="https://127.0.0.1:1", ca_bundle=str(tmp_path / "missing.pem"))

    with pytest.raises(BackendError, match="CA bundle .* does not exist"):
        Connection.from_spec(spec).get_json("/x")
