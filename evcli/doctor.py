"""`evcli doctor`: the effective configuration checked end to end, one row per check.

Checks: each configured backend answers (its version and the latency: Prometheus
/api/v1/status/buildinfo, Alertmanager /api/v2/status, Loki /loki/api/v1/status/buildinfo, Tempo
/api/status/buildinfo; Jaeger's query API has no version: the services it lists, /api/services), a
server without the version endpoint is asked whether it is ready instead (Loki /ready, Tempo
/api/echo), the label naming a service has values in its data (Prometheus, Loki), the runbooks are indexed (how
many), each role's model has its key and answers a one-token call (skipped with
`model_call=False`), and the trace store's schema is one this evcli reads and SQLite's quick_check finds
every page sound (read only: the check never creates, migrates or writes the store), and whether the
Gatekeeper runs compiled (evcli/native.py) or as Python, and why. A snapshot
environment is checked to exist instead of backends.

Invariants: a check never raises; what fails is a `fail` row with the remedy in plain words. No
secret is ever in a row: keys and tokens are named by their variable, never shown. The backend
and model checks run in parallel threads, so the whole takes about as long as the slowest one.
litellm is imported only for a hosted provider without an OpenAI-compatible endpoint, and only
when a model call is made.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

from evcli.config.model import ModelSettings, Settings
from evcli.contracts import BackendSpec

Status = Literal["ok", "warn", "fail", "skip"]
DEFAULT_SERVICE_LABEL = "service"
LABEL_CANDIDATES = ("service", "app", "job", "app.kubernetes.io/name", "service_name", "container")
OPENAI_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class CheckRow:
    check: str  # what was checked: "prometheus", "prometheus service label", "runbooks", "model planner"
    target: str  # the URL, directory or model it was checked at
    status: Status
    detail: str  # version and latency, count, or what went wrong
    remedy: str = ""  # what to do about a failure

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class _Probe:
    version_path: str
    describe: Callable[[Any], str]  # the answer as the row states it: "version 2.53.0", "3 services: a, b, c"
    labels_path: str | None = None  # "{label}" is replaced: the label's values
    ready_path: str | None = None  # asked when the version path is not found (an older server)


def _version(*keys: str) -> Callable[[Any], str]:
    """`version X` read from the answer at `keys` (`data`, `version`)."""

    def describe(body: Any) -> str:
        for key in keys:
            body = body[key]
        return f"version {body}"

    return describe


def _services(body: Any) -> str:
    """Jaeger's `{"data": [service, …]}` as `3 services: a, b, c`."""
    names = [str(name) for name in body["data"] or []]
    return f"{len(names)} services: " + (", ".join(names[:5]) + (", …" if len(names) > 5 else "") or "-")


PROBES: dict[str, _Probe] = {
    "prometheus": _Probe("/api/v1/status/buildinfo", _version("data", "version"), "/api/v1/label/{label}/values"),
    "alertmanager": _Probe("/api/v2/status", _version("versionInfo", "version")),
    "loki": _Probe(
        "/loki/api/v1/status/buildinfo", _version("version"), "/loki/api/v1/label/{label}/values", ready_path="/ready"
    ),
    "jaeger": _Probe("/api/services", _services),
    "tempo": _Probe("/api/status/buildinfo", _version("version"), ready_path="/api/echo"),
}


def run_checks(settings: Settings, *, model_call: bool = True, store: Path | None = None) -> list[CheckRow]:
    """Every check of `settings`, in a fixed order (environment, backends, runbooks, models, the store at `store`,
    the Gatekeeper's build)."""
    jobs: list[Callable[[], list[CheckRow]]] = []
    backends = {name: backend for name, backend in settings.backends.items() if backend.url}
    if not backends:
        jobs.append(lambda: [_snapshot(settings)])
    for name, backend in backends.items():
        jobs.append(partial(_backend, name, backend.spec(), backend.service_label))
    jobs.append(partial(_runbooks, settings, live=bool(backends)))
    for roles, model in _models_by_settings(settings).items():
        jobs.append(partial(_model, roles, model, model_call))
    if store is not None:
        jobs.append(partial(_store, store))
    with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
        results = list(pool.map(lambda job: job(), jobs))
    return [row for rows in results for row in rows] + [_gatekeeper()]


def broken(rows: list[CheckRow]) -> bool:
    return any(row.status == "fail" for row in rows)


# --- environment and backends ------------------------------------------------------------------


def _snapshot(settings: Settings) -> CheckRow:
    spec = settings.environment_spec()
    from evcli.backends.snapshot import demo_env_dir

    directory = spec.env_dir or demo_env_dir()
    if directory.is_dir():
        return CheckRow("environment", str(directory), "ok", "snapshot directory (no live backend configured)")
    return CheckRow(
        "environment", str(directory), "fail", "no such directory", "set env to a snapshot directory or demo/edge/host"
    )


def _backend(name: str, spec: BackendSpec, service_label: str | None) -> list[CheckRow]:
    import httpx

    if name == "kubernetes":  # a kubeconfig, not a URL: the client's own version call
        return [_kubernetes(spec)]
    probe = PROBES.get(name, _Probe("/", lambda body: "version ?"))
    from evcli.backends.http import MissingSecret, auth_headers

    try:
        headers = auth_headers(spec.auth, spec.headers)
    except MissingSecret as missing:
        return [CheckRow(name, spec.url, "fail", str(missing), missing.remedy)]
    verify: Any = spec.ca_bundle or not spec.insecure_skip_verify
    try:
        with httpx.Client(
            base_url=spec.url.rstrip("/"), headers=headers, timeout=spec.timeout, verify=verify
        ) as client:
            reached = _reach(name, spec.url, client, probe)
            rows = [reached]
            if reached.status == "ok" and probe.labels_path:
                rows.append(_service_label(name, spec.url, client, probe, service_label))
            return rows
    except (OSError, ValueError) as exc:  # a CA bundle that cannot be read, a malformed URL
        return [CheckRow(name, spec.url, "fail", _one_line(exc), "check ca_bundle and the URL")]


def _kubernetes(spec: BackendSpec) -> CheckRow:
    from evcli.backends.kubernetes import build
    from evcli.core.errors import BackendError

    started = time.perf_counter()
    try:
        build(spec).probe()
    except BackendError as exc:
        return CheckRow("kubernetes", spec.url, "fail", _one_line(exc), "check --kubeconfig and the cluster's address")
    except ImportError:
        return CheckRow(
            "kubernetes", spec.url, "fail", "the kubernetes client is not installed", "pip install 'evcli[k8s]'"
        )
    return CheckRow("kubernetes", spec.url, "ok", f"version answered, {(time.perf_counter() - started) * 1000:.0f} ms")


def _reach(name: str, url: str, client: Any, probe: _Probe) -> CheckRow:
    import httpx

    started = time.perf_counter()
    try:
        response = client.get(probe.version_path)
        latency = f"{(time.perf_counter() - started) * 1000:.0f} ms"
        if response.status_code in (401, 403):
            return CheckRow(name, url, "fail", f"HTTP {response.status_code}", f"check [backends.{name}.auth]")
        if response.status_code == 404 and probe.ready_path:
            return _ready(name, url, client, probe.ready_path, started)
        response.raise_for_status()
        return CheckRow(name, url, "ok", f"{probe.describe(response.json())}, {latency}")
    except httpx.TimeoutException:
        return CheckRow(name, url, "fail", f"timed out after {client.timeout.read}s", _reach_remedy(name))
    except httpx.ConnectError as exc:
        tls = "certificate" in str(exc).lower() or "ssl" in str(exc).lower()
        remedy = "set ca_bundle (or insecure_skip_verify = true)" if tls else _reach_remedy(name)
        return CheckRow(name, url, "fail", _one_line(exc) or "connection failed", remedy)
    except httpx.HTTPStatusError as exc:
        return CheckRow(name, url, "fail", f"HTTP {exc.response.status_code}", f"is {url} a {name} server?")
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        return CheckRow(name, url, "fail", f"unexpected answer: {_one_line(exc)}", f"is {url} a {name} server?")


def _ready(name: str, url: str, client: Any, path: str, started: float) -> CheckRow:
    """A server without the version endpoint: its readiness path says it answers, without a version."""
    response = client.get(path)
    latency = f"{(time.perf_counter() - started) * 1000:.0f} ms"
    if response.status_code == 200:
        return CheckRow(name, url, "ok", f"ready (version unknown), {latency}")
    return CheckRow(
        name, url, "fail", f"{path} answered HTTP {response.status_code}", f"wait for {name.capitalize()} to be ready"
    )


def _reach_remedy(name: str) -> str:
    return f"start {name} or fix backends.{name}.url (EVCLI_{name.upper()}, --{name})"


def _service_label(name: str, url: str, client: Any, probe: _Probe, configured: str | None) -> CheckRow:
    label = configured or DEFAULT_SERVICE_LABEL
    check = f"{name} service label"
    try:
        response = client.get(str(probe.labels_path).format(label=label))
        response.raise_for_status()
        values = [str(value) for value in response.json().get("data") or []]
    except Exception as exc:  # noqa: BLE001 - a check never raises; the row says what happened
        return CheckRow(check, label, "fail", f"cannot list its values: {_one_line(exc)}", "check the backend")
    if values:
        shown = ", ".join(values[:5]) + (", …" if len(values) > 5 else "")
        return CheckRow(check, label, "ok", f"{len(values)} services: {shown}")
    others = _label_candidates(client, probe, label)
    hint = f" (labels here: {', '.join(others)})" if others else ""
    return CheckRow(
        check, label, "fail", f"no data carries the label {label!r}", f"set backends.{name}.service_label{hint}"
    )


def _label_candidates(client: Any, probe: _Probe, label: str) -> list[str]:
    """The usual service-naming labels the backend does have values for."""
    found = []
    for candidate in LABEL_CANDIDATES:
        if candidate == label:
            continue
        try:
            if client.get(str(probe.labels_path).format(label=candidate)).json().get("data"):
                found.append(candidate)
        except Exception:  # noqa: BLE001 - only a suggestion
            continue
    return found


# --- runbooks ------------------------------------------------------------------------------------


def _runbooks(settings: Settings, *, live: bool) -> list[CheckRow]:
    directories = [Path(directory) for directory in settings.runbooks]
    if not directories:
        if live:
            return [
                CheckRow(
                    "runbooks", "-", "warn", "no runbooks configured", 'set runbooks = ["DIR"] (or --runbooks DIR)'
                )
            ]
        directories = settings.environment_spec().knowledge_dirs()
    return [_runbook_dir(directory) for directory in directories]


def _runbook_dir(directory: Path) -> CheckRow:
    from evcli.backends.registry import Capability, providers

    if not directory.is_dir():
        return CheckRow("runbooks", str(directory), "fail", "no such directory", "fix runbooks in the configuration")
    local = next(kind for kind in providers(Capability.KNOWLEDGE) if not kind.url_option)
    try:
        count = len(local.build(BackendSpec(url=str(directory))).skills())
    except Exception as exc:  # noqa: BLE001 - a check never raises
        return CheckRow("runbooks", str(directory), "fail", _one_line(exc), "add Markdown runbooks to the directory")
    return CheckRow("runbooks", str(directory), "ok" if count else "warn", f"{count} runbooks indexed")


def _gatekeeper() -> CheckRow:
    """Whether the Gatekeeper runs as compiled at install (evcli/native.py), and why not."""
    from evcli import native

    reason = native.why_not_active()
    target = str(native.DIR)
    if reason is None:
        return CheckRow("gatekeeper", target, "ok", f"compiled ({len(native.MODULES)} modules)")
    if reason.startswith("EVCLI_NATIVE"):
        return CheckRow("gatekeeper", target, "skip", f"pure Python ({reason})")
    remedy = "reinstall evcli (pip install .) where a C compiler is: gating then takes about a quarter less CPU"
    return CheckRow("gatekeeper", target, "warn", f"pure Python: {reason}", remedy)


# --- the trace store -------------------------------------------------------------------------------


def _store(path: Path) -> list[CheckRow]:
    return [_store_row(path)]


def _store_row(path: Path) -> CheckRow:
    from evcli.store.health import SCHEMA_VERSION, inspect

    if not path.exists():
        return CheckRow("store", str(path), "skip", "no store yet: the first `evcli ask` creates it")
    try:
        health = inspect(path)
    except Exception as exc:  # noqa: BLE001 - a check never raises
        return CheckRow("store", str(path), "fail", f"cannot read it: {_one_line(exc)}", "check the file and --db")
    schema = f"schema {health.schema_version}"
    if health.newer:
        detail = f"written by a newer evcli ({schema}); this evcli reads schema {SCHEMA_VERSION} and older"
        return CheckRow("store", str(path), "fail", detail, "upgrade evcli")
    if health.schema_version < SCHEMA_VERSION:
        schema += f" (migrated to {SCHEMA_VERSION} when next opened)"
    if health.problems:
        found = "; ".join(" ".join(problem.split()) for problem in health.problems)
        return CheckRow(
            "store",
            str(path),
            "fail",
            f"{schema}; quick_check failed: {found}"[:600],
            "restore it from a backup; sessions in the damaged pages may be incomplete or unreadable",
        )
    return CheckRow("store", str(path), "ok", f"{schema}, quick_check ok, {path.stat().st_size / 2**20:.1f} MiB")


# --- models ----------------------------------------------------------------------------------------


def _models_by_settings(settings: Settings) -> dict[str, ModelSettings]:
    """Roles sharing one model configuration are checked once: "planner, executor" -> settings."""
    grouped: dict[ModelSettings, list[str]] = {}
    for role, model in settings.models.roles().items():
        grouped.setdefault(model, []).append(role)
    return {", ".join(roles): model for model, roles in grouped.items()}


def _model(roles: str, model: ModelSettings, call: bool) -> list[CheckRow]:
    import importlib.util

    from evcli.agents.preflight import INSTALL_HINT, key_variable, local_server

    check = f"model {roles}"
    if model.offline:
        return [CheckRow(check, "offline", "ok", "offline engine: no key, no server")]
    variable = key_variable(model.model, model.api_base)
    if variable and not os.environ.get(variable):
        return [CheckRow(check, model.model, "fail", f"{variable} is not set", f"export {variable}=...")]
    key_note = f"key in {variable}" if variable else "no key needed"
    server = local_server(model.model, model.api_base)
    if server is None and not model.model.startswith("openai/") and importlib.util.find_spec("litellm") is None:
        return [CheckRow(check, model.model, "fail", f"{key_note}; the llm extra is not installed", INSTALL_HINT)]
    if not call:
        return [CheckRow(check, model.model, "skip", f"{key_note}; no call made (--no-model-call)")]
    started = time.perf_counter()
    try:
        _one_token_call(model, server, variable)
    except Exception as exc:  # noqa: BLE001 - a check never raises
        where = server or model.model
        return [CheckRow(check, model.model, "fail", f"{key_note}; {_one_line(exc)}", f"check the model and {where}")]
    latency = f"{(time.perf_counter() - started) * 1000:.0f} ms"
    return [CheckRow(check, model.model, "ok", f"{key_note}; answered a one-token call in {latency}")]


def _one_token_call(model: ModelSettings, server: str | None, variable: str | None) -> None:
    """One chat completion of at most one token: plain HTTP to an OpenAI-compatible endpoint, else litellm."""
    provider, _, name = model.model.partition("/")
    if server is None and provider != "openai":
        import litellm

        litellm.completion(
            model=model.model, messages=[{"role": "user", "content": "ping"}], max_tokens=1, timeout=model.timeout
        )
        return
    import httpx

    base = (server or OPENAI_URL).rstrip("/")
    if provider in ("ollama", "ollama_chat") and not model.api_base:
        base += "/v1"
    headers = {"Authorization": f"Bearer {os.environ[variable]}"} if variable and os.environ.get(variable) else {}
    body = {
        "model": name or model.model,
        "messages": [{"role": "user", "content": "ping"}],
        "max_tokens": 1,
    }
    response = httpx.post(f"{base}/chat/completions", json=body, headers=headers, timeout=min(model.timeout, 30))
    if response.status_code >= 400:
        raise RuntimeError(f"{base} answered HTTP {response.status_code}: {_error_text(response)}")
    if "choices" not in response.json():
        raise RuntimeError(f"{base} did not answer with a chat completion")


def _error_text(response: Any) -> str:
    try:
        return str(response.json()["error"]["message"])[:200]
    except Exception:  # noqa: BLE001 - any body: show its start
        return response.text[:200]


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]
