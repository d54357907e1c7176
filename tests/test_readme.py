"""The README opens with the two set-up commands, and its generated parts are current."""

from __future__ import annotations

import re
import subprocess
import sys

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
