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
def one_thread():
    """Torch on one thread: tiny models run faster and steadier on a shared 2-core machine."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session")
def search_demo(tmp_path_factory) -> dict[str, Path]:
    """The session's one small demo build for the search and web tests (tests/searchdata.py):
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

# The suite runs on two pytest-xdist workers (pyproject.toml: ``-n 2 --dist loadgroup``): the
# demo's whole smoke run (``demo_run``: 1,058 s of setup in a 2,420 s one-process run,
# docs/benchmarks.md) in one group, every other test in the other, so the two overlap instead of
# queueing.
# Two groups, not one per file: a module- or session-scoped fixture (``demo_run``, ``npt_build``,
# ``search_demo``) is then built once, on the one worker that uses it.
DEMO_RUN_GROUP = "demo-run"
REST_GROUP = "rest"
# Modules that keep their fixtures to themselves and run beside the smoke run instead: at a2b2ef7
# the other group was the longer one by about 4 minutes (docs/benchmarks.md, "Test suite wall
# clock"), and these two took about 3 of them.
BESIDE_THE_SMOKE_RUN = ("test_resume.py", "test_ddp.py")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put every test that reads ``demo_run``, and the modules of :data:`BESIDE_THE_SMOKE_RUN`, in
    one xdist group and the rest in another (before xdist's own hook reads the groups)."""
    for item in items:
        beside = "demo_run" in getattr(item, "fixturenames", ())
        beside = beside or item.path.name in BESIDE_THE_SMOKE_RUN
        item.add_marker(pytest.mark.xdist_group(DEMO_RUN_GROUP if beside else REST_GROUP))
