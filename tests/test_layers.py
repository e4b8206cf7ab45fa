"""The stages' layering (pyproject's import-linter contract): kept by the code, and broken by a wrong-way
import planted in a copy of the package, so the contract can fail."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(package_parent: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with pyproject's contract over the `jev` package found in `package_parent`."""
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run([str(LINT), "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=package_parent,
                          env=env, capture_output=True, text=True, timeout=60)


def test_the_stages_import_one_way(tmp_path: Path) -> None:
    kept = lint(ROOT)
    assert kept.returncode == 0 and "1 kept, 0 broken" in kept.stdout, kept.stdout + kept.stderr
    shutil.copytree(ROOT / "jev", tmp_path / "jev", ignore=shutil.ignore_patterns("__pycache__", "*.json"))
    planted = tmp_path / "jev" / "model" / "transcript.py"  # the message model reaching up into the compactor
    planted.write_text(planted.read_text() + "\nfrom ..running.compactor import Compactor  # noqa: E402,F401\n")
    broken = lint(tmp_path)
    assert broken.returncode != 0 and "BROKEN" in broken.stdout, broken.stdout + broken.stderr
    assert "jev.model.transcript -> jev.running.compactor" in broken.stdout


def test_the_stages_read_as_the_pipeline_and_old_paths_warn() -> None:
    """`ls jev/` lists the stages (and the error family), no flat module: each module moved into its stage,
    and its old path imports as the module it moved to, with a DeprecationWarning that names the new one."""
    import importlib
    import warnings

    from jev.old_paths import MOVED
    listed = sorted(p.name for p in (ROOT / "jev").iterdir() if p.name != "__pycache__")
    assert listed == ["__init__.py", "applying", "billing", "cli", "deciding", "errors.py", "formats",
                      "integrations", "judges", "model", "old_paths.py", "providers", "py.typed", "reading",
                      "running", "support"]
    for old, new in MOVED.items():
        sys.modules.pop(old, None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = importlib.import_module(old)
        assert module is importlib.import_module(new) and module.__spec__.name == new
        assert any(issubclass(w.category, DeprecationWarning) and f"{old} moved to {new}" in str(w.message)
                   for w in caught), old
