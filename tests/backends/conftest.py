"""Real Prometheus and Alertmanager processes on 127.0.0.1, and a scripted Loki, for the backend tests.

Prometheus gets two hours of history by backfilling generated OpenMetrics text with
`promtool tsdb create-blocks-from openmetrics`, then keeps `cpu_usage_percent` of
payment-service current by scraping a loopback exporter every second. Its rules fire
`HighCPUUsage` within seconds and send it to the test Alertmanager, which also gets two
alerts posted directly: one started 65 minutes ago and one that a silence suppresses.
Each process is started once per session and terminated at teardown.
"""

from __future__ import annotations

import json
import math
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

INSTALL_HINT = "apt-get install prometheus prometheus-alertmanager"
READY_TIMEOUT = 30  # seconds, for a process to answer /-/ready and for an alert to arrive
HISTORY = timedelta(hours=2)

PAYMENT_CPU = 'cpu_usage_percent{instance="payment-7f9c:8080",job="payment",service="payment-service",unit="%"}'
ORDER_HEAP = 'jvm_heap_used_bytes{instance="order-5d8b:8080",job="order",service="order-service"}'
ORDER_QUEUE = 'queue_depth{instance="order-5d8b:8080",job="order",service="order-service"}'
HEAP_BYTES = 1_234_567_890

RULES = """\
groups:
  - name: evcli-test
    interval: 1s
    rules:
      - alert: HighCPUUsage
        expr: cpu_usage_percent > 80
        labels:
          severity: critical
        annotations:
          summary: "CPU usage on {{ $labels.service }} is {{ $value }}%"
          unit: "%"
          value: "{{ $value }}"
      - alert: HeapAlmostFull
        expr: jvm_heap_used_bytes > 1e9
        for: 1h
        labels:
          severity: warning
        annotations:
          summary: "Heap of {{ $labels.service }} above 1 GB"
"""

ALERTMANAGER_CONFIG = """\
route:
  receiver: discard
  group_wait: 1s
receivers:
  - name: discard
"""


@dataclass
class Service:
    url: str
    process: subprocess.Popen
    log: Path


def cpu_percent(minutes_before_end: int) -> float:
    """Flat at 40 %, then a ramp over the last 20 minutes to 92 %."""
    return 40.0 if minutes_before_end >= 20 else 92.0 - 2.6 * minutes_before_end


def queue_depth(minutes_before_end: int) -> float:
    """5, with a dip to 3 sixteen minutes and a spike to 17 ten minutes before the end; NaN every odd minute."""
    if minutes_before_end % 2:
        return math.nan
    return {16: 3.0, 10: 17.0}.get(minutes_before_end, 5.0)


def openmetrics_history(end: int) -> str:
    """One sample a minute for the two hours up to `end` (Unix seconds), as OpenMetrics text."""
    minutes = range(int(HISTORY.total_seconds()) // 60, -1, -1)
    families = [
        ("cpu_usage_percent", PAYMENT_CPU, cpu_percent),
        ("jvm_heap_used_bytes", ORDER_HEAP, lambda _: float(HEAP_BYTES)),
        ("queue_depth", ORDER_QUEUE, queue_depth),
    ]
    lines = []
    for family, series, value_at in families:
        lines.append(f"# TYPE {family} gauge")
        lines += [f"{series} {_sample(value_at(before))} {end - 60 * before}" for before in minutes]
    return "\n".join([*lines, "# EOF", ""])


def _sample(value: float) -> str:
    return "NaN" if math.isnan(value) else repr(value)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fetch_json(url: str, body: Any = None) -> Any:
    """GET (or POST `body` as JSON) for the fixtures' own set-up, independent of the code under test."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read() or b"null")


def wait_until(condition: Callable[[], bool], what: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"process exited with {process.returncode} while waiting for {what}:\n{_tail(log)}")
        try:
            if condition():
                return
        except OSError:
            pass  # not listening yet
        time.sleep(0.2)
    pytest.fail(f"timed out after {READY_TIMEOUT}s waiting for {what}:\n{_tail(log)}")


def _tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def _require(binary: str) -> str:
    path = shutil.which(binary)
    if path is None:
        pytest.fail(f"{binary} is not installed; the backend tests run real processes: {INSTALL_HINT}", pytrace=False)
    return path


def _bound_to_us(argv: list[str]) -> list[str]:
    """Have the kernel send SIGTERM to the process if pytest dies, so none outlives a killed run."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv and sys.platform.startswith("linux") else argv


def _ready(url: str) -> bool:
    with urllib.request.urlopen(url + "/-/ready", timeout=2) as response:
        return response.status == 200


@pytest.fixture(scope="session")
def start_process(tmp_path_factory) -> Iterator[Callable[..., tuple[subprocess.Popen, Path]]]:
    """Start a command with its output in a log file; every one started is terminated at teardown."""
    started: list[subprocess.Popen] = []

    def start(argv: list[str], name: str) -> tuple[subprocess.Popen, Path]:
        log = tmp_path_factory.mktemp(name) / "output.log"
        with log.open("wb") as output:
            process = subprocess.Popen(
                _bound_to_us(argv), stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT
            )
        started.append(process)
        return process, log

    yield start
    for process in started:
        process.terminate()
    for process in started:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def metrics_exporter() -> Iterator[str]:
    """A loopback target serving payment-service's current CPU, scraped by Prometheus every second."""
    exposition = f"# TYPE cpu_usage_percent gauge\n{PAYMENT_CPU} 92\n".encode()

    class Exporter(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(exposition)))
            self.end_headers()
            self.wfile.write(exposition)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Exporter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def alertmanager(start_process, tmp_path_factory) -> Service:
    return start_alertmanager(start_process, tmp_path_factory.mktemp("alertmanager"), ALERTMANAGER_CONFIG)


def start_alertmanager(start_process, home: Path, config: str, log_name: str = "alertmanager-log") -> Service:
    """A real Alertmanager on a free loopback port with `config` as its alertmanager.yml, once ready."""
    binary = _require("prometheus-alertmanager")
    (home / "alertmanager.yml").write_text(config)
    port = free_port()
    process, log = start_process(
        [
            binary,
            f"--config.file={home / 'alertmanager.yml'}",
            f"--storage.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        log_name,
    )
    url = f"http://127.0.0.1:{port}"
    wait_until(lambda: _ready(url), "Alertmanager to be ready", process, log)
    return Service(url, process, log)


@pytest.fixture(scope="session")
def prometheus(start_process, tmp_path_factory, alertmanager, metrics_exporter) -> Service:
    """Prometheus with backfilled history, a live scrape, and HighCPUUsage firing."""
    binary, promtool = _require("prometheus"), _require("promtool")
    home = tmp_path_factory.mktemp("prometheus")
    history = home / "history.om"
    history.write_text(openmetrics_history(int(time.time())))
    backfill = subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(history), str(home / "data")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert backfill.returncode == 0, f"promtool backfill failed:\n{backfill.stdout}{backfill.stderr}"
    (home / "rules.yml").write_text(RULES)
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(home / "rules.yml")],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [alertmanager.url.split("//")[1]]}]}]},
        # honor_labels keeps the exported job/instance, so scraped samples extend the backfilled series.
        "scrape_configs": [
            {
                "job_name": "exporter",
                "honor_labels": True,
                "static_configs": [{"targets": [metrics_exporter]}],
            }
        ],
    }
    (home / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    port = free_port()
    process, log = start_process(
        [
            binary,
            f"--config.file={home / 'prometheus.yml'}",
            f"--storage.tsdb.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            # Alertmanager is discovered a few seconds after the first evaluation: resend soon.
            "--rules.alert.resend-delay=1s",
        ],
        "prometheus-log",
    )
    url = f"http://127.0.0.1:{port}"
    wait_until(lambda: _ready(url), "Prometheus to be ready", process, log)

    def cpu_alert_firing() -> bool:
        alerts = fetch_json(url + "/api/v1/alerts")["data"]["alerts"]
        return any(a["labels"]["alertname"] == "HighCPUUsage" and a["state"] == "firing" for a in alerts)

    wait_until(cpu_alert_firing, "HighCPUUsage to fire in Prometheus", process, log)
    return Service(url, process, log)


@pytest.fixture(scope="session")
def alertmanager_with_alerts(alertmanager, prometheus) -> Service:
    """Alertmanager holding HighCPUUsage from Prometheus, a 65-minute-old alert and a silenced one."""
    now = datetime.now(UTC)

    def iso(moment: datetime) -> str:
        return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")

    posted = [
        {
            "labels": {
                "alertname": "DiskWillFillIn4Hours",
                "service": "order-service",
                "instance": "order-5d8b:8080",
                "severity": "warning",
            },
            "annotations": {"summary": "Disk of order-service 87.5% full", "current": "87.5", "unit": "%"},
            "startsAt": iso(now - timedelta(minutes=65, seconds=20)),
            "endsAt": iso(now + timedelta(hours=1)),
        },
        {
            "labels": {"alertname": "NoisyBatchJob", "job": "batch-runner", "severity": "info"},
            "annotations": {"summary": "Batch job retried"},
            "startsAt": iso(now - timedelta(minutes=3)),
            "endsAt": iso(now + timedelta(hours=1)),
        },
    ]
    fetch_json(alertmanager.url + "/api/v2/alerts", posted)
    fetch_json(
        alertmanager.url + "/api/v2/silences",
        {
            "matchers": [{"name": "alertname", "value": "NoisyBatchJob", "isRegex": False, "isEqual": True}],
            "startsAt": iso(now - timedelta(minutes=1)),
            "endsAt": iso(now + timedelta(hours=1)),
            "createdBy": "evcli tests",
            "comment": "known noise",
        },
    )

    def all_arrived() -> bool:
        states = {
            a["labels"]["alertname"]: a["status"]["state"] for a in fetch_json(alertmanager.url + "/api/v2/alerts")
        }
        return (
            states.get("HighCPUUsage") == "active"
            and states.get("DiskWillFillIn4Hours") == "active"
            and states.get("NoisyBatchJob") == "suppressed"
        )

    wait_until(all_arrived, "HighCPUUsage to reach Alertmanager", alertmanager.process, alertmanager.log)
    return alertmanager


# --- a scripted Loki ---------------------------------------------------------------------------


@dataclass
class ScriptedLoki:
    """Answers `/loki/api/v1/query_range` as told and records what it was asked."""

    url: str = ""
    status: int = 200
    body: Any = None  # JSON-able answer, or bytes sent as they are
    hang: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def answer_streams(self, streams: list[dict[str, Any]]) -> None:
        self.body = {"status": "success", "data": {"resultType": "streams", "result": streams}}

    @property
    def last_params(self) -> dict[str, str]:
        return self.requests[-1]["params"]

    def reset(self) -> None:
        self.release.set()  # let any hanging handler finish
        self.status, self.hang, self.requests[:] = 200, False, []
        self.release = threading.Event()
        self.answer_streams([])


@pytest.fixture(scope="session")
def _loki_server() -> Iterator[ScriptedLoki]:
    script = ScriptedLoki()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            target = urllib.parse.urlsplit(self.path)
            script.requests.append(
                {
                    "path": target.path,
                    "params": dict(urllib.parse.parse_qsl(target.query)),
                    "authorization": self.headers.get("Authorization"),
                }
            )
            if script.hang:
                script.release.wait(READY_TIMEOUT)
                return
            if target.path != "/loki/api/v1/query_range":
                self._send(404, b"404 page not found")
            elif script.status != 200:
                self._send(script.status, b"internal error: querier unavailable\n")
            else:
                body = script.body if isinstance(script.body, bytes) else json.dumps(script.body).encode()
                self._send(200, body)

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    script.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield script
    script.release.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def loki(_loki_server) -> Iterator[ScriptedLoki]:
    _loki_server.reset()
    yield _loki_server
    _loki_server.reset()


@pytest.fixture
def closed_url() -> str:
    """A loopback URL nothing listens on: connections are refused at once."""
    return f"http://127.0.0.1:{free_port()}"


# --- a Prometheus scraping itself and a shop target (issue 26: Prometheus as it is queried) ----------------

# Counters grow by a fixed amount a scrape (one a second), so their rate follows Prometheus' own scrape times and
# not when the exporter happened to answer: shop_orders_total grows this much a scrape per status.
SHOP_ORDERS_PER_S = {"ok": 5.0, "failed": 1.0}
SHOP_QUEUES = ("email", "payments", "search")  # shop_queue_depth label sets
# shop_request_seconds: per second, how many requests of each path ended within each bucket (cumulative)
SHOP_BUCKETS = (0.1, 0.5, 1.0)
SHOP_REQUESTS_PER_S = {"/checkout": (6.0, 9.0, 10.0), "/search": (10.0, 10.0, 10.0)}


def queue_depth_at(queue: str, scrape: int) -> float:
    """email stays at 3; payments climbs 7, 8, … 11 and starts again; search goes 12, 13, 12, …"""
    return {"email": 3.0, "payments": 7.0 + scrape % 5, "search": 12.0 + scrape % 2}[queue]


def shop_exposition(scrape: int) -> str:
    """The shop's /metrics page at its `scrape`th scrape, in the Prometheus text format: counters that grow
    with each scrape, a gauge with several label sets, a counter without the `_total` suffix, a gauge with
    it, and a histogram."""
    elapsed = float(scrape)  # seconds at one scrape a second
    lines = ["# HELP shop_orders_total Orders placed.", "# TYPE shop_orders_total counter"]
    lines += [f'shop_orders_total{{status="{status}"}} {rate * elapsed}' for status, rate in SHOP_ORDERS_PER_S.items()]
    lines += ["# HELP shop_queue_depth Messages waiting.", "# TYPE shop_queue_depth gauge"]
    lines += [f'shop_queue_depth{{queue="{queue}"}} {queue_depth_at(queue, scrape)}' for queue in SHOP_QUEUES]
    lines += ["# TYPE shop_bytes_sent counter", f"shop_bytes_sent {1000.0 * elapsed}"]
    lines += ["# TYPE shop_workers_total gauge", "shop_workers_total 4"]
    lines += ["# HELP shop_request_seconds Request latency.", "# TYPE shop_request_seconds histogram"]
    for path, per_bucket in SHOP_REQUESTS_PER_S.items():
        for bound, rate in zip(SHOP_BUCKETS, per_bucket, strict=True):
            lines.append(f'shop_request_seconds_bucket{{path="{path}",le="{bound}"}} {rate * elapsed}')
        lines.append(f'shop_request_seconds_bucket{{path="{path}",le="+Inf"}} {per_bucket[-1] * elapsed}')
        lines.append(f'shop_request_seconds_sum{{path="{path}"}} {0.2 * per_bucket[-1] * elapsed}')
        lines.append(f'shop_request_seconds_count{{path="{path}"}} {per_bucket[-1] * elapsed}')
    return "\n".join([*lines, ""])


@pytest.fixture(scope="session")
def shop_exporter() -> Iterator[str]:
    """A loopback target serving `shop_exposition`, scraped every second."""
    scrapes = [0]

    class Exporter(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            scrapes[0] += 1
            body = shop_exposition(scrapes[0]).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Exporter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def prometheus_scraping(start_process, tmp_path_factory, shop_exporter) -> Service:
    """A second real Prometheus, without history: it scrapes itself (job prometheus, no service label) and
    the shop (job shop, `service="shop"`) every second, and is returned once both have been scraped a few
    times and its metadata knows the shop's metric types."""
    binary = _require("prometheus")
    home = tmp_path_factory.mktemp("prometheus-scraping")
    port = free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [
            {"job_name": "prometheus", "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]},
            {"job_name": "shop", "static_configs": [{"targets": [shop_exporter], "labels": {"service": "shop"}}]},
        ],
    }
    (home / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    process, log = start_process(
        [
            binary,
            f"--config.file={home / 'prometheus.yml'}",
            f"--storage.tsdb.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        "prometheus-scraping-log",
    )
    url = f"http://127.0.0.1:{port}"
    wait_until(lambda: _ready(url), "Prometheus to be ready", process, log)

    def scraped_enough() -> bool:
        counts = fetch_json(url + "/api/v1/query?query=" + urllib.parse.quote("count_over_time(up[1m])"))
        by_job = {result["metric"]["job"]: float(result["value"][1]) for result in counts["data"]["result"]}
        metadata = fetch_json(url + "/api/v1/metadata?metric=shop_request_seconds")["data"]
        return min(by_job.get("prometheus", 0), by_job.get("shop", 0)) >= 5 and bool(metadata)

    wait_until(scraped_enough, "Prometheus to scrape itself and the shop five times", process, log)
    return Service(url, process, log)
