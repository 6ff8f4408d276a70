"""The repository stands alone: its tracked files speak of the software, not of how it was made
(no work periods or workers, no issue numbers, no borrowed machines), name no folder outside the
checkout beyond the documented Stacks corpus default, and no absolute path of a particular
machine. What a guard below allows is listed in ALLOWED, kept small; and the version is one.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: `git grep -i -w -E "sessions?|engineers?|lent|issues? [0-9]+"`, as a Python pattern
WORDS = re.compile(r"(?i)(?<!\w)(sessions?|engineers?|lent|issues? [0-9]+)(?!\w)")
#: the folder beside the checkout that CI holds the Stacks corpus and the paper's text in
OUTSIDE = re.compile(r"\.\./shared")
#: absolute paths of one machine (a home, a work folder, a named temporary folder)
MACHINE = re.compile(r"(?<![\w.~])/(work|home|root|Users)/\w|/tmp/pm")

#: (guard (None: every guard), file glob, what the line must hold for the guard to let it pass)
ALLOWED: tuple[tuple[re.Pattern | None, str, str], ...] = (
    (None, "tests/test_standalone.py", ""),  # this file: the guards and their own test
    (WORDS, "tests/*.py", 'scope="session"'),  # pytest's fixture scope
    (OUTSIDE, ".ci/run", ""),  # CI's corpus and paper text
    (OUTSIDE, "config/stacks.yaml", ""),  # the documented default of the Stacks corpus
    (OUTSIDE, "docs/data.md", "config/stacks.yaml"),  # ... and where the docs say so
    (OUTSIDE, "CONTRIBUTING.md", "config/stacks.yaml"),
    (OUTSIDE, "pyproject.toml", "stacks:"),  # the `stacks` marker: what it needs
    (OUTSIDE, "tests/conftest.py", "pytest.skip"),  # the tests' corpus lookup
    (OUTSIDE, "tests/test_stacks.py", "pytest.skip"),
)
BINARY = (".png", ".jpg", ".pdf", ".gz", ".parquet", ".whl")


def _tracked() -> list[str]:
    done = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    return [p for p in done.stdout.split("\0") if p and not p.endswith(BINARY)]


def _allowed(guard: re.Pattern, path: str, line: str) -> bool:
    return any(
        g in (guard, None) and Path(path).match(glob) and held in line for g, glob, held in ALLOWED
    )


def offending(paths: list[str], root: Path = REPO) -> list[str]:
    """``path:line: text`` for each line a guard catches and ALLOWED does not let pass."""
    found = []
    for path in paths:
        try:
            text = (root / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):  # binary, a link to a folder, gone
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for guard in (WORDS, OUTSIDE, MACHINE):
                if guard.search(line) and not _allowed(guard, path, line):
                    found.append(f"{path}:{number}: {line.strip()[:120]}")
    return found


def test_tracked_files_speak_only_of_the_software():
    bad = offending(_tracked())
    assert not bad, "words of the making, outside folders or machine paths:\n" + "\n".join(bad)


def test_the_guards_catch_what_they_should(tmp_path):
    (tmp_path / "a.md").write_text(
        "This session measured it.\nSee issue 33.\nA GPU was lent.\nIn /work/main/x.\n"
        "Read ../shared/notes.\nAn HTTP client keeps its connection.\n"
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text('@pytest.fixture(scope="session")\n')
    assert [b.split(":")[1] for b in offending(["a.md", "tests/t.py"], tmp_path)] == [
        "1",
        "2",
        "3",
        "4",
        "5",
    ]


def test_one_version():
    """pyproject's version is the package's, the newest CHANGELOG entry's and CITATION.cff's."""
    from proofmatch import __version__

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    changelog = re.search(r"^## \[(\d+\.\d+\.\d+)\]", (REPO / "CHANGELOG.md").read_text(), re.M)
    citation = re.search(r"^version: (\S+)$", (REPO / "CITATION.cff").read_text(), re.M)
    assert project["version"] == __version__ == changelog.group(1) == citation.group(1)
    for name in ("LICENSE", "CITATION.cff", "CONTRIBUTING.md", "CHANGELOG.md"):
        assert (REPO / name).is_file(), name
