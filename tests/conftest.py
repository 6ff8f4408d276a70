"""Shared test fixtures: the repository root, the optional Stacks corpus beside it, one torch
thread, and the search tests' small demo build with its index."""

from __future__ import annotations

import os
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
