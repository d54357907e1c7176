"""evcli/native.py: the compiled Gatekeeper modules are used all or none, only as a build of the current
sources, and judge exactly as the sources do."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from evcli import native

PACKAGE = Path(native.__file__).resolve().parent
_SESSION_ID = re.compile(r"^\d{8}T\d{6}-[0-9a-f]{6}$")


@pytest.fixture(scope="module")
def built() -> Path:
    """The checkout's compiled modules; a checkout installed where a C compiler is must have them."""
    if not native.MANIFEST.is_file():
        compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
        if shutil.which(compiler):
            pytest.fail(f"{native.DIR} is not built though {compiler} is here: `pip install -e .` builds it")
        pytest.skip("no C compiler: evcli runs pure Python")
    return native.DIR


def _loaded(root: Path, **env: str) -> dict[str, object]:
    """What a fresh interpreter importing evcli from `root` loads: whether native is active, and each
    compiled module's file."""
    script = (
        "import json, importlib, evcli.native as n\n"
        "files = {m: importlib.import_module(m).__spec__.origin for m in n.MODULES}\n"
        "print(json.dumps({'active': n.active(), 'files': files, 'reason': n.why_not_active()}))\n"
    )
    run_env = {**os.environ, "PYTHONPATH": str(root), **env}
    result = subprocess.run([sys.executable, "-c", script], cwd=root, env=run_env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _compiled(loaded: dict[str, object]) -> set[bool]:
    files = loaded["files"]
    assert isinstance(files, dict)
    return {str(origin).endswith(native.EXTENSION_SUFFIXES[0]) for origin in files.values()}


@pytest.fixture
def copy(built: Path, tmp_path: Path) -> Path:
    """The package with its build, copied (times kept): a checkout of its own to edit."""
    shutil.copytree(PACKAGE, tmp_path / "evcli", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_a_build_of_these_sources_is_used_for_every_module(copy: Path) -> None:
    loaded = _loaded(copy)
    assert loaded["active"] is True
    assert _compiled(loaded) == {True}
    assert all(str(copy / "evcli" / "_native") in str(origin) for origin in loaded["files"].values())  # type: ignore[union-attr]


def test_an_edited_source_makes_every_module_load_from_its_source(copy: Path) -> None:
    facts = copy / "evcli" / "gatekeeper" / "facts.py"
    facts.write_text(facts.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    loaded = _loaded(copy)
    assert loaded["active"] is False
    assert _compiled(loaded) == {False}  # typed.py is unchanged, and loads from its source too: all or none
    assert loaded["reason"] == "evcli.gatekeeper.facts changed since it was compiled"  # what `evcli doctor` says


def test_a_source_rewritten_with_the_same_text_keeps_the_build(copy: Path) -> None:
    typed = copy / "evcli" / "gatekeeper" / "typed.py"
    text = typed.read_bytes()
    typed.write_bytes(text)  # a checkout or a wheel install: another time, the same content
    os.utime(typed, ns=(1_000_000_000, 1_000_000_000))
    loaded = _loaded(copy)
    assert loaded["active"] is True and _compiled(loaded) == {True}


def test_a_module_added_to_the_list_since_the_build_disables_it(copy: Path) -> None:
    manifest = copy / "evcli" / "_native" / "manifest.txt"
    lines = manifest.read_text(encoding="utf-8").splitlines()
    manifest.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    assert _loaded(copy)["active"] is False


def test_a_build_by_another_interpreter_is_not_loaded(copy: Path) -> None:
    manifest = copy / "evcli" / "_native" / "manifest.txt"
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text.replace(native.EXTENSION_SUFFIXES[0], ".cpython-399-x86_64-linux-gnu.so", 1))
    assert _loaded(copy)["active"] is False


def test_a_missing_compiled_file_loads_the_sources(copy: Path) -> None:
    (copy / "evcli" / "_native" / native.shim_name("evcli.gatekeeper.facts")).unlink()
    loaded = _loaded(copy)
    assert loaded["active"] is False and _compiled(loaded) == {False}


def test_a_damaged_manifest_loads_the_sources(copy: Path) -> None:
    manifest = copy / "evcli" / "_native" / "manifest.txt"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace(" ", "  "), encoding="utf-8")
    loaded = _loaded(copy)
    assert loaded["active"] is False and _compiled(loaded) == {False}
    manifest.write_bytes(b"\xff\xfe not text")
    assert _loaded(copy)["active"] is False


def test_evcli_native_0_loads_the_sources(copy: Path) -> None:
    loaded = _loaded(copy, EVCLI_NATIVE="0")
    assert loaded["active"] is False and _compiled(loaded) == {False}


def test_no_build_loads_the_sources(copy: Path) -> None:
    shutil.rmtree(copy / "evcli" / "_native")
    loaded = _loaded(copy)
    assert loaded["active"] is False and _compiled(loaded) == {False}


def _suite(**env: str) -> object:
    """`evcli eval gatekeeper --envs --json`: every mutation and benign class on the sample sessions and the
    offline chain's sessions of every packaged environment, session ids blanked (they carry the time)."""
    result = subprocess.run(
        [sys.executable, "-m", "evcli", "eval", "gatekeeper", "--envs", "--json"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return _blank_ids(json.loads(result.stdout))


def _blank_ids(node: object) -> object:
    if isinstance(node, dict):
        return {key: _blank_ids(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_blank_ids(value) for value in node]
    return "*" if isinstance(node, str) and _SESSION_ID.match(node) else node


def test_the_compiled_gatekeeper_judges_every_suite_case_as_the_sources_do(built: Path) -> None:
    compiled, sources = _suite(), _suite(EVCLI_NATIVE="0")
    assert compiled == sources
    assert isinstance(compiled, dict) and compiled["targets_met"] is True
