"""The HTTP calls the live backends make, through httpx: GET or POST (a JSON or form body), return
the JSON answer (with the sha256 of the body as received, for an invocation's digests), or raise
`BackendError`.

A `Connection` is one backend as its `BackendSpec` describes it: base URL, timeout, auth, extra
headers (`X-Scope-OrgID`), TLS (`ca_bundle`, `insecure_skip_verify`) and retries.

Invariants:
  - every failure becomes one line naming the method and the URL, with any `user:pass@` removed
    and the secret sent (token or password) masked, so the message can be shown and stored as it is;
  - a secret is read from its environment variable or file when a request is sent, travels only in
    the request's Authorization header and is never kept (a missing one is a `BackendError` naming
    the variable or the file, never a value); a secret file other users can read or change is
    warned about (`evcli.core.userfiles.warn_if_exposed`);
  - connection errors and HTTP 429/502/503/504 are retried `retries` times with exponential backoff;
    a `Retry-After` answer is honoured up to MAX_RETRY_AFTER seconds. Timeouts are not retried
    (the user already waited `timeout`), nor is any other status;
  - a `Connection` may be used from several threads at once (the tool calls of one model reply):
    its httpx client, which httpx documents as shareable between threads, is made once under a
    lock, and a request keeps its state (headers, credentials, attempts) in its own frame.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import json
import os
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from evcli.core.errors import BackendError
from evcli.core.userfiles import warn_if_exposed

if TYPE_CHECKING:
    from evcli.contracts import BackendAuth, BackendSpec

_BODY_EXCERPT = 200
RETRIED_STATUS = frozenset({429, 502, 503, 504})
BACKOFF_S = 0.1  # first pause between attempts; doubled after each one
MAX_BACKOFF_S = 2.0
MAX_RETRY_AFTER = 5.0  # seconds: a longer Retry-After is cut to this
MASK = "****"

Params = dict[str, Any] | list[tuple[str, Any]] | None


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

    def secrets(self) -> list[str]:
        return [secret for secret in (self.token, self.password) if secret]


class HttpStatusError(BackendError):
    """The server answered with an HTTP error status (`status`)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class MissingSecret(BackendError):
    """The auth names a variable or file that holds nothing; `remedy` says what to set."""

    def __init__(self, message: str, remedy: str) -> None:
        super().__init__(message)
        self.remedy = remedy


def read_secret(variable: str | None, file: str | None, what: str) -> str:
    """The secret in the environment variable, else the file (stripped); read now, never kept."""
    if variable and os.environ.get(variable):
        return os.environ[variable]
    if file and (path := Path(file).expanduser()).is_file():
        warn_if_exposed(path, f"{what} file", secret=True)
        return path.read_text(encoding="utf-8").strip()
    named = " or ".join(filter(None, [variable and f"${variable}", file]))
    if not named:
        raise MissingSecret(f"auth names no {what}", f'add {what}_env = "NAME" to the auth table')
    raise MissingSecret(f"the {what} is not set ({named})", f"export {variable}=..." if variable else f"create {file}")


def resolve_auth(auth: BackendAuth | HttpAuth | None) -> HttpAuth | None:
    """The credentials to send: a `BackendAuth` has its secret read from its variable or file now."""
    if auth is None or isinstance(auth, HttpAuth):
        return auth
    if auth.kind == "bearer":
        return HttpAuth(token=read_secret(auth.token_env, auth.token_file, "token"))
    return HttpAuth(
        username=auth.username or "", password=read_secret(auth.password_env, auth.password_file, "password")
    )


def auth_headers(auth: BackendAuth | HttpAuth | None, headers: dict[str, str] | None = None) -> dict[str, str]:
    """`headers` with the Authorization header of `auth` (its secret read now; `MissingSecret` if unset)."""
    found = dict(headers or {})
    credentials = resolve_auth(auth)
    if credentials is not None and (authorization := credentials.header()):
        found["Authorization"] = authorization
    return found


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


class Connection:
    """One backend's base URL and how to reach it; requests name a path under the base URL.

    The httpx client (its connection pool and TLS context) is made on first use and kept."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 10,
        auth: BackendAuth | HttpAuth | None = None,
        headers: dict[str, str] | None = None,
        verify: str | bool = True,
        retries: int = 0,
    ) -> None:
        clean, from_url = split_credentials(url.strip())
        self.url = clean.rstrip("/")
        self.timeout = timeout
        self.auth = auth or from_url
        self.headers = dict(headers or {})
        self.verify = verify
        self.retries = retries
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    @classmethod
    def from_spec(cls, spec: BackendSpec) -> Connection:
        return cls(
            spec.url,
            timeout=spec.timeout,
            auth=spec.auth,
            headers=spec.headers,
            verify=spec.ca_bundle or not spec.insecure_skip_verify,
            retries=spec.retries,
        )

    def client(self) -> httpx.Client:
        """The kept httpx client (headers and auth are added per request, not stored in it), made on first use
        by one thread: callers at once share one connection pool."""
        with self._client_lock:
            if self._client is None:
                verify = self.verify
                if isinstance(verify, str):
                    verify = _ssl_context(verify)
                self._client = httpx.Client(timeout=self.timeout, verify=verify)
            return self._client

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def probe(self, path: str) -> None:
        """Whether the server answers at all: any transport failure or HTTP status of 400 and more
        raises, except 404 (an endpoint this server lacks still means it answers)."""
        try:
            self.request("GET", path)
        except HttpStatusError as error:
            if error.status != 404:
                raise

    def get_json(self, path: str, params: Params = None) -> Any:
        return decode_json("GET", self.url + path, self.request("GET", path, params))

    def get_json_digest(self, path: str, params: Params = None) -> tuple[Any, str]:
        """The decoded answer and the `sha256:<hex>` of its body as received."""
        answer = self.request("GET", path, params)
        return decode_json("GET", self.url + path, answer), "sha256:" + hashlib.sha256(answer).hexdigest()

    def post_json(self, path: str, *, json_body: Any = None, form: Params = None, params: Params = None) -> Any:
        """POST a JSON body or a form (not both) and decode the JSON answer."""
        if json_body is not None and form is not None:
            raise ValueError("post_json takes a JSON body or a form, not both")
        if form is not None:
            body = urllib.parse.urlencode(form, doseq=True).encode()
            content_type = "application/x-www-form-urlencoded"
        else:
            body, content_type = json.dumps(json_body).encode(), "application/json"
        answer = self.request("POST", path, params, body=body, content_type=content_type)
        return decode_json("POST", self.url + path, answer)

    def request(
        self,
        method: str,
        path: str,
        params: Params = None,
        *,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> bytes:
        """Send one request (retried as the module says) and return its body; failures are one-line `BackendError`s."""
        shown = self.url + path
        target = urllib.parse.urlsplit(shown)
        if target.scheme not in ("http", "https") or not target.netloc:
            raise BackendError(f"invalid URL {shown!r}: expected http://host:port or https://host:port")
        credentials = resolve_auth(self.auth)
        headers = {"Accept": "application/json", "User-Agent": "evcli", **auth_headers(credentials, self.headers)}
        if content_type:
            headers["Content-Type"] = content_type
        secrets = credentials.secrets() if credentials else []
        query = urllib.parse.urlencode(params or {}, doseq=True)
        url = f"{shown}?{query}" if query else shown
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self.client().request(method, url, content=body, headers=headers)
            except httpx.TimeoutException:
                raise BackendError(f"{method} {shown} failed: no answer within {self.timeout:g}s (timeout)") from None
            except httpx.TransportError as error:
                if last or not _retried_transport(error):
                    raise BackendError(_masked(f"{method} {shown} failed: {_reason(error)}", secrets)) from None
                time.sleep(_backoff(attempt))
                continue
            if response.status_code < 400:
                return response.content
            if last or response.status_code not in RETRIED_STATUS:
                excerpt = _one_line(response.text)[:_BODY_EXCERPT] or "(empty body)"
                message = f"{method} {shown} answered HTTP {response.status_code}: {excerpt}"
                raise HttpStatusError(_masked(message, secrets), response.status_code)
            time.sleep(_retry_after(response) or _backoff(attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")


def get_json(url: str, params: Params = None, timeout: float = 10, auth: HttpAuth | None = None) -> Any:
    """GET `url` with query `params` (a list value repeats the key) and decode the JSON answer."""
    with _closing(Connection(url, timeout=timeout, auth=auth)) as connection:
        return connection.get_json("", params)


def post_json(
    url: str,
    *,
    json_body: Any = None,
    form: Params = None,
    params: Params = None,
    timeout: float = 10,
    auth: HttpAuth | None = None,
) -> Any:
    """POST a JSON body or a form (not both) to `url` and decode the JSON answer."""
    with _closing(Connection(url, timeout=timeout, auth=auth)) as connection:
        return connection.post_json("", json_body=json_body, form=form, params=params)


class _closing:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def __enter__(self) -> Connection:
        return self.connection

    def __exit__(self, *exc_info: object) -> None:
        self.connection.close()


def decode_json(method: str, url: str, answer: bytes) -> Any:
    try:
        return json.loads(answer)
    except ValueError as error:
        raise BackendError(f"{method} {split_credentials(url)[0]} returned invalid JSON: {error}") from None


def _ssl_context(ca_bundle: str) -> Any:
    import ssl

    path = Path(ca_bundle).expanduser()
    if not path.is_file():
        raise BackendError(f"the CA bundle {path} does not exist")
    return ssl.create_default_context(cafile=str(path))


def _retried_transport(error: httpx.TransportError) -> bool:
    """Connection errors are retried; a TLS failure (certificate) or a bad URL is not."""
    return isinstance(error, httpx.ConnectError | httpx.RemoteProtocolError | httpx.ReadError) and not _tls(error)


def _tls(error: Exception) -> bool:
    text = str(error).lower()
    return "certificate" in text or "ssl" in text or "tls" in text


def _backoff(attempt: int) -> float:
    return min(MAX_BACKOFF_S, BACKOFF_S * 2**attempt)


def _retry_after(response: httpx.Response) -> float | None:
    """The pause a `Retry-After` header asks for (seconds or an HTTP date), at most MAX_RETRY_AFTER."""
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = (when - datetime.now(UTC)).total_seconds()
    return min(MAX_RETRY_AFTER, max(0.0, seconds))


def _reason(error: httpx.TransportError) -> str:
    text = _one_line(str(error))
    lowered = text.lower()
    if "refused" in lowered:
        return "connection refused (is it running, and is the port right?)"
    if "name or service not known" in lowered or "nodename" in lowered or "getaddrinfo" in lowered:
        return "host not found (DNS lookup failed)"
    if _tls(error):
        return f"TLS failed: {text} (set ca_bundle, or insecure_skip_verify = true)"
    if isinstance(error, httpx.RemoteProtocolError | httpx.ReadError):
        return "the server closed the connection without answering"
    if isinstance(error, httpx.UnsupportedProtocol):
        return "unsupported URL scheme: expected http:// or https://"
    return text or type(error).__name__


def _masked(message: str, secrets: list[str]) -> str:
    for secret in secrets:
        message = message.replace(secret, MASK)
    return message


def _one_line(text: str) -> str:
    return " ".join(text.split())
