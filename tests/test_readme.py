"""The snippets of the README and of every documentation page run as written (issue 16, item 9; issue 35,
item 8; issue 67): every Python block, in a fresh folder; every shell block, in order — the README's first,
then the pages' in the site's navigation order — from a folder laid out as the repository root (the shipped
sample data, the virtual environment the two commands made); and the first look at a real session, whose
quoted summary must be what the command prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def pages() -> list[Path]:
    """The README, then every page of the documentation site in its navigation order (`mkdocs.yml`)."""
    nav = re.findall(r"^\s*-\s*(?:[^:\n]+:\s*)?([\w/.-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), flags=re.M)
    return [ROOT / "README.md", *(ROOT / "docs" / page for page in nav)]


SOURCES = [(path.relative_to(ROOT), path.read_text()) for path in pages()]
PYTHON_BLOCKS = [(f"{name}:{k + 1}", block) for name, text in SOURCES
                 for k, block in enumerate(re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M))]
SHELL_BLOCKS = [block for _name, text in SOURCES for block in re.findall(r"^```bash\n(.*?)^```$", text,
                                                                          flags=re.S | re.M)]
# the two commands' installs, and the test commands (this suite is one of them), are what CI itself runs
RUN_HERE = [block for block in SHELL_BLOCKS if "pip install" not in block and "pytest" not in block]


def test_the_readme_has_python_snippets() -> None:
    assert PYTHON_BLOCKS  # a parametrized test over nothing would pass silently


@pytest.mark.parametrize("code", [code for _where, code in PYTHON_BLOCKS], ids=[where for where, _code in PYTHON_BLOCKS])
def test_python_snippet_runs_as_written(code: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for key in ("TYPESAFE_API_KEY", "JEV_API_KEY", "OPENAI_API_KEY"):  # the snippets need no key
        env.pop(key, None)
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode == 0, proc.stderr


def test_first_look_prints_what_the_readme_quotes() -> None:
    block = re.search(r"^```bash\n(\.venv/bin/jev compact examples/data/\S+ .*?)^```$", README, flags=re.S | re.M)
    assert block is not None
    command, *quoted = block.group(1).strip().splitlines()
    args = command.split(">")[0].split()[2:]  # after ".venv/bin/jev compact"
    proc = subprocess.run([sys.executable, "-m", "jev.cli.main", "compact", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    printed = " ".join(proc.stderr.split())
    for line in quoted:
        assert " ".join(line.lstrip("# ").split()) in printed


@pytest.mark.slow
def test_every_shell_snippet_runs_as_written_in_order(tmp_path: Path) -> None:
    """From a folder laid out as a fresh clone's root after the two commands (`examples/`, `.venv/`), the
    README's shell blocks run one after another in one shell — later ones use what earlier ones wrote."""
    assert len(RUN_HERE) >= 4, "the README's own sessions, the command line's and the rollout's blocks"
    bin_dir = Path(sys.executable).parent
    if not (bin_dir / "jev").exists():
        pytest.skip(f"the jev command is not installed beside {sys.executable}")
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)  # activates the environment running these tests, as the two commands' .venv
    (venv / "activate").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    (venv / "jev").symlink_to(bin_dir / "jev")
    script = "set -euo pipefail\n" + "\n".join(RUN_HERE)
    env = {**os.environ, "COLUMNS": "200"}
    for key in ("TYPESAFE_API_KEY", "JEV_API_KEY", "OPENAI_API_KEY"):
        env.pop(key, None)
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "restored.json").exists() and (tmp_path / "calib" / "thresholds.json").exists()
