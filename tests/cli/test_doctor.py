"""`evcli doctor` against real Prometheus and Alertmanager processes and the scripted model server."""

from __future__ import annotations

import time

import pytest

from evcli import native
from tests.agents.scripted_server import ScriptedServer, answer, error
from tests.backends.conftest import alertmanager, metrics_exporter, prometheus, start_process  # noqa: F401
from tests.cli._util import evcli
from tests.cli.test_startup import _run, tripwire_litellm  # noqa: F401
from tests.conftest import REPO

DEMO_RUNBOOKS = REPO / "evcli" / "demo"


def _checks(run) -> dict[str, dict]:
    return {check["check"]: check for check in run.json()["checks"]}


def test_a_healthy_stack_is_all_ok_with_versions_latency_and_services(prometheus, alertmanager):  # noqa: F811
    with ScriptedServer([answer("ok")]) as model:
        started = time.perf_counter()
        run = evcli(
            "doctor",
            "--prometheus",
            prometheus.url,
            "--alertmanager",
            alertmanager.url,
            "--runbooks",
            DEMO_RUNBOOKS,
            "--model",
            "openai/scripted",
            "--api-base",
            model.url,
            "--json",
        )
        elapsed = time.perf_counter() - started
        requests = list(model.requests)

    assert run.exit_code == 0, run
    checks = _checks(run)
    assert run.json()["ok"] is True
    assert checks["prometheus"]["status"] == "ok" and checks["prometheus"]["detail"].startswith("version ")
    assert checks["prometheus"]["detail"].endswith(" ms")
    assert checks["alertmanager"]["status"] == "ok" and "version " in checks["alertmanager"]["detail"]
    assert checks["prometheus service label"]["status"] == "ok"
    assert "payment-service" in checks["prometheus service label"]["detail"]
    assert checks["runbooks"]["detail"] == "6 runbooks indexed"
    assert checks["model planner, executor, verifier, composer"]["status"] == "ok"
    assert [body["max_tokens"] for body in requests] == [1]  # one one-token call for the four roles
    assert requests[0]["model"] == "scripted"
    assert elapsed < 2.0


def test_a_label_the_data_lacks_fails_and_names_the_labels_it_has(tmp_path, prometheus):  # noqa: F811
    config = tmp_path / "evcli.toml"
    config.write_text(
        f'runbooks = ["{DEMO_RUNBOOKS}"]\n[backends.prometheus]\nurl = "{prometheus.url}"\nservice_label = "team"\n',
        encoding="utf-8",
    )

    run = evcli("doctor", "--config", config, "--no-model-call")

    assert run.exit_code == 1, run
    line = next(line for line in run.stdout.splitlines() if "service label" in line)
    assert line.startswith("fail prometheus service label team: no data carries the label 'team'")
    assert "set backends.prometheus.service_label (labels here: service, job" in line


def test_unreachable_backends_missing_tokens_and_keys_fail_with_a_remedy(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = tmp_path / "evcli.toml"
    config.write_text(
        '[backends.alertmanager]\nurl = "http://127.0.0.1:9"\n'
        '[backends.prometheus]\nurl = "http://127.0.0.1:9"\n'
        '[backends.prometheus.auth]\nkind = "bearer"\ntoken_env = "EVCLI_TEST_NO_SUCH_TOKEN"\n'
        '[models]\ndefault = "openai/gpt-4o-mini"\n',
        encoding="utf-8",
    )

    run = evcli("doctor", "--config", config, "--json")

    assert run.exit_code == 1, run
    checks = _checks(run)
    assert checks["alertmanager"]["status"] == "fail"
    assert "refused" in checks["alertmanager"]["detail"].lower()
    assert "--alertmanager" in checks["alertmanager"]["remedy"]
    assert checks["prometheus"]["detail"] == "the token is not set ($EVCLI_TEST_NO_SUCH_TOKEN)"
    assert checks["prometheus"]["remedy"] == "export EVCLI_TEST_NO_SUCH_TOKEN=..."
    model = checks["model planner, executor, verifier, composer"]
    assert (model["status"], model["detail"], model["remedy"]) == (
        "fail",
        "OPENAI_API_KEY is not set",
        "export OPENAI_API_KEY=...",
    )
    assert checks["runbooks"]["status"] == "warn"  # live, no runbooks: said, not broken


def test_a_failing_model_server_fails_its_roles_only(monkeypatch):
    monkeypatch.setenv("EVCLI_MODEL", "openai/fine")
    monkeypatch.setenv("EVCLI_VERIFIER_MODEL", "openai/broken")  # the same layer: kept beside EVCLI_MODEL
    script = lambda body: error(500, "model crashed") if body["model"] == "broken" else answer("ok")  # noqa: E731
    with ScriptedServer(script) as model:
        run = evcli("doctor", "--api-base", model.url, "--json")

    assert run.exit_code == 1, run
    checks = _checks(run)
    assert checks["model planner, executor, composer"]["status"] == "ok"
    verifier = checks["model verifier"]
    assert verifier["status"] == "fail" and "HTTP 500: model crashed" in verifier["detail"]


def test_the_key_is_named_never_shown(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-never-shown")

    run = evcli("doctor", "--model", "anthropic/claude-3-5-haiku-latest", "--no-model-call")

    assert run.exit_code == 0, run
    assert "key in ANTHROPIC_API_KEY; no call made (--no-model-call)" in run.stdout
    assert "sk-ant-never-shown" not in run.stdout + run.stderr


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_no_model_call_never_imports_litellm(tripwire_litellm, evcli_home, monkeypatch, json_flag):  # noqa: F811
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")

    completed = _run(
        ["doctor", "--model", "anthropic/claude-3-5-haiku-latest", "--no-model-call", *json_flag],
        tripwire_litellm,
        evcli_home,
    )

    assert "TRIPWIRE" not in completed.stderr
    assert "'litellm'" not in completed.stderr.splitlines()[-1]
    assert completed.returncode == 0, completed.stderr


def test_doctor_sends_the_configured_headers_and_the_token_read_from_its_variable(tmp_path, monkeypatch):
    """A loopback Loki that answers only with the tenant header and the bearer token."""
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen: list[dict[str, str]] = []

    class Loki(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append({"path": self.path, **{key.lower(): value for key, value in self.headers.items()}})
            allowed = (
                self.headers.get("X-Scope-OrgID") == "team-a" and self.headers.get("Authorization") == "Bearer t0k"
            )
            paths = {
                "/loki/api/v1/status/buildinfo": {"version": "3.0.0"},
                "/loki/api/v1/label/app/values": {"data": ["shop"]},
            }
            body = json.dumps(paths.get(self.path, {})).encode()
            self.send_response(200 if allowed and self.path in paths else 401 if not allowed else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Loki)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("LOKI_TOKEN", "t0k")
    config = tmp_path / "evcli.toml"
    config.write_text(
        f'runbooks = ["{DEMO_RUNBOOKS}"]\n[backends.loki]\nurl = "http://127.0.0.1:{server.server_address[1]}"\n'
        'service_label = "app"\nheaders = { "X-Scope-OrgID" = "team-a" }\n'
        '[backends.loki.auth]\nkind = "bearer"\ntoken_env = "LOKI_TOKEN"\n',
        encoding="utf-8",
    )
    try:
        run = evcli("doctor", "--config", config, "--json")
    finally:
        server.shutdown()
        server.server_close()

    assert run.exit_code == 0, run
    checks = _checks(run)
    assert checks["loki"]["detail"].startswith("version 3.0.0, ")
    assert checks["loki service label"]["detail"] == "1 services: shop"
    assert all(request["authorization"] == "Bearer t0k" for request in seen) and len(seen) == 2
    assert "t0k" not in run.stdout


def test_a_kubeconfig_is_checked_with_the_clients_version_call(tmp_path):
    """--kubeconfig is a file, not a URL: doctor asks the cluster its version through the official client
    (a loopback API server here); an address nothing answers at fails with a remedy."""
    from tests.backends.k8s_api import KubeApi

    with KubeApi() as api:
        kubeconfig = api.kubeconfig(tmp_path / "kubeconfig")
        run = evcli("doctor", "--kubeconfig", kubeconfig, "--no-model-call", "--json")
        checks = _checks(run)
        assert checks["kubernetes"]["status"] == "ok", checks["kubernetes"]
        assert any(request["path"].rstrip("/") == "/version" for request in api.requests), api.requests
    run = evcli("doctor", "--kubeconfig", kubeconfig, "--no-model-call", "--json")  # the server is gone
    failed = _checks(run)["kubernetes"]
    assert run.exit_code == 1 and failed["status"] == "fail" and "--kubeconfig" in failed["remedy"], failed


def test_the_gatekeeper_row_says_whether_it_runs_compiled_and_why_not(monkeypatch):
    row = _checks(evcli("doctor", "--no-model-call", "--json"))["gatekeeper"]
    if native.built_from_these_sources():  # tests/test_native.py requires the build where a compiler is
        assert (row["status"], row["detail"]) == ("ok", f"compiled ({len(native.MODULES)} modules)")
    else:
        assert row["status"] == "warn" and row["detail"].startswith("pure Python: ") and "C compiler" in row["remedy"]
    monkeypatch.setenv("EVCLI_NATIVE", "0")
    row = _checks(evcli("doctor", "--no-model-call", "--json"))["gatekeeper"]
    assert (row["status"], row["detail"]) == ("skip", "pure Python (EVCLI_NATIVE=0)")
