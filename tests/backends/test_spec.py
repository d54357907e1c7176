"""The environment spec: built from the shared options or a stored config, stored flat, resolved in one place."""

from __future__ import annotations

from pathlib import Path

import pytest

from evcli.backends.live import LiveBackend
from evcli.backends.snapshot import SnapshotBackend, demo_env_dir
from evcli.backends.spec import EnvironmentSpec, packaged_env_dir
from evcli.contracts import BackendSpec, SessionConfig
from evcli.core.errors import BadInput
from evcli.store.db import TraceStore
from tests.cli._util import evcli


def test_options_become_a_spec_and_empty_urls_are_left_out():
    spec = EnvironmentSpec.from_options(None, None, {"prometheus": "http://p:9090", "loki": None, "alertmanager": ""})

    assert spec.backends == {"prometheus": BackendSpec(url="http://p:9090")}
    assert spec.live and spec.env_dir is None


def test_the_stored_form_is_flat_with_absolute_paths_and_reads_back(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = EnvironmentSpec.from_options(Path("snap"), Path("books"), {})

    assert spec.as_config() == {"env_dir": str(tmp_path / "snap"), "runbooks": str(tmp_path / "books")}
    assert EnvironmentSpec.from_config(spec.as_config()).env_dir == tmp_path / "snap"


def test_backend_options_are_stored_only_when_they_differ_from_the_defaults():
    spec = EnvironmentSpec(
        backends={
            "prometheus": BackendSpec(url="http://p:9090"),
            "loki": BackendSpec(url="http://l:3100", timeout=3, options={"service_label": "app"}),
        }
    )

    stored = spec.as_config()

    assert stored == {
        "prometheus": "http://p:9090",
        "loki": {"url": "http://l:3100", "timeout": 3.0, "options": {"service_label": "app"}},
    }
    assert EnvironmentSpec.from_config(stored) == spec
    assert EnvironmentSpec.from_config({}) == EnvironmentSpec() == EnvironmentSpec.from_config(None)


def test_a_spec_with_a_non_default_timeout_round_trips_through_a_stored_session(tmp_path):
    """SessionConfig.env holds what as_config writes: a URL or a backend spec with its options."""
    spec = EnvironmentSpec(
        backends={
            "prometheus": BackendSpec(url="http://p:9090"),
            "loki": BackendSpec(url="http://l:3100", timeout=2.5, options={"service_label": "app"}),
        }
    )
    with TraceStore(tmp_path / "evcli.db") as store:
        run = store.create_session("why?", config=SessionConfig(env=spec.as_config()))
        stored = store.load(run.session_id).run.config

    assert stored.env["loki"] == BackendSpec(url="http://l:3100", timeout=2.5, options={"service_label": "app"})
    assert stored.model_dump(mode="json")["env"] == spec.as_config()
    assert EnvironmentSpec.from_config(stored.env) == spec


def test_a_bad_stored_spec_is_a_usage_error():
    with pytest.raises(BadInput, match="environment spec is not valid"):
        EnvironmentSpec.from_config({"loki": {"url": "http://l", "timeout": -1}})


def test_a_snapshot_and_live_backends_together_are_refused(tmp_path):
    spec = EnvironmentSpec.from_options(tmp_path, None, {"loki": "http://l:3100"})

    with pytest.raises(
        BadInput,
        match=r"use either --env DIR or backend URLs \(--prometheus/--alertmanager/--loki/--jaeger/--tempo/--kubeconfig\), not both",
    ):
        spec.evidence_backend()


def test_the_backend_and_knowledge_dirs_each_spec_resolves_to(tmp_path):
    # issue 12: live backends without runbooks have no knowledge (never the demo's runbooks)
    demo = EnvironmentSpec()
    assert isinstance(demo.evidence_backend(), SnapshotBackend) and demo.knowledge_dirs() == [demo_env_dir()]

    live = EnvironmentSpec.from_options(None, None, {"loki": "http://l:3100"})
    assert isinstance(live.evidence_backend(), LiveBackend) and live.knowledge_dirs() == []
    assert EnvironmentSpec.from_options(None, tmp_path, {"loki": "http://l"}).knowledge_dirs() == [tmp_path]
    assert EnvironmentSpec(env_dir=demo_env_dir()).knowledge_dirs() == [demo_env_dir()]

    with pytest.raises(BadInput, match="no such environment directory"):
        EnvironmentSpec(env_dir=tmp_path / "missing").evidence_backend()


@pytest.mark.parametrize("name", ["demo", "edge", "host"])
def test_a_packaged_environment_name_names_that_environment(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no directory of that name here
    spec = EnvironmentSpec.from_options(Path(name), None, {})

    packaged = packaged_env_dir(name)
    assert packaged is not None and (packaged / "logs").is_dir()
    assert spec.env_dir == packaged and spec.knowledge_dirs() == [packaged]
    assert spec.as_config() == {"env_dir": str(packaged)}  # stored absolute: a replay elsewhere finds it
    assert EnvironmentSpec.from_config(spec.as_config()).env_dir == packaged
    assert isinstance(spec.evidence_backend(), SnapshotBackend)


def test_a_directory_of_a_packaged_name_wins_and_other_names_stay_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "host").mkdir()

    assert EnvironmentSpec.from_options(Path("host"), None, {}).env_dir == Path("host")
    for name in ("envs", "..", "evcli/envs/host", "Host", "missing"):
        assert packaged_env_dir(name) is None
        assert EnvironmentSpec.from_options(Path(name), None, {}).env_dir == Path(name)


def test_env_host_works_from_the_command_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = evcli("tool", "query_logs", "--env", "host", "--service", "auth", "--query", "Failed password", "--json")

    assert run.exit_code == 0, run
    output = run.json()["output"]
    assert output["stats"]["total"] == 42 and output["stats"]["by_level"] == {"none": 42}
    assert output["logs"][0]["source"]["path"] == "logs/auth.log"
