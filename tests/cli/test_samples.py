"""`evcli samples list|show|path`: every shipped sample session and environment is reachable."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli._util import assert_clean_error, evcli, sample_files
from tests.conftest import SAMPLES


def test_list_names_every_environment_and_sample_session():
    run = evcli("samples", "list", "--json")
    assert run.exit_code == 0, run
    listed = {row["name"]: row for row in run.json()}
    assert [name for name, row in listed.items() if row["kind"] == "environment"] == [
        "demo",
        "cluster",
        "edge",
        "host",
        "mesh",
    ]
    assert {path.stem for path in sample_files()} == {
        name for name, row in listed.items() if row["kind"] != "environment"
    }
    assert listed["fault-excerpt-number-changed"]["summary"] == "gate reject: claim-1#0 says 29 instead of 92"
    assert listed["host"]["summary"].startswith('The "host" snapshot environment')
    assert listed["cluster"]["summary"].startswith('The "cluster" snapshot environment')

    text = evcli("samples", "list").stdout.splitlines()
    assert len(text) == len(listed)
    assert text[0].split()[:2] == ["demo", "environment"]


def test_path_of_a_session_an_environment_and_the_directory():
    run = evcli("samples", "path", "broad-order-service")
    assert run.exit_code == 0, run
    assert Path(run.stdout.strip()) == SAMPLES / "broad-order-service.json"
    assert evcli("samples", "path", "broad-order-service.json").stdout == run.stdout
    host = Path(evcli("samples", "path", "host").stdout.strip())
    assert (host / "env.toml").is_file() and host.name == "host"
    assert Path(evcli("samples", "path").stdout.strip()) == SAMPLES


def test_show_prints_a_session_document_and_an_environment():
    run = evcli("samples", "show", "narrow-payment-highcpu")
    assert run.exit_code == 0, run
    assert json.loads(run.stdout) == json.loads((SAMPLES / "narrow-payment-highcpu.json").read_text())
    run = evcli("samples", "show", "edge")
    assert run.exit_code == 0, run
    assert 'timezone = "Asia/Shanghai"' in run.stdout
    assert "# alerts.json" in run.stdout.splitlines()


def test_unknown_sample_is_a_usage_error():
    for args in (("show", "nope"), ("path", "nope"), ("path", "../rules")):
        assert_clean_error(evcli("samples", *args), 2, "no shipped sample", "evcli samples list")


def test_a_sample_path_works_with_gate(tmp_path):
    path = evcli("samples", "path", "fault-excerpt-number-changed").stdout.strip()
    run = evcli("gate", path)
    assert run.exit_code == 4, run
