"""The wheel's build hook: compile the Gatekeeper's hot modules (`evcli.native.MODULES`) with mypyc.

What it writes: `evcli/_native/` (one entry point per module, mypyc's shared library of them, and the
manifest of the sources they were built from), replaced whole and only once the build succeeded. A standard
wheel carries that directory and is tagged for this interpreter and platform; an editable install reads it
from the checkout. When anything fails (no C compiler, no Python headers, a mypy error) the build says so and
goes on pure Python: evcli then loads every module from its source (evcli/native.py), only slower.
`EVCLI_NATIVE=0` skips the compilation.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if os.environ.get("EVCLI_NATIVE") == "0":
            self.app.display_info("evcli: EVCLI_NATIVE=0, the Gatekeeper stays pure Python")
            return
        native = load_native(Path(self.root))
        if native.built_from_these_sources():
            self.app.display_info("evcli: the Gatekeeper's compiled modules are current")
        else:
            try:
                build(Path(self.root), native)
            except (Exception, SystemExit) as error:  # mypy leaves with SystemExit on a type error
                self.app.display_warning(
                    f"evcli: the Gatekeeper's compiled modules were not built ({type(error).__name__}: {error}); "
                    "evcli runs them as Python"
                )
                return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if version == "standard":
            build_data["force_include"][str(native.DIR)] = "evcli/_native"


def load_native(root: Path) -> ModuleType:
    """evcli/native.py of the checkout at `root`, without importing the package (its dependencies may not be
    installed yet)."""
    spec = importlib.util.spec_from_file_location("_evcli_native_build", root / "evcli" / "native.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(root: Path, native: ModuleType) -> None:
    """Compile `native.MODULES` of the checkout at `root` into `native.DIR`; raises when any step fails (the
    directory is then as it was)."""
    from mypyc.build import mypycify
    from setuptools import Distribution

    package = root / "evcli"
    target: Path = native.DIR
    with tempfile.TemporaryDirectory(prefix="evcli-native-") as tmp:
        work = Path(tmp)
        cwd = os.getcwd()
        os.chdir(root)  # mypy reads the project's configuration (pyproject.toml) and names modules from here
        try:
            sources = [str(native.source(module, package).relative_to(root)) for module in native.MODULES]
            # Only the compiled modules' own errors count: the modules they import are read for their types
            # alone, in a build environment that may lack the packages those import (polars: an ignore there
            # may look unused).
            options = ["--follow-imports=silent", "--no-warn-unused-ignores"]
            extensions = mypycify(
                [*options, *sources], group_name=native.GROUP, target_dir=str(work / "c"), debug_level="0"
            )
            arguments = ["build_ext", "--build-lib", str(work / "lib"), "--build-temp", str(work / "tmp")]
            distribution = Distribution({"name": "evcli-native", "ext_modules": extensions, "script_args": arguments})
            distribution.parse_command_line()
            distribution.run_commands()
        finally:
            os.chdir(cwd)
        staged = work / "native"
        staged.mkdir()
        built = work / "lib"
        for module in native.MODULES:
            *package_parts, name = module.split(".")
            shim = built.joinpath(*package_parts, name + native.EXTENSION_SUFFIXES[0])
            shutil.copy2(shim, staged / native.shim_name(module))
        shutil.copy2(built.joinpath(*native.GROUP.split(".")[:-1], native.GROUP_FILE), staged / native.GROUP_FILE)
        lines = [f"suffix {native.EXTENSION_SUFFIXES[0]}"] + [native.manifest_line(m, package) for m in native.MODULES]
        (staged / "manifest.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        shutil.move(str(staged), target)
