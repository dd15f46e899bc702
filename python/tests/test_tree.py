"""The repository's own rules, checked on its tracked files: scripts/ holds the tools a
maintainer runs (at most 25), each saying how it is run."""
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def tracked(prefix):
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", prefix], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [ROOT / p for p in out.stdout.split()]


def test_scripts_are_maintained_tools_with_a_usage_line():
    scripts = tracked("scripts/")
    assert 0 < len(scripts) <= 25, [p.name for p in scripts]
    for p in scripts:
        head = "\n".join(p.read_text(encoding="utf-8").splitlines()[:25])
        said = re.search(rf"(bash|python3) scripts/{re.escape(p.name)}\b", head) or "Sourced by" in head
        assert said, f"{p.relative_to(ROOT)}: its header says nowhere how it is run (`bash scripts/{p.name} ...`)"
