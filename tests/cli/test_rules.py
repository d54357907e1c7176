"""`evcli rules show|init`: the shipped rules file, printed or copied as a starting point."""

from __future__ import annotations

from tests.cli._util import RULES, assert_clean_error, evcli, rules_with
from tests.conftest import sample


def test_show_prints_the_shipped_file():
    run = evcli("rules", "show")
    assert run.exit_code == 0, run
    assert run.stdout == RULES.read_text(encoding="utf-8")


def test_init_writes_the_shipped_file_and_never_overwrites_without_force(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = evcli("rules", "init")
    assert run.exit_code == 0, run
    assert (tmp_path / "rules.toml").read_bytes() == RULES.read_bytes()
    assert "--rules rules.toml" in run.stderr

    (tmp_path / "rules.toml").write_text("mine")
    assert_clean_error(evcli("rules", "init"), 2, "already exists", "--force")
    assert (tmp_path / "rules.toml").read_text() == "mine"
    assert evcli("rules", "init", "--force").exit_code == 0
    assert (tmp_path / "rules.toml").read_bytes() == RULES.read_bytes()


def test_an_initialised_file_gates_like_the_default_and_edits_take_effect(tmp_path):
    written = tmp_path / "team" / "rules.toml"
    written.parent.mkdir()
    assert evcli("rules", "init", "-o", written).exit_code == 0
    session = sample("fault-excerpt-number-changed")
    assert evcli("gate", session, "--rules", written).exit_code == evcli("gate", session).exit_code == 4
    relaxed = rules_with(tmp_path, "binding.excerpt_supported", severity="low_confid", source=written)
    assert evcli("gate", session, "--rules", relaxed).exit_code == 3


def test_init_onto_a_symlink_replaces_the_link_not_its_target(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "rules.toml"
    link.symlink_to(victim)

    assert_clean_error(evcli("rules", "init", "-o", link), 2, "already exists")
    forced = evcli("rules", "init", "-o", link, "--force")

    assert forced.exit_code == 0, forced
    assert victim.read_text() == "keep me"
    assert not link.is_symlink() and link.read_bytes() == RULES.read_bytes()
