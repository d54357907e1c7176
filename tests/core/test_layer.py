"""evcli.core is the ground floor: none of its modules imports evcli outside evcli.core, even inside a function."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import evcli.core

CORE = Path(evcli.core.__file__).parent


def _evcli_imports(path: Path) -> list[str]:
    """Every evcli module `path` imports, at module level or inside a function."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return [name for name in found if name == "evcli" or name.startswith("evcli.")]


def test_core_imports_nothing_above_it():
    above = {
        f"{path.name}: {name}"
        for path in sorted(CORE.glob("*.py"))
        for name in _evcli_imports(path)
        if not name.startswith("evcli.core")
    }
    assert not above


def test_importing_all_of_core_loads_no_other_evcli_module():
    modules = [f"evcli.core.{path.stem}" for path in sorted(CORE.glob("*.py")) if path.stem != "__init__"]
    code = f"import sys, {', '.join(modules)}; print(sorted(m for m in sys.modules if m.startswith('evcli.')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # evcli.native (imported by the package itself) loads modules, and the library mypyc compiled core.text
    # into with the Gatekeeper's modules (evcli/_native) holds their code without importing any of them
    loader = ("'evcli.core", "'evcli.native'", "'evcli._native'", "'evcli._native.gatekeeper__mypyc'")
    assert all(name.startswith(loader) for name in loaded.strip("[]\n").split(", ")), loaded
