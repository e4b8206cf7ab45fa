"""The documentation (issue 67): the site builds with `mkdocs build --strict` (a broken link or a docstring
mkdocstrings cannot render fails it), the README stays a front page, and neither it nor the guide pages carry
dated run notes (measurements live in the files their benchmarks write; changes in the CHANGELOG)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")


def _prose(text: str) -> str:
    """The text without code blocks and code spans (a date in an example or a header name is not a note)."""
    return re.sub(r"`[^`]*`", "", re.sub(r"^```.*?^```$", "", text, flags=re.S | re.M))


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).parent / "mkdocs"
    if not mkdocs.exists() and shutil.which("mkdocs") is None:
        pytest.fail("mkdocs is not installed: it is part of the test extra")
    proc = subprocess.run([str(mkdocs) if mkdocs.exists() else "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "config" / "index.html").read_text().count("CompactionConfig") > 3


def test_the_readme_is_a_front_page() -> None:
    readme = (ROOT / "README.md").read_text().splitlines()
    assert len(readme) <= 200
    assert any("jev cost" in line for line in readme[:50]), "costing your own sessions is on the first screen"


@pytest.mark.parametrize("page", ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "guide").glob("*.md"))])
def test_no_dated_run_notes(page: str) -> None:
    dates = DATE.findall(_prose((ROOT / page).read_text()))
    assert not dates, f"{page} holds dated notes ({', '.join(dates)}): measurements belong in benchmark files"


def test_a_dated_note_is_seen() -> None:
    assert DATE.findall(_prose("measured 2026-12-06 on this machine; `header-2026-08-01` is a name"))  == ["2026-12-06"]
