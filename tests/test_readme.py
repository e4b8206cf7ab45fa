"""The README's snippets run as written (issue 16, item 9): every Python block, in a fresh folder, and the
first look at a real session, whose quoted summary must be what the command prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
PYTHON_BLOCKS = re.findall(r"^```python\n(.*?)^```$", README, flags=re.S | re.M)


def test_the_readme_has_python_snippets() -> None:
    assert PYTHON_BLOCKS  # a parametrized test over nothing would pass silently


@pytest.mark.parametrize("code", PYTHON_BLOCKS, ids=[f"python-block-{i + 1}" for i in range(len(PYTHON_BLOCKS))])
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
