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


_FIGURE = re.compile(r"\d[\d.,]*\s*(GB/s|TB/s)|\b(H100|H200|A100|V100|L40S?|RTX ?\d{4})\b")


def test_code_comments_under_compiler_and_runtime_hold_no_measurements():
    # Comments say why; the numbers behind a choice live in docs/performance.md (or bench/results).
    anchors = set(re.findall(r"^### (\S+)$", (ROOT / "docs" / "performance.md").read_text(encoding="utf-8"), re.M))
    bad, missing = [], []
    for p in tracked("compiler/") + tracked("runtime/"):
        if p.suffix not in (".h", ".cpp", ".def"):
            continue
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            at = line.find("//")
            if at < 0:
                continue
            comment = line[at:]
            if _FIGURE.search(comment):
                bad.append(f"{p.relative_to(ROOT)}:{n}: {comment.strip()}")
            for a in re.findall(r"docs/performance\.md#([\w-]+)", comment):
                if a not in anchors:
                    missing.append(f"{p.relative_to(ROOT)}:{n}: #{a}")
    assert not bad, "measurements in code comments (move them to docs/performance.md):\n" + "\n".join(bad)
    assert not missing, "comments point at sections docs/performance.md lacks:\n" + "\n".join(missing)


def test_every_environment_variable_read_is_listed():
    # runtime/environment.def and include/loom/tuning.def list what loom reads; `loom env` prints them.
    listed = set(re.findall(r"LOOM_ENV\((\w+),", (ROOT / "runtime" / "environment.def").read_text(encoding="utf-8")))
    listed |= set(re.findall(r"LOOM_(?:KNOB|SWITCH)\((\w+),", (ROOT / "include" / "loom" / "tuning.def").read_text(encoding="utf-8")))
    read = re.compile(r"""(?:getenv|environmentValue|environ\.get|environ\[)\(?\s*["'](LOOM_\w+)["']""")
    unlisted = []
    for p in tracked("ir/") + tracked("runtime/") + tracked("capi/") + tracked("tools/") + tracked("python/loom/"):
        if p.suffix in (".h", ".cpp", ".py"):
            unlisted += [f"{p.relative_to(ROOT)}: {name}" for name in read.findall(p.read_text(encoding="utf-8"))
                         if name not in listed]
    assert not unlisted, "read but not in runtime/environment.def:\n" + "\n".join(unlisted)


# Words that meant something only while loom was being built, not to a reader of the project: the
# numbered steps of its development ("stop" and a number), working sessions, reviews by helpers,
# tracker issue numbers. Neither a tracked file's name nor its text uses them; a record or comment
# says what was measured or decided, at which commit.
_DEVELOPMENT_TALK = re.compile(
    r"(?<![a-z])stops?[ _-]?\d+"  # a numbered step, also inside a name (gpu_stopNN.sh, -stopNN-)
    r"|\bthis stop\b|\bstop's\b"
    r"|\bissues? ?#\d+|\bissues \d+ (?:and|or|to)\b|\bissue's\b"  # a tracker issue by number
    r"|\bissue ?\d+(?!\s+(?:loads?|stores?|instructions?|copies|requests?|bytes|warps?|blocks?|times)\b)"
    r"|\bsessions?\b"
    r"|\b(?:helper|sub-?agent)(?:s|'s|s')? (?:sessions?|reviews?|reading)\b|\bsub-?agents?\b",
    re.I)


def test_no_tracked_file_speaks_of_development_steps_sessions_helpers_or_issue_numbers():
    bad = []
    for p in tracked("."):
        name = p.relative_to(ROOT).as_posix()
        m = _DEVELOPMENT_TALK.search(name)
        if m:
            bad.append(f"{name}: (its name) {m.group(0)!r}")
        if not p.is_file() or p.is_symlink() or p == Path(__file__).resolve():
            continue  # (this file names the words it looks for)
        data = p.read_bytes()
        if b"\0" in data:
            continue  # binary
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue  # binary
        for n, line in enumerate(text.splitlines(), 1):
            found = [m.group(0) for m in _DEVELOPMENT_TALK.finditer(line)]
            if found:
                bad.append(f"{name}:{n}: {', '.join(repr(f) for f in found)}: {line.strip()[:160]}")
    if bad:
        pytest.fail(f"{len(bad)} lines of tracked files speak of development steps, sessions, helpers or issue "
                    "numbers (reword them to speak of the project itself):\n" + "\n".join(bad), pytrace=False)


def test_catch2_test_names_close_their_square_brackets():
    # CTest discovers test cases as a CMake list of names, where a `[` keeps every `;` after it
    # from separating entries: the names after an unclosed one merge into a single test.
    bad = []
    for p in tracked("tests/"):
        if p.suffix != ".cpp":
            continue
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            m = re.search(r'TEST_CASE\("([^"]*)"', line)
            unpaired = re.sub(r"\[[^\[\]]*\]", "", m.group(1)) if m else ""
            if "[" in unpaired or "]" in unpaired:
                bad.append(f"{p.relative_to(ROOT)}:{n}: {m.group(1)}")
    assert not bad, bad
