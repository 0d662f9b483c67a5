"""Working-process words stay out of the product: no tracked text file says "session N" or
"issue N" (a work session or a tracker number means nothing to a reader of the code; say what
the thing is, or give a date or a commit).

Reads the file list from ``git ls-files`` at the repository root; skips when git is missing or
the directory is not a git checkout (an unpacked source tree).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Case-insensitive; a word, one space, a number. (The examples in this file are written in
#: pieces, so that the file does not trip its own test.)
PROCESS_WORDS = re.compile(r"session [0-9]+|issue [0-9]+", re.IGNORECASE)

#: Files not yet held to the rule: the Markdown docs (rewritten separately). Every other
#: tracked text file is held to it; add a file here only while it is being rewritten.
EXEMPT_SUFFIXES = frozenset({".md"})
EXEMPT: frozenset[str] = frozenset()


def _tracked_files() -> list[str]:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not available")
    top = subprocess.run([git, "-C", str(REPO), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if top.returncode != 0 or Path(top.stdout.strip()).resolve() != REPO:
        pytest.skip(f"{REPO} is not a git checkout")
    done = subprocess.run([git, "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True, timeout=60)
    return [name for name in done.stdout.decode("utf-8", "surrogateescape").split("\0") if name]


def _is_exempt(name: str) -> bool:
    return name in EXEMPT or Path(name).suffix.lower() in EXEMPT_SUFFIXES


def _text(path: Path) -> str | None:
    """The file's text, or None for a binary file (a NUL byte, as git decides) or a missing one."""
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None  # deleted in the work tree but still tracked, or a submodule
    if b"\0" in data[:8000]:
        return None
    return data.decode("utf-8", errors="replace")


def process_words(repo: Path, names: list[str]) -> list[str]:
    """``file:line: text`` for every line of a non-exempt tracked text file that matches."""
    found = []
    for name in names:
        if _is_exempt(name) or name.startswith(".git/"):
            continue
        text = _text(repo / name)
        if text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if PROCESS_WORDS.search(line):
                found.append(f"{name}:{number}: {line.strip()[:160]}")
    return found


SESSION, ISSUE = "Session", "ISSUE"  # matched case-insensitively


def test_the_pattern_catches_the_variants_and_leaves_product_words():
    assert PROCESS_WORDS.search(f"measured (benchmarks/README.md, {SESSION} 7)")
    assert PROCESS_WORDS.search(f"the entity registry ({ISSUE} 13)")
    assert PROCESS_WORDS.search(f"the entity registry ({ISSUE.lower()} 13)")
    assert not PROCESS_WORDS.search("a SparkSession per job; issues found: 13")
    assert not PROCESS_WORDS.search("the session's 2 executors")


def test_the_scan_reports_file_and_line_and_honours_the_exemptions(tmp_path, monkeypatch):
    said = f"# the registry ({ISSUE} 13)"
    (tmp_path / "a.py").write_text(f"x = 1\n{said}\n")
    (tmp_path / "b.md").write_text(f"{SESSION} 4\n")
    (tmp_path / "bin.dat").write_bytes(b"\0" + f"{SESSION} 4\n".encode())
    exempt = "pkg/being_rewritten.py"
    monkeypatch.setattr(sys.modules[__name__], "EXEMPT", frozenset({exempt}))
    (tmp_path / exempt).parent.mkdir(parents=True)
    (tmp_path / exempt).write_text(f"{SESSION} 4\n")
    names = ["a.py", "b.md", "bin.dat", "gone.py", exempt]
    assert process_words(tmp_path, names) == [f"a.py:2: {said}"]


def test_no_tracked_file_speaks_of_sessions_or_issue_numbers():
    names = _tracked_files()
    assert names, "git ls-files listed nothing"
    found = process_words(REPO, names)
    assert not found, (
        "say what the thing is, or give a date or a commit, instead of a session or issue number:\n"
        + "\n".join(found)
    )
