"""The paper's counts of the released MATcH dataset, and a read's report against them.

Apart from :mod:`proofmatch.data.match` (which reads a released folder and records its counts): the
paper's figures stand in one place, and checking a report already written (``proofmatch match
check``) needs none of the reading."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from proofmatch import experiments as X
from proofmatch.data.matchfmt import FILE_PARTS

#: The release's counts (paper Table 1 and §6): what a correct read of the full dataset prints.
PAPER_COUNTS = {
    "pairs": 184_094,
    "articles": 27_841,
    "mixed": {"train": 147_278, "dev": 18_408, "test": 18_408},
}


def compare_counts(report: Mapping[str, Any]) -> list[str]:
    """How a read's counts differ from the release's (:data:`PAPER_COUNTS`); empty: they agree."""
    diffs = []
    for key in ("pairs", "articles"):
        if report.get(key) != PAPER_COUNTS[key]:
            diffs.append(f"{key}: {report.get(key):,} read, the paper has {PAPER_COUNTS[key]:,}")
    mixed = (report.get("splits") or {}).get("mixed", {}).get("parts")
    if mixed is None:
        diffs.append("mixed: not read")
    else:
        for part, n in PAPER_COUNTS["mixed"].items():
            if mixed.get(part) != n:
                diffs.append(f"mixed {part}: {mixed.get(part, 0):,} read, the paper has {n:,}")
    return diffs


def counts_text(report: Mapping[str, Any]) -> str:
    """What a read prints: its counts and how they differ from the paper's."""
    lines = [
        f"{report['pairs']:,} pairs from {report['articles']:,} articles ({report['variant']})"
    ]
    for split, info in report["splits"].items():
        parts = " / ".join(f"{info['parts'][p]:,}" for p in FILE_PARTS)
        lines.append(
            f"{X.SPLIT_NAMES[split]}: {parts} (train / dev / test), levels {', '.join(info['levels'])}"
        )
    for name, reason in sorted(report["skipped"].items()):
        lines.append(f"skipped {name}: {reason}")
    diffs = report["differences"]
    lines.append(
        "the counts are the paper's (184,094 pairs, 27,841 articles, Mixed 147,278 / 18,408 / 18,408)"
        if not diffs
        else "differs from the paper: " + "; ".join(diffs)
    )
    return "\n".join(lines)
