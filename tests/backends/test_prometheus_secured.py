"""A real Prometheus that requires basic auth and serves HTTPS, configured with its own
`--web.config.file` (bcrypt password hash, self-signed certificate made with the `openssl` CLI).

evcli sends the password read from an environment variable or a file (never the config), checks the
server against the CA bundle (or skips the check when told), and every failure is one line naming
the URL: a wrong password is HTTP 401, an unknown certificate says to set ca_bundle.
"""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

from evcli.backends.http import Connection, HttpStatusError
from evcli.backends.live import LiveBackend
from evcli.backends.prometheus import build
from evcli.contracts import BackendAuth, BackendSpec
from evcli.core.errors import BackendError
from evcli.store.db import TraceStore
from tests.backends.conftest import free_port, wait_until
from tests.cli._util import assert_clean_error, evcli

USER, PASSWORD = "oncall", "s3cret-Pa55"
PASSWORD_ENV = "EVCLI_TEST_PROMETHEUS_PASSWORD"


@dataclass
class Secured:
    url: str
    ca_bundle: Path


def _bcrypt(password: str) -> str:
    """A `$2b$` bcrypt hash, as Prometheus's web config wants, from the C library's crypt(3)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt  # deprecated (gone in 3.13), but the only bcrypt here without a new dependency

    hashed = crypt.crypt(password, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))
    assert hashed and hashed.startswith("$2b$"), "the C library's crypt(3) cannot make bcrypt hashes"
    return hashed


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (also its own CA) and its key, made with the openssl CLI."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    made = subprocess.run(
        [shutil.which("openssl") or "openssl", "req", "-x509", "-newkey", "ec", "-nodes", "-days", "1"]
        + ["-pkeyopt", "ec_paramgen_curve:prime256v1"]
        + ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    return cert, key


@pytest.fixture(scope="module")
def secured(start_process, tmp_path_factory, metrics_exporter) -> Secured:
    """Prometheus on HTTPS with basic auth, scraping payment-service's CPU from the loopback exporter."""
    home = tmp_path_factory.mktemp("prometheus-secured")
    cert, key = _self_signed(home)
    web = {
        "tls_server_config": {"cert_file": str(cert), "key_file": str(key)},
        "basic_auth_users": {USER: _bcrypt(PASSWORD)},
    }
    (home / "web.yml").write_text(json.dumps(web))  # JSON is YAML
    config = {
        "global": {"scrape_interval": "1s"},
        "scrape_configs": [
            {"job_name": "exporter", "honor_labels": True, "static_configs": [{"targets": [metrics_exporter]}]}
        ],
    }
    (home / "prometheus.yml").write_text(json.dumps(config))
    port = free_port()
    process, log = start_process(
        [
            shutil.which("prometheus") or pytest.fail("prometheus is not installed", pytrace=False),
            f"--config.file={home / 'prometheus.yml'}",
            f"--storage.tsdb.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            f"--web.config.file={home / 'web.yml'}",
        ],
        "prometheus-secured-log",
    )
    url = f"https://127.0.0.1:{port}"
    context = ssl.create_default_context(cafile=str(cert))
    authorization = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()

    def scraped() -> bool:  # the fixture's own check, independent of the code under test
        request = urllib.request.Request(url + "/api/v1/label/service/values", headers={"Authorization": authorization})
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return "payment-service" in json.loads(response.read())["data"]

    wait_until(scraped, "the secured Prometheus to scrape the exporter", process, log)
    return Secured(url, cert)


def _spec(server: Secured, **fields) -> BackendSpec:
    fields.setdefault("ca_bundle", str(server.ca_bundle))
    fields.setdefault("auth", BackendAuth(kind="basic", username=USER, password_env=PASSWORD_ENV))
    return BackendSpec(url=server.url, timeout=5, **fields)


def test_the_password_from_a_variable_is_accepted(secured, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)

    backend = build(_spec(secured))

    assert "payment-service" in backend.services()
    backend.probe()


def test_the_password_from_a_file_is_accepted(secured, tmp_path, monkeypatch):
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    secret = tmp_path / "password"
    secret.write_text(PASSWORD + "\n")  # the trailing newline an editor leaves is not part of it
    secret.chmod(0o600)  # as a password file should be: no permission warning

    backend = build(_spec(secured, auth=BackendAuth(kind="basic", username=USER, password_file=str(secret))))

    assert "payment-service" in backend.services()


def test_a_wrong_password_is_one_line_naming_the_url_and_401(secured, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, "not-the-password")

    with pytest.raises(HttpStatusError) as caught:
        build(_spec(secured)).services()

    message = str(caught.value)
    assert caught.value.status == 401 and "\n" not in message
    assert f"GET {secured.url}/api/v1/label/service/values answered HTTP 401" in message
    assert "not-the-password" not in message


def test_no_credentials_is_refused_by_the_server(secured):
    with pytest.raises(HttpStatusError, match="HTTP 401"):
        Connection(secured.url, verify=str(secured.ca_bundle), timeout=5).get_json("/api/v1/query", {"query": "up"})


def test_without_the_ca_bundle_the_certificate_failure_says_what_to_set(secured, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)

    with pytest.raises(BackendError) as caught:
        build(_spec(secured, ca_bundle=None)).services()

    message = str(caught.value)
    assert message.startswith(f"GET {secured.url}/api/v1/label/service/values failed: TLS failed: ")
    assert "certificate verify failed" in message and "set ca_bundle, or insecure_skip_verify = true" in message
    assert "\n" not in message


def test_insecure_skip_verify_reaches_the_server_without_the_bundle(secured, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, PASSWORD)

    backend = build(_spec(secured, ca_bundle=None, insecure_skip_verify=True))

    assert "payment-service" in backend.services()


def test_a_live_backend_with_the_wrong_password_is_unreachable_naming_401(secured, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, "wrong")

    with pytest.raises(BackendError) as caught:
        LiveBackend.from_specs({"prometheus": _spec(secured)}).check_reachable()

    assert f"prometheus: GET {secured.url}/-/ready answered HTTP 401" in str(caught.value)


def _config(server: Secured, directory: Path, password_file: Path) -> Path:
    """An evcli.toml naming the secured Prometheus, its CA bundle and where its password is."""
    config = directory / "evcli.toml"
    config.write_text(
        f"""[backends.prometheus]
url = "{server.url}"
ca_bundle = "{server.ca_bundle}"
[backends.prometheus.auth]
kind = "basic"
username = "{USER}"
password_file = "{password_file}"
"""
    )
    return config


def test_ask_through_the_configuration_reads_the_password_file(secured, tmp_path, evcli_home):
    secret = tmp_path / "password"
    secret.write_text(PASSWORD)
    secret.chmod(0o600)  # as a password file should be: no permission warning

    run = evcli("ask", "Is payment-service CPU high?", "--config", _config(secured, tmp_path, secret), "--json")

    assert run.exit_code in (0, 3), run
    assert PASSWORD not in run.stdout + run.stderr
    with TraceStore(evcli_home / "evcli.db") as store:
        document = store.load(run.json()["session_id"])
    # the services come from the secured Prometheus's label values: the password was sent and accepted
    assert "payment-service" in document.run.config.environment.services


def test_ask_with_a_wrong_password_is_one_line_naming_the_url_and_401(secured, tmp_path):
    secret = tmp_path / "password"
    secret.write_text("not-it")
    secret.chmod(0o600)  # as a password file should be: no permission warning

    run = evcli("ask", "Is payment-service CPU high?", "--config", _config(secured, tmp_path, secret))

    line = assert_clean_error(run, 1, f"GET {secured.url}/-/ready answered HTTP 401", "evcli doctor")
    assert "not-it" not in line
