"""The Gatekeeper's hot modules as mypyc compiled them to C, used only when they are a build of these sources.

Why: gating is many small Python steps per claim (typed facts, excerpt facts, clocks, word tables); the same
annotated modules compiled by mypyc take about a quarter less CPU (10,000 real bindings: 2.1 s of CPU in
pure Python, 1.6 s compiled). The wheel's build hook (`hatch_build.py`) compiles `MODULES` into `evcli/_native/`
when a C compiler is there, and leaves the package pure Python when not.

Invariants:
- The compiled files live in `evcli/_native/`, never next to the sources, so Python's own import never picks
  them: the finder `install()` puts first on `sys.meta_path` is their only way in, and it answers only for
  the names in `MODULES`.
- All or none, decided once per process: the compiled modules call each other directly, so they are used only
  when every source is the one they were built from (the manifest's sha256 of each, its size and mtime a fast
  path), by this interpreter (the manifest's extension suffix). An edited checkout loads every module from its
  source, as a build without the compiled files does.
- A compiled module's `__file__` is not its source's (mypyc derives it from its shared library's place): a
  module in `MODULES` reads its data files through `evcli.resources.package_path`.
- `EVCLI_NATIVE=0` in the environment uses the sources (the tests run the Gatekeeper both ways).
- Standard library only: this module is imported by `evcli/__init__.py` at every start, and by the build hook
  before the package's dependencies are installed.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader, ModuleSpec
from importlib.util import spec_from_file_location
from pathlib import Path

__all__ = [
    "DIR",
    "MANIFEST",
    "MODULES",
    "active",
    "built_from_these_sources",
    "install",
    "manifest_line",
    "shim_name",
    "why_not_active",
]

# The modules that checking a claim's facts runs per claim; each is fully annotated (mypy checks it) and
# uses no dynamic feature mypyc rejects. A module added here is compiled by the next build.
MODULES = (
    "evcli.core.text",
    "evcli.gatekeeper.addresses",
    "evcli.gatekeeper.checks",
    "evcli.gatekeeper.clocks",
    "evcli.gatekeeper.engine",
    "evcli.gatekeeper.excerpt",
    "evcli.gatekeeper.facts",
    "evcli.gatekeeper.lookalike",
    "evcli.gatekeeper.owners",
    "evcli.gatekeeper.paths",
    "evcli.gatekeeper.provenance",
    "evcli.gatekeeper.siblings",
    "evcli.gatekeeper.subjects",
    "evcli.gatekeeper.typed",
    "evcli.gatekeeper.typed_model",
    "evcli.gatekeeper.wordtables",
    "evcli.tools.refs",
)
GROUP = "evcli._native.gatekeeper"  # mypyc's shared library of the compiled modules: evcli/_native/gatekeeper__mypyc
GROUP_FILE = GROUP.rsplit(".", 1)[1] + "__mypyc" + EXTENSION_SUFFIXES[0]
PACKAGE = Path(__file__).resolve().parent
DIR = PACKAGE / "_native"
MANIFEST = DIR / "manifest.txt"
_DISABLED = "EVCLI_NATIVE"


def source(module: str, package: Path = PACKAGE) -> Path:
    """The module's source file (`evcli.gatekeeper.typed`: gatekeeper/typed.py in `package`)."""
    return package.joinpath(*module.split(".")[1:]).with_suffix(".py")


def shim_name(module: str) -> str:
    """The file the compiled module's entry point is kept in, inside `DIR`."""
    return module + EXTENSION_SUFFIXES[0]


def manifest_line(module: str, package: Path = PACKAGE) -> str:
    """`module sha256 size mtime_ns` of the module's source, as the build records it."""
    path = source(module, package)
    stat = path.stat()
    return f"{module} {_digest(path)} {stat.st_size} {stat.st_mtime_ns}"


def _digest(path: Path) -> str:
    import hashlib  # only when a source's time is not the build's (a wheel install): not at every start

    return hashlib.sha256(path.read_bytes()).hexdigest()


def active() -> bool:
    """Whether this process loads `MODULES` compiled (see the invariants); read once."""
    if _state.active is None:
        _state.active = why_not_active() is None
    return _state.active


def why_not_active() -> str | None:
    """Why `MODULES` load from their sources (None: they load compiled), in a few words."""
    if os.environ.get(_DISABLED) == "0":
        return f"{_DISABLED}=0"
    return _why_not_built()


def built_from_these_sources() -> bool:
    """Whether `DIR` holds a whole build, by this interpreter, of exactly the current sources of `MODULES`."""
    return _why_not_built() is None


def _why_not_built() -> str | None:
    try:
        lines = MANIFEST.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return "not compiled"  # a pure-Python install, or a checkout nobody compiled
    if not lines or lines[0] != f"suffix {EXTENSION_SUFFIXES[0]}":
        return "compiled for another Python"
    recorded = dict(line.split(" ", 1) for line in lines[1:] if " " in line)
    if set(recorded) != set(MODULES):
        return "compiled for another list of modules"
    edited = [module for module in MODULES if not _unchanged(module, recorded[module])]
    if edited:
        return f"{edited[0]} changed since it was compiled"
    if not all((DIR / name).is_file() for name in [*map(shim_name, MODULES), GROUP_FILE]):
        return "the compiled files are incomplete"
    return None


def _unchanged(module: str, recorded: str) -> bool:
    """Whether the module's source is the one `recorded` (`sha256 size mtime_ns`) describes."""
    try:
        digest, size, mtime_ns = recorded.split(" ")
        path = source(module)
        stat = path.stat()
        if (str(stat.st_size), str(stat.st_mtime_ns)) == (size, mtime_ns):
            return True
        return str(stat.st_size) == size and _digest(path) == digest
    except (OSError, ValueError):  # no source, or a damaged manifest line
        return False


class _State:
    active: bool | None = None


_state = _State()


class _Finder:
    """Finds `MODULES` in `DIR` when `active()`; every other name, and every name when not, is left to the
    finders after it."""

    @staticmethod
    def find_spec(fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname not in _MODULE_SET or not active():
            return None
        location = str(DIR / shim_name(fullname))
        return spec_from_file_location(fullname, location, loader=ExtensionFileLoader(fullname, location))


_MODULE_SET = frozenset(MODULES)


def install() -> None:
    """Put the finder first on `sys.meta_path` (once)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
