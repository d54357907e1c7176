"""The HTTP calls the live backends make: GET or POST (a JSON or form body), return the JSON answer
(with the sha256 of the body as received, for an invocation's digests), or raise `BackendError`.

Every failure becomes one line naming the URL, with any `user:pass@` removed, so the
message can be shown and stored as it is. Credentials travel only in the request's
Authorization header.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import socket
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from evcli.backends.base import BackendError

_BODY_EXCERPT = 200


@dataclass(frozen=True)
class HttpAuth:
    """A bearer token or a user and password; the secret never shows in repr or messages."""

    token: str | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    def header(self) -> str | None:
        if self.token:
            return f"Bearer {self.token}"
        if self.username is not None:
            pair = f"{self.username}:{self.password or ''}".encode()
            return "Basic " + base64.b64encode(pair).decode("ascii")
        return None


def split_credentials(url: str) -> tuple[str, HttpAuth | None]:
    """`http://user:pass@host/x` -> (`http://host/x`, basic auth for user); other URLs unchanged."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.netloc.rpartition("@")[2]
    clean = urllib.parse.urlunsplit(parts._replace(netloc=host))
    auth = HttpAuth(
        username=urllib.parse.unquote(parts.username or ""),
        password=urllib.parse.unquote(parts.password) if parts.password is not None else None,
    )
    return clean, auth


def base_url(url: str, auth: HttpAuth | None) -> tuple[str, HttpAuth | None]:
    """A backend's base URL without credentials or a trailing slash, and the auth to send.

    An explicit `auth` wins over credentials written into the URL.
    """
    clean, from_url = split_credentials(url.strip())
    return clean.rstrip("/"), auth or from_url


def quote_string(value: str) -> str:
    """`value` as a double-quoted string literal, as PromQL, LogQL and Alertmanager matchers read it."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def get_json(
    url: str,
    params: dict[str, Any] | list[tuple[str, Any]] | None = None,
    timeout: float = 10,
    auth: HttpAuth | None = None,
) -> Any:
    """GET `url` with query `params` (a list value repeats the key) and decode the JSON answer."""
    return request_json("GET", url, params, timeout=timeout, auth=auth)


def post_json(
    url: str,
    *,
    json_body: Any = None,
    form: dict[str, Any] | list[tuple[str, Any]] | None = None,
    params: dict[str, Any] | list[tuple[str, Any]] | None = None,
    timeout: float = 10,
    auth: HttpAuth | None = None,
) -> Any:
    """POST a JSON body or a form (not both) to `url` and decode the JSON answer."""
    if json_body is not None and form is not None:
        raise ValueError("post_json takes a JSON body or a form, not both")
    if form is not None:
        body = urllib.parse.urlencode(form, doseq=True).encode()
        content_type = "application/x-www-form-urlencoded"
    else:
        body, content_type = json.dumps(json_body).encode(), "application/json"
    return request_json("POST", url, params, body=body, content_type=content_type, timeout=timeout, auth=auth)


def request_json(
    method: str,
    url: str,
    params: dict[str, Any] | list[tuple[str, Any]] | None = None,
    *,
    body: bytes | None = None,
    content_type: str | None = None,
    timeout: float = 10,
    auth: HttpAuth | None = None,
) -> Any:
    """Send one request and decode its JSON answer; every failure is a one-line `BackendError`."""
    return decode_json(
        method,
        url,
        request_bytes(method, url, params, body=body, content_type=content_type, timeout=timeout, auth=auth),
    )


def get_json_digest(
    url: str,
    params: dict[str, Any] | list[tuple[str, Any]] | None = None,
    timeout: float = 10,
    auth: HttpAuth | None = None,
) -> tuple[Any, str]:
    """GET like `get_json`, with the `sha256:<hex>` digest of the response body as received
    (what an invocation records as the evidence it read)."""
    answer = request_bytes("GET", url, params, timeout=timeout, auth=auth)
    return decode_json("GET", url, answer), "sha256:" + hashlib.sha256(answer).hexdigest()


def decode_json(method: str, url: str, answer: bytes) -> Any:
    try:
        return json.loads(answer)
    except ValueError as error:
        raise BackendError(f"{method} {split_credentials(url)[0]} returned invalid JSON: {error}") from None


def request_bytes(
    method: str,
    url: str,
    params: dict[str, Any] | list[tuple[str, Any]] | None = None,
    *,
    body: bytes | None = None,
    content_type: str | None = None,
    timeout: float = 10,
    auth: HttpAuth | None = None,
) -> bytes:
    """Send one request and return its body; every failure is a one-line `BackendError`."""
    shown, from_url = split_credentials(url)
    auth = auth or from_url
    query = urllib.parse.urlencode(params or {}, doseq=True)
    request_url = f"{shown}?{query}" if query else shown
    headers = {"Accept": "application/json", "User-Agent": "evcli"}
    if content_type:
        headers["Content-Type"] = content_type
    authorization = auth.header() if auth else None
    if authorization:
        headers["Authorization"] = authorization
    target = urllib.parse.urlsplit(shown)
    if target.scheme not in ("http", "https") or not target.netloc:
        raise BackendError(f"invalid URL {shown!r}: expected http://host:port or https://host:port")
    request = urllib.request.Request(request_url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            answer = response.read()
    except urllib.error.HTTPError as error:
        raise BackendError(f"{method} {shown} answered HTTP {error.code}: {_excerpt(error)}") from None
    except urllib.error.URLError as error:
        raise BackendError(f"{method} {shown} failed: {_reason(error.reason, timeout)}") from None
    except (OSError, http.client.HTTPException) as error:
        raise BackendError(f"{method} {shown} failed: {_reason(error, timeout)}") from None
    return answer


def _excerpt(error: urllib.error.HTTPError) -> str:
    try:
        body = error.read(_BODY_EXCERPT * 4).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return "(body unreadable)"
    return _one_line(body)[:_BODY_EXCERPT] or "(empty body)"


def _reason(reason: object, timeout: float) -> str:
    if isinstance(reason, TimeoutError):
        return f"no answer within {timeout:g}s (timeout)"
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused (is it running, and is the port right?)"
    if isinstance(reason, socket.gaierror):
        return "host not found (DNS lookup failed)"
    if isinstance(reason, ConnectionResetError):
        return "the server closed the connection without answering"
    return _one_line(str(reason)) or type(reason).__name__


def _one_line(text: str) -> str:
    return " ".join(text.split())
