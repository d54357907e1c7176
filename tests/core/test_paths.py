"""The data directory (evcli/core/paths.py): every file evcli keeps by default moves with EVCLI_HOME."""

from __future__ import annotations

from pathlib import Path

from evcli.config.sources import default_config_path
from evcli.core.paths import data_dir, default_db_path, index_home
from evcli.kb.index import default_index_path


def test_every_default_file_lives_in_evcli_home(evcli_home):
    assert data_dir() == evcli_home
    assert default_db_path() == evcli_home / "evcli.db"
    assert default_config_path() == evcli_home / "evcli.toml"
    assert default_index_path() == evcli_home / "kb.db"
    assert index_home() == evcli_home / "logindex"


def test_a_home_written_with_a_tilde_is_expanded(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("EVCLI_HOME", "~/evcli-data")
    assert default_db_path() == tmp_path / "evcli-data" / "evcli.db"
    assert index_home() == tmp_path / "evcli-data" / "logindex"


def test_without_evcli_home_the_user_app_dir_holds_them_all(monkeypatch, tmp_path):
    monkeypatch.delenv("EVCLI_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    home = data_dir()
    assert home == tmp_path / "config" / "evcli"  # click's app dir on Linux: $XDG_CONFIG_HOME/<app>
    assert {default_db_path().parent, default_config_path().parent, default_index_path().parent} == {home}
    assert index_home() == home / "logindex"
    assert not Path(home).exists()  # naming the files creates nothing
