"""`config show` rows: every value with its source, and never a secret."""

from __future__ import annotations

from evcli.config import load
from evcli.config.effective import effective_rows


def _rows(tmp_path, text, flags=None):
    path = tmp_path / "evcli.toml"
    path.write_text(text, encoding="utf-8")
    return {row.key: row for row in effective_rows(load(path, None, flags or {}, {}))}, path


def test_each_row_names_its_source_and_defaults_are_shown(tmp_path):
    rows, path = _rows(tmp_path, '[backends.prometheus]\nurl = "http://p:9090"\n', {"models": {"default": "ollama/x"}})

    assert (rows["backends.prometheus.url"].value, rows["backends.prometheus.url"].source) == (
        "http://p:9090",
        f"file:{path}",
    )
    assert (rows["backends.prometheus.timeout"].value, rows["backends.prometheus.timeout"].source) == (
        "10.0",
        "default",
    )
    assert rows["models.default"].source == "flag"
    assert "env" not in rows  # unset optional values are left out


def test_secrets_read_from_variables_or_files_are_never_shown(tmp_path, monkeypatch):
    monkeypatch.setenv("PROM_TOKEN", "tok-never-shown")
    text = '[backends.prometheus]\nurl = "http://p:9090"\n[backends.prometheus.auth]\nkind = "bearer"\ntoken_env = "PROM_TOKEN"\n'
    text += '[backends.loki]\nurl = "http://l"\n[backends.loki.auth]\nkind = "basic"\nusername = "u"\npassword_file = "pw.txt"\n'

    rows, _ = _rows(tmp_path, text, {"backends": {"alertmanager": {"url": "http://am:secretpw@am:9093"}}})
    shown = " ".join(row.value for row in rows.values())

    assert rows["backends.prometheus.auth.token_env"].value == "PROM_TOKEN (set)"
    assert rows["backends.loki.auth.password_file"].value.endswith("pw.txt (missing)")
    assert "tok-never-shown" not in shown and "secretpw" not in shown
