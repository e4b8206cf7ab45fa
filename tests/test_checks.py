"""The linter and the type checker, with the settings in pyproject.toml, pass on the whole tree: they run
with the suite so that `.ci/run` (the README's test command) runs them too."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)


def test_ruff_passes() -> None:
    ran = _run("ruff", "check", "jev", "archive", "calibration", "benchmarks", "tests", "examples", "servers")
    assert ran.returncode == 0, ran.stdout + ran.stderr


def test_mypy_passes() -> None:
    ran = _run("mypy")  # files and settings: [tool.mypy] in pyproject.toml
    assert ran.returncode == 0, ran.stdout + ran.stderr
