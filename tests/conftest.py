"""Shared test fixtures: the repository root and the optional Stacks corpus beside it."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STACKS = REPO.parent / "shared" / "corpora" / "stacks"


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture
def stacks_dir() -> Path:
    if not (STACKS / "xhtml").is_dir():
        pytest.skip("../shared/corpora/stacks is absent")
    return STACKS
