"""The README opens with the two set-up commands, its generated parts are current, and every command
in it works as written after a plain `pip install .`, run from another directory."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from evcli import native
from tests.conftest import REPO

README = (REPO / "README.md").read_text()


def test_readme_opens_with_two_setup_commands_and_ci_runs_the_second():
    """CI runs the README's install, then ruff and mypy, then the README's test run."""
    first_block = re.search(r"```sh\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert README.index("```sh") < README.index("## ")
    assert len(first_block) == 2
    install_and_run, install_and_test = first_block
    assert install_and_run.startswith("pip install . && evcli ")
    assert "prometheus prometheus-alertmanager" in install_and_test
    test_command = install_and_test[install_and_test.index("pip install") :]
    assert test_command == "pip install -e '.[test]' && python -m pytest -q"
    ci_lines = (REPO / ".ci" / "run").read_text().splitlines()
    install, run_tests = test_command.split(" && ")
    checks = ["ruff check .", "ruff format --check .", "mypy"]
    assert all(line in ci_lines for line in [install, *checks, run_tests])
    positions = [ci_lines.index(line) for line in [install, *checks, run_tests]]
    assert positions == sorted(positions)
    ci_script = "\n".join(ci_lines)
    assert "apt-get install" in ci_script and "prometheus-alertmanager" in ci_script


def test_generated_sections_are_current():
    completed = subprocess.run(
        [sys.executable, "-m", "cogapp", "--check", "README.md"], capture_output=True, text=True, cwd=REPO
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


# --- every README command, against a plain (non-editable) install, from another directory ---------------

# Commands that need a server or a model account at the address they name: shown, not run.
NEEDS_A_SERVER = re.compile(r"https?://|--model (?!offline)")
EXPECTED_EXIT = re.compile(r"#\s*exit (\d+)")


def readme_commands() -> list[str]:
    """The shell lines of README.md in order: every `evcli` line of its sh blocks (the first block's
    install is the wheel below) and the `run:` steps of the CI job."""
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", README, re.S):
        for line in block.splitlines():
            line = line.removeprefix("pip install . && ")
            if line.startswith("evcli "):
                commands.append(line)
    ci_job = re.search(r"```yaml\n(.*?)```", README, re.S).group(1)
    steps = [step.strip() for step in re.findall(r"^\s*(?:- )?run: (.*)$", ci_job, re.M)]
    commands += [step for step in steps if not step.startswith("pip install")]  # the install is the wheel
    return commands


@pytest.fixture(scope="session")
def installed_bin(tmp_path_factory) -> Path:
    """A virtualenv with the wheel of this checkout installed by pip (no editable path to the repo);
    its dependencies come from the test environment's site-packages through a .pth line, so nothing
    is downloaded."""
    root = tmp_path_factory.mktemp("installed")
    wheels, venv = root / "wheels", root / "venv"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", wheels, REPO], check=True, cwd=root)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.check_output(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    (site / "test_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # .pth files there stay unread
    (wheel,) = wheels.glob("evcli-*.whl")
    subprocess.run([*pip, "--python", python, "install", "--no-deps", "-q", wheel], check=True, cwd=root)
    where = subprocess.check_output([python, "-c", "import evcli; print(evcli.__file__)"], text=True, cwd=root)
    assert Path(where.strip()).is_relative_to(site), where  # the installed copy, not the checkout
    return venv / "bin"


@pytest.mark.readme_install
def test_every_readme_command_works_after_a_plain_install(installed_bin, tmp_path):
    commands = readme_commands()
    skipped = [command for command in commands if NEEDS_A_SERVER.search(command)]
    assert len(skipped) == 8 and all("http" in c or "--model" in c for c in skipped), skipped
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    env = {
        "PATH": f"{installed_bin}{os.pathsep}/usr/bin:/bin",
        "HOME": str(tmp_path),
        "EVCLI_HOME": str(tmp_path / "evcli-home"),
        "COLUMNS": "120",
    }
    failures = []
    for command in commands:
        if command in skipped:
            continue
        expected = int(EXPECTED_EXIT.search(command).group(1)) if EXPECTED_EXIT.search(command) else 0
        done = subprocess.run(["bash", "-c", command], cwd=workdir, env=env, capture_output=True, text=True)
        if done.returncode != expected:
            failures.append(f"{command}\n  exit {done.returncode} (expected {expected}): {done.stderr.strip()[-400:]}")
    assert failures == [], "\n".join(failures)
    assert len(commands) - len(skipped) >= 30


@pytest.mark.readme_install
def test_the_installed_wheel_runs_the_compiled_gatekeeper(installed_bin):
    """The wheel carries the checkout's compiled Gatekeeper modules (hatch_build.py) and loads them."""
    if not native.MANIFEST.is_file():
        pytest.skip("the checkout has no compiled build (tests/test_native.py says why)")
    script = "import evcli.native as n, evcli.gatekeeper.typed as t; print(n.active(), t.__spec__.origin)"
    run = [installed_bin / "python", "-c", script]
    active, origin = subprocess.check_output(run, text=True, cwd=installed_bin).split()  # not the checkout
    assert active == "True"
    assert "site-packages" in origin and origin.endswith(native.EXTENSION_SUFFIXES[0])
