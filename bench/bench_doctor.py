#!/usr/bin/env python
"""`evcli doctor` on a healthy local stack (issue 12 target: <= 2 s).

    python bench/bench_doctor.py [runs]

Starts a real Prometheus (scraping itself every second, so its `job` label has values) and a real
Alertmanager on 127.0.0.1, and the scripted OpenAI-compatible model server of the tests; then times
the whole `evcli doctor` process (start-up included, as a user waits for it) with the model call and
with `--no-model-call`. Prints one JSON object: the timings, the rows of the last run, the target.
The processes are terminated at the end.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _common import REPO, as_installed, log, timing

sys.path.insert(0, str(REPO))  # the scripted model server of the tests

from tests.agents.scripted_server import ScriptedServer, answer  # noqa: E402

TARGET_S = 2.0


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(argv: list[str], workdir: Path, name: str) -> subprocess.Popen:
    output = (workdir / f"{name}.log").open("wb")
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT, cwd=workdir)


def _wait_ready(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/-/ready", timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{url} did not become ready")


def _wait_until_scraped(url: str) -> None:
    """Until the `job` label has values (Prometheus has scraped itself)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with urllib.request.urlopen(url + "/api/v1/label/job/values", timeout=1) as response:
            if json.load(response)["data"]:
                return
        time.sleep(0.5)
    raise SystemExit(f"{url} has no job label values after 30 s")


def _stack(workdir: Path) -> tuple[list[subprocess.Popen], str, str]:
    prometheus_port, alertmanager_port = _port(), _port()
    prometheus_url, alertmanager_url = f"http://127.0.0.1:{prometheus_port}", f"http://127.0.0.1:{alertmanager_port}"
    (workdir / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: prometheus\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{prometheus_port}']\n"
    )
    (workdir / "alertmanager.yml").write_text("route:\n  receiver: discard\nreceivers:\n  - name: discard\n")
    alertmanager = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager") or "alertmanager"
    processes = [
        _start(
            [
                shutil.which("prometheus") or "prometheus",
                f"--config.file={workdir / 'prometheus.yml'}",
                f"--storage.tsdb.path={workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{prometheus_port}",
            ],
            workdir,
            "prometheus",
        ),
        _start(
            [
                alertmanager,
                f"--config.file={workdir / 'alertmanager.yml'}",
                f"--storage.path={workdir / 'am'}",
                f"--web.listen-address=127.0.0.1:{alertmanager_port}",
                "--cluster.listen-address=",
            ],
            workdir,
            "alertmanager",
        ),
    ]
    _wait_ready(prometheus_url)
    _wait_ready(alertmanager_url)
    _wait_until_scraped(prometheus_url)
    return processes, prometheus_url, alertmanager_url


def _doctor(args: list[str], home: Path) -> tuple[float, subprocess.CompletedProcess]:
    env = {"EVCLI_HOME": str(home), "PATH": "/usr/bin:/bin", "HOME": str(home)}
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "evcli", "doctor", *args], capture_output=True, text=True, env=env
    )
    return time.perf_counter() - started, completed


def main() -> None:
    as_installed()
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        log("starting Prometheus and Alertmanager")
        processes, prometheus_url, alertmanager_url = _stack(workdir)
        try:
            with ScriptedServer(lambda body: answer("ok")) as model:
                config = workdir / "evcli.toml"
                config.write_text(
                    f'runbooks = ["{REPO / "evcli" / "demo"}"]\n'
                    f'[backends.prometheus]\nurl = "{prometheus_url}"\nservice_label = "job"\n'
                    f'[backends.alertmanager]\nurl = "{alertmanager_url}"\n'
                    f'[models]\ndefault = "openai/scripted"\napi_base = "{model.url}"\n'
                )
                base = ["--config", str(config), "--json"]
                _doctor(base, workdir)  # first run: bytecode and the runbooks index are written
                timings: dict[str, list[float]] = {"with_model_call": [], "no_model_call": []}
                for _ in range(runs):
                    for name, extra in (("with_model_call", []), ("no_model_call", ["--no-model-call"])):
                        seconds, completed = _doctor(base + extra, workdir)
                        if completed.returncode != 0:
                            raise SystemExit(f"doctor failed:\n{completed.stdout}\n{completed.stderr}")
                        timings[name].append(seconds)
                log(f"{runs} runs each")
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=10)
    result = {
        "target_s": TARGET_S,
        "whole_process": {name: timing(samples) for name, samples in timings.items()},
        "met": max(max(samples) for samples in timings.values()) <= TARGET_S,
        "checks": json.loads(completed.stdout)["checks"],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
