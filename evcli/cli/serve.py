"""`evcli serve`: receive Alertmanager webhooks, diagnose each firing alert, serve the store as web pages.

Starlette on uvicorn, not the stdlib's http.server: diagnoses run in worker processes, so the web process
only parses, enqueues and renders, and an event loop keeps POST /alerts fast while the queue is busy;
uvicorn gives graceful shutdown on SIGTERM, HTTP/1.1 keep-alive (Alertmanager reuses connections) and
request parsing that is maintained and fuzzed upstream, which a hand-written BaseHTTPRequestHandler is not.
A bind beyond loopback without a token is refused (exit 2): anyone who can reach the port could queue
diagnoses and read every stored session. There is no opt-out: Alertmanager sends a bearer token with
`http_config.authorization`, and a proxy that does its own auth can reach evcli on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evcli.cli._common import (
    DbOption,
    bearer_token,
    environment_options,
    err,
    handles_errors,
    loopback,
    open_store,
    print_json,
)
from evcli.cli.ask import ApiBaseOption, MaxStepsOption, ModelOption, RulesOption, _models
from evcli.core.errors import BadInput

if TYPE_CHECKING:
    from evcli.backends.spec import EnvironmentSpec
    from evcli.config import Loaded


@handles_errors
@environment_options()
def serve_command(
    once: Annotated[
        Path | None,
        typer.Option(
            "--once",
            dir_okay=False,
            help="Process this alert file through the queue, then exit: a webhook payload, or any alerts.json evcli reads.",
        ),
    ] = None,
    listen: Annotated[
        str, typer.Option("--listen", help="HOST:PORT to bind; beyond loopback it needs --token-env.")
    ] = ("127.0.0.1:9099"),
    workers: Annotated[int, typer.Option("--workers", min=1, help="Diagnoses run at the same time.")] = 1,
    max_queue: Annotated[
        int, typer.Option("--max-queue", min=1, help="Alerts waiting at most; beyond, POST /alerts answers 503.")
    ] = 1000,
    repeat_interval: Annotated[
        str, typer.Option("--repeat-interval", help="A firing alert delivered again within this is a duplicate.")
    ] = "4h",
    token_env: Annotated[
        str | None, typer.Option("--token-env", help="Require the bearer token held in this environment variable.")
    ] = None,
    notify_url: Annotated[
        str | None, typer.Option("--notify-url", help="POST each finished report (Markdown brief) to this webhook.")
    ] = None,
    notify_timeout: Annotated[
        str, typer.Option("--notify-timeout", help="Deadline of each notification, connect to last byte.")
    ] = "30s",
    notify_format: Annotated[
        str,
        typer.Option(
            "--notify-format",
            help="md: JSON with the Markdown brief as text (most chat webhooks); slack: Block Kit text and blocks.",
        ),
    ] = "md",
    max_queue_age: Annotated[
        str,
        typer.Option("--max-queue-age", help="GET /healthz answers 503 once the oldest queued alert waited longer."),
    ] = "10m",
    *,
    environment: EnvironmentSpec,
    model: ModelOption = None,
    api_base: ApiBaseOption = None,
    rules: RulesOption = None,
    max_steps: MaxStepsOption = 8,
    db: DbOption = None,
    settings: Loaded = None,  # type: ignore[assignment]  # filled by the environment options
) -> None:
    """Diagnose every firing alert Alertmanager sends (webhook_configs url: http://HOST:PORT/alerts)."""
    from evcli.core.paths import default_db_path
    from evcli.serve import ServeConfig, WorkerSpec, log_to_stderr

    if notify_format not in ("md", "slack"):
        raise BadInput(f"--notify-format must be md or slack, not {notify_format!r}")
    host, port = _listen(listen)
    token = bearer_token(token_env) if token_env else None
    if once is None and token is None and not loopback(host):
        raise BadInput(
            f"--listen {listen} accepts connections from other hosts, so it needs a token: add --token-env NAME",
            hint="or listen on 127.0.0.1 behind a proxy that authenticates",
        )
    models = _models(settings, model, None, None, None, None, api_base)
    models.check()
    store = open_store(db)
    spec = WorkerSpec(
        db=str(db or default_db_path()),
        models=models,
        env_config=environment.as_config(),
        rules=str(rules) if rules else None,
        max_steps=max_steps,
        notify_url=notify_url,
        notify_timeout_s=_seconds("--notify-timeout", notify_timeout),
        notify_format=notify_format,
    )
    config = ServeConfig(
        spec,
        max_queue=max_queue,
        repeat_interval_s=_seconds("--repeat-interval", repeat_interval),
        token=token,
        max_queue_age_s=_seconds("--max-queue-age", max_queue_age),
    )
    log_to_stderr()
    from evcli.serve.worker import requeue_orphans

    requeue_orphans(store)
    if once is not None:
        _once(once, store, config)
        return
    store.close()  # the server's threads and processes open their own connections
    _run(config, host, port, workers)


def _seconds(option: str, text: str) -> float:
    from evcli.core.time import parse_duration

    try:
        return parse_duration(text).total_seconds()
    except BadInput as exc:
        raise BadInput(f"{option}: {exc.message}") from exc


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadInput(f"--listen must look like HOST:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def _once(payload: Path, store, config) -> None:
    from evcli.core.userfiles import ALERT_PAYLOAD, read_input
    from evcli.serve.queue import accept, as_delivery, read_delivery
    from evcli.serve.worker import build_pipeline, drain

    delivery = as_delivery(read_delivery(read_input(payload, ALERT_PAYLOAD)), payload.name)
    counts = accept(store, delivery, max_queue=config.max_queue, repeat_interval_s=config.repeat_interval_s)
    if counts is None:
        raise BadInput(f"the queue is full ({config.max_queue} alerts); raise --max-queue")
    finished = drain(build_pipeline(config.worker, store), config.worker)
    print_json({**counts, "diagnosed": [_summary(item) for item in finished]})


def _summary(item: dict) -> dict:
    keys = ("alertname", "fingerprint", "session_id", "verdict", "error", "duration_s")
    return {key: item.get(key) for key in keys}


def _run(config, host: str, port: int, workers: int) -> None:
    from evcli.serve.app import run
    from evcli.serve.supervisor import Supervisor

    supervisor = Supervisor(config.worker, workers, config.max_queue_age_s)
    supervisor.start()
    where = (
        "loopback only; --listen 0.0.0.0:PORT --token-env NAME to accept other hosts"
        if loopback(host)
        else "reachable from other hosts"
    )
    err.print(
        f"evcli serve listening on http://{host}:{port} ({where}); {workers} worker(s); "
        f"store {config.worker.db}; token {'required' if config.token else 'not required'}",
        highlight=False,
    )
    try:
        run(config, supervisor, host, port)
    finally:
        supervisor.stop()  # when uvicorn returns instead (it could not bind, say); a no-op after its shutdown
