"""Files evcli ships: found inside the installed package, or in a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_path(name: str) -> Path:
    """`rules.toml` or `sample_sessions` as installed (wheel) or checked out (repo root)."""
    packaged = _PACKAGE_DIR / "_data" / name
    if packaged.exists():
        return packaged
    return _PACKAGE_DIR.parent / name
