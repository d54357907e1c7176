"""The HTTP helper against a real loopback server: POST with a JSON or form body, errors as one line."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from evcli.backends.base import BackendError
from evcli.backends.http import HttpAuth, get_json, post_json


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
