"""Shared test fixtures: the repository root, the optional Stacks corpus beside it, one torch
thread, and the search tests' small demo build with its index; and the guard that keeps the
README's word that ``-m "not slow"`` leaves out every workflow run."""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STACKS = REPO.parent / "shared" / "corpora" / "stacks"


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def stacks_dir() -> Path:
    """The Stacks corpus; skip without it, unless PROOFMATCH_REQUIRE_STACKS=1 (CI) makes that a failure."""
    if not (STACKS / "xhtml").is_dir():
        if os.environ.get("PROOFMATCH_REQUIRE_STACKS") == "1":
            pytest.fail(f"PROOFMATCH_REQUIRE_STACKS=1 but {STACKS}/xhtml is absent")
        pytest.skip("../shared/corpora/stacks is absent")
    return STACKS


@pytest.fixture
def paper_text() -> str:
    """The MATcH paper's text (a plain-text file named by ``PROOFMATCH_PAPER_TEXT``; CI sets it);
    skip without it, unless PROOFMATCH_REQUIRE_PAPER_TEXT=1 (CI) makes that a failure."""
    path = os.environ.get("PROOFMATCH_PAPER_TEXT")
    if not path or not Path(path).is_file():
        why = (
            f"PROOFMATCH_PAPER_TEXT={path!r} is no file"
            if path
            else "PROOFMATCH_PAPER_TEXT is unset"
        )
        if os.environ.get("PROOFMATCH_REQUIRE_PAPER_TEXT") == "1":
            pytest.fail(f"PROOFMATCH_REQUIRE_PAPER_TEXT=1 but {why}")
        pytest.skip(why)
    return Path(path).read_text(encoding="utf-8")


@pytest.fixture
def one_thread():
    """Torch on one thread: tiny models run faster and steadier on a shared 2-core machine."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def search_demo(tmp_path_factory) -> dict[str, Path]:
    """The test run's one small demo build for the search and web tests (tests/searchdata.py):
    pairs, a split, an NPT run and its search index."""
    from searchdata import mini_demo

    return mini_demo(tmp_path_factory)


@pytest.fixture(scope="session")
def search_index(search_demo):
    from proofmatch.search.index import SearchIndex

    return SearchIndex(search_demo["index"])


@pytest.fixture(scope="session")
def fusion_index(search_demo, tmp_path_factory):
    """A fusion index (NPT + BM25, λ from the run's fusion.json) of the small demo build."""
    from searchdata import fusion_index as build

    from proofmatch.search.index import SearchIndex

    return SearchIndex(build(search_demo, tmp_path_factory.mktemp("fusion")))


# ----------------------------------------------------------------------------- workflow runs are slow

# Snakemake options after which it only plans, checks or reports, never runs a job.
PLAN_ONLY = {
    "-n",
    "--dry-run",
    "--dryrun",
    "--lint",
    "--list-rules",
    "--list",
    "-l",
    "--summary",
    "-S",
    "--detailed-summary",
    "-D",
    "--dag",
    "--rulegraph",
    "--filegraph",
    "--report",
}


def runs_workflow(args: str | os.PathLike | list | tuple) -> bool:
    """Whether a command line starts Snakemake to run jobs: ``snakemake`` (a program or
    ``python -m snakemake``, also behind ``timeout`` or ``bash -c``) without an option that only
    plans or checks (``-n`` and its clusters such as ``-np``, ``--lint``, ...)."""
    argv = (
        shlex.split(str(args)) if isinstance(args, (str, os.PathLike)) else [str(a) for a in args]
    )
    if argv and Path(argv[0]).name in ("bash", "sh") and "-c" in argv[:-1]:
        argv = shlex.split(argv[argv.index("-c") + 1])
    start = next((i for i, w in enumerate(argv) if Path(w).name == "snakemake"), None)
    if start is None:
        return False
    options = argv[start + 1 :]
    plans = any(
        o in PLAN_ONLY
        or (o.startswith("-") and not o.startswith("--") and o[1:].isalpha() and "n" in o)
        for o in options
    )
    return not plans


_current: pytest.Item | None = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Remember the running test (its fixtures' set-up included) for :func:`_guarded_popen`."""
    global _current
    _current = item
    yield
    _current = None


_popen_init = subprocess.Popen.__init__


def _guarded_popen(self, args, *rest, **kwargs):  # type: ignore[no-untyped-def]
    """A test not marked slow that starts a workflow run fails here, before the run starts: the
    README says ``-m "not slow"`` leaves the workflow runs out, and this keeps it so."""
    if _current is not None and _current.get_closest_marker("slow") is None and runs_workflow(args):
        shown = args if isinstance(args, (str, os.PathLike)) else " ".join(map(str, args))
        pytest.fail(
            f"{_current.nodeid} runs workflow jobs ({str(shown)[:200]}) but is not "
            "marked @pytest.mark.slow; a dry run (-n) or --lint plans only and may stay unmarked",
            pytrace=False,
        )
    _popen_init(self, args, *rest, **kwargs)


subprocess.Popen.__init__ = _guarded_popen  # type: ignore[method-assign]


# ----------------------------------------------------------------------------- two workers

# The suite runs on two pytest-xdist workers (pyproject.toml: ``-n 2 --dist loadgroup
# --no-loadscope-reorder``). xdist hands out one group at a time, to whichever worker runs low, so
# the two stay busy until the queue is empty; a fixture is built once, on the worker that runs its
# group. The groups:
# - ``demo-run``: the tests that read the demo's whole smoke run (``demo_run``, most of one worker's
#   time), handed out first so that nothing waits for it at the end;
# - ``search-demo``: every module that uses the test run's small search build (``search_demo``);
# - one group per other module (its module-scoped fixtures stay on one worker).
# Then the modules with workflow runs (``slow``), the longest tests, before the quick ones.
# Two fixed groups (the smoke run's and the rest) left one worker idle for minutes whenever one of
# them changed (docs/benchmarks.md, "Test suite wall clock").
DEMO_RUN_GROUP = "demo-run"
SEARCH_DEMO_GROUP = "search-demo"
SEARCH_DEMO_FIXTURES = {"search_demo", "search_index", "fusion_index"}


def xdist_group(item: pytest.Item, search_modules: set[str]) -> str:
    """The xdist group of a test (see above)."""
    if "demo_run" in getattr(item, "fixturenames", ()):
        return DEMO_RUN_GROUP
    return SEARCH_DEMO_GROUP if item.path.name in search_modules else item.path.name


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test with its xdist group and order the groups: the smoke run's first, then
    groups with a workflow run, then the rest (before xdist's own hook reads the groups)."""
    search_modules = {
        item.path.name
        for item in items
        if SEARCH_DEMO_FIXTURES & set(getattr(item, "fixturenames", ()))
    }
    groups = {item.nodeid: xdist_group(item, search_modules) for item in items}
    slow = {groups[item.nodeid] for item in items if item.get_closest_marker("slow")}
    for item in items:
        item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
    rank = {DEMO_RUN_GROUP: 0} | {group: 1 for group in slow - {DEMO_RUN_GROUP}}
    items.sort(key=lambda item: rank.get(groups[item.nodeid], 2))
