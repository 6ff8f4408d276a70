"""How much of a real corpus's TeX the query converter reads without LaTeXML.

``python -m proofmatch.texmath.coverage FOLDER...`` reads every LaTeXML XHTML article
(``*.xhtml``/``*.xhtml.gz``) under the folders, takes the TeX annotations
(``annotation encoding="application/x-tex"``) of the formulas inside each statement
(``div.ltx_theorem``) and converts each with :func:`proofmatch.texmath.convert.render_query_math`.
A statement counts as converted when every one of its formulas converts and no command in it is
unknown (an unknown command would be kept as a symbol, with a warning, in a search). It prints the
shares and the unknown commands by frequency; docs/search.md has the figures for the Stacks corpus.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from proofmatch.texmath.convert import render_query_math

_MATHML = "{http://www.w3.org/1998/Math/MathML}"


def statement_tex(folders: list[Path]) -> Iterator[tuple[str, list[str]]]:
    """``(article/statement id, TeX of its formulas)`` for every statement of the articles."""
    from lxml import etree

    for folder in folders:
        for path in sorted(Path(folder).rglob("*.xhtml*")):
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rb") as fh:
                root = etree.parse(fh).getroot()
            for div in root.iter("{*}div"):
                if "ltx_theorem" not in (div.get("class") or "").split():
                    continue
                tex = [
                    a.text or ""
                    for a in div.iter(_MATHML + "annotation")
                    if a.get("encoding") == "application/x-tex"
                ]
                yield f"{path.name.split('.')[0]}/{div.get('id')}", tex


@dataclass
class Coverage:
    statements: int = 0
    converted: int = 0  # every formula converted, no unknown command
    strict: int = 0  # every formula inside the strict subset (the demo corpus's converter)
    formulas: int = 0
    formulas_converted: int = 0
    unknown: Counter = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)  # ids of statements not converted

    @property
    def share(self) -> float:
        return self.converted / self.statements if self.statements else 0.0

    def as_dict(self) -> dict:
        return {
            "statements": self.statements,
            "converted": self.converted,
            "share": round(self.share, 5),
            "strict_subset": self.strict,
            "formulas": self.formulas,
            "formulas_converted": self.formulas_converted,
            "unknown": dict(self.unknown.most_common()),
            "failed": self.failed[:50],
        }


def measure(statements: Iterator[tuple[str, list[str]]]) -> Coverage:
    cov = Coverage()
    for sid, texs in statements:
        cov.statements += 1
        ok = strict = True
        for tex in texs:
            cov.formulas += 1
            try:
                _, reader, unknown = render_query_math(tex, "q", False)
            except RecursionError:
                reader, unknown = "failed", ["(nested too deeply)"]
            strict &= reader == "texmath"
            if unknown:
                ok = False
                cov.unknown.update(unknown)
            else:
                cov.formulas_converted += 1
        cov.converted += ok
        cov.strict += strict
        if not ok:
            cov.failed.append(sid)
    return cov


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m proofmatch.texmath.coverage", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("folders", nargs="+", type=Path, help="folders of LaTeXML XHTML articles")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    cov = measure(statement_tex(args.folders))
    if args.json:
        print(json.dumps(cov.as_dict(), ensure_ascii=False, indent=2))
        return 0
    print(
        f"{cov.converted} of {cov.statements} statements converted without LaTeXML ({100 * cov.share:.2f} %); "
        f"{cov.strict} ({100 * cov.strict / max(cov.statements, 1):.2f} %) inside the strict subset alone; "
        f"{cov.formulas_converted} of {cov.formulas} formulas"
    )
    for name, n in cov.unknown.most_common(20):
        print(f"  unknown {name}: {n} formulas")
    return 0


if __name__ == "__main__":
    sys.exit(main())
