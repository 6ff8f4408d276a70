"""The one error for a name that is not one of the known ones: ``unknown X 'y'; expected one of …``.

The config schema checks every value a config names before any job runs, and the code below that
boundary trusts it (its parameters are typed ``Literal[...]``). What the schema never sees (a
command-line argument, a name read back from a file such as a saved model's config.json or a run's
fusion.json, a public function called from Python with no config behind it) is checked where it
enters, with :func:`one_of`, so the message reads the same everywhere. Pure Python, no proofmatch
import: every floor may use it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TypeVar

T = TypeVar("T")


def unknown(kind: str, value: object, known: Collection[object], fix: str = "") -> ValueError:
    """The error for ``value``, which is not one of ``known`` (``kind`` names what it is, e.g.
    ``"encoder"``; ``fix``, when given, says what to do), to be raised by the caller."""
    listed = ", ".join(map(str, known))
    return ValueError(
        f"unknown {kind} {value!r}; expected one of {listed}" + (f"; fix: {fix}" if fix else "")
    )


def one_of(kind: str, value: T, known: Collection[T], fix: str = "") -> T:
    """``value`` when it is one of ``known``, else :func:`unknown`'s error."""
    if value not in known:
        raise unknown(kind, value, known, fix)
    return value
