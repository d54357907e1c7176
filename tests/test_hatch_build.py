"""hatch_build.py: a wheel built where the C compiler fails is a working pure-Python wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

_BUILD_INPUTS = ("pyproject.toml", "hatch_build.py", "README.md", "rules.toml", "prompts", "sample_sessions")


@pytest.mark.readme_install
def test_a_failing_compiler_gives_a_pure_python_wheel(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    shutil.copytree(REPO / "evcli", checkout / "evcli", ignore=shutil.ignore_patterns("__pycache__", "_native"))
    for name in _BUILD_INPUTS:
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy2)(REPO / name, checkout / name)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    built = subprocess.run(
        [*pip, "wheel", "-v", "--no-deps", "--no-build-isolation", "-w", tmp_path / "wheels", checkout],
        env={**os.environ, "CC": "false", "LDSHARED": "false"},
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    assert "compiled modules were not built" in built.stdout + built.stderr
    (wheel,) = (tmp_path / "wheels").glob("evcli-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")  # not tagged for a platform: nothing compiled in it
    names = zipfile.ZipFile(wheel).namelist()
    assert "evcli/native.py" in names and "evcli/gatekeeper/typed.py" in names
    assert not [name for name in names if "_native/" in name or name.endswith(".so")]
    assert not (checkout / "evcli" / "_native").exists()  # a failed build leaves the checkout as it was
