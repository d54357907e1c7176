"""The effective configuration as rows for `evcli config show`: every value with its source.

Invariants: no secret is ever shown. The settings hold none (auth names an environment variable or
a file), a URL's `user:pass@` and anything the secret masks recognise are masked, and for a key
naming where a secret is read (`token_env`, `password_file`) only whether it is there is added,
never what it holds; a secret file other users can read is warned about on stderr.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evcli.config.sources import DEFAULT, Loaded, _leaves
from evcli.core.userfiles import warn_if_exposed


@dataclass(frozen=True)
class SettingRow:
    key: str  # dotted: backends.prometheus.url
    value: str
    source: str  # default, file:PATH, profile:NAME, env:VAR, flag

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def effective_rows(loaded: Loaded) -> list[SettingRow]:
    """One row per value of the effective settings (unset optional values left out)."""
    from evcli.core.redaction import Redactor

    redactor = Redactor()
    dumped = loaded.settings.model_dump(mode="json", exclude_none=True)
    rows = []
    for path, value in _leaves(dumped):
        if value == [] or value == {}:
            continue
        shown = redactor.mask_text(_text(value)) + _secret_state(path[-1], value)
        rows.append(SettingRow(".".join(path), shown, loaded.sources.get(path, DEFAULT)))
    return rows


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return str(value)


def _secret_state(key: str, value: Any) -> str:
    """Whether the variable or file a secret is read from is there (never its content)."""
    if key.endswith("_env"):
        return " (set)" if os.environ.get(str(value)) else " (not set)"
    if key.endswith("_file"):
        path = Path(str(value)).expanduser()
        if not os.access(path, os.R_OK):
            return " (missing)"
        warn_if_exposed(path, f"{key.removesuffix('_file')} file", secret=True)
        return " (readable)"
    return ""
