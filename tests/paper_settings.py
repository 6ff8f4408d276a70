"""The values the paper states, and a check that nothing else is credited to it (test tooling:
tests/test_paper_settings.py runs it over the repository).

``data/paper_settings.yaml`` (beside this module) is the one list of configuration values that the
MATcH paper's text states: per config key the value, where the paper states it and its sentence.
A config comment, a schema description or a doc that credits "the paper" (or a § or appendix of
it) with a key's value must name a key of that list, and a number it quotes right after the
credit must be the listed value. A choice that only the reference code makes is credited to the
reference, never to the paper (docs/deviations.md).

What counts as a credit (:func:`credits`): the word ``paper`` (not ``paper.yaml``), ``§N`` or
``Appendix X``, after removing the phrases that say the paper is silent ("the paper names none",
"the paper does not give ..."). Where it is attached:

* config YAML (:func:`yaml_comments`, read with ruamel.yaml, which keeps comments and positions):
  an inline comment belongs to its line's key; an own-line comment aligned with the previous
  inline comment continues it, any other own-line comment belongs to the next key; comments
  before the first key are the file's header and credit no key;
* the schema: a key's description;
* Markdown (:func:`doc_credits`): a backticked ``key: value`` followed by a parenthesis,
  "`matching.npt.epochs: 400` (paper §8)", the form docs/deviations.md's "restores" column uses
  (:func:`deviations_restores` requires one after every ``key: value`` there).

A credit of a section key (``matching.npt``, "NPT ... (§8)") needs a listed key under it.

Prose (:func:`prose_credits`: README, docs, the package's and the workflow's sources) is read for
two more forms. A number credited to the paper ("paper 30,522", "the paper's 400", "paper: 500")
must be one the paper prints (:func:`paper_numbers`: a value or quoted sentence of
paper_settings.yaml, a cell of ``evaluation/paper_results.csv``, or :data:`PAPER_NUMBERS`), to its
shown precision. A choice credited to the paper in words ("as the paper counts them", "as in the
paper", "the paper's rule", a bare "(paper)" label) must say where in the same sentence: a §, an appendix, a table or
figure of the paper, or the paper's own words in quotes.
:func:`false_credits` runs every check over the repository and returns the problems as lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedBase, CommentedMap, CommentedSeq
from ruamel.yaml.tokens import CommentToken

from proofmatch.config import load_config, schema_keys
from proofmatch.evaluation.paper import read_paper_cells

CREDIT = re.compile(r"\bpaper\b(?!\.yaml)|§\s*\d|\bAppendix [A-D]\b")
# Phrases that mention the paper to say it states nothing: not credits.
SILENT = re.compile(
    r"the paper (?:names|gives|states|says) (?:none|nothing|no\b)|the paper does not \w+|not in the paper"
    r"|paper(?::| is) (?:silent|none)",
    re.IGNORECASE,
)
# A number right after a credit ("paper: 400", "the paper's 200", "§8: 0.996") is the credited value.
CREDITED_NUMBER = re.compile(
    r"(?:\bpaper\b(?!\.yaml)(?:'s)?|§\s*\d+(?:\.\d+)?)\s*:?\s*(\d+(?:\.\d+)?(?:e-?\d+)?)(?![\w.])"
)
# A number credited in prose: "paper 30,522", "the paper's 400", "Paper: 500", "paper §8: 0.996".
PROSE_NUMBER = re.compile(
    r"\bpaper\b(?!\.yaml)(?:'s)?\s*:?\s*(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?(?:e-?\d+)?)(?![\w.,]\w|\w)",
    re.IGNORECASE,
)
# A choice credited to the paper in words; the sentence must say where (PROSE_WHERE).
PROSE_CHOICE = re.compile(
    r"\bas (?:in )?the paper(?:'s)?\b(?!\.yaml)|\bthe paper's (?:rule|filter|length filter|unit|"
    r"count|choice|definition|tokens?)\b",
    re.IGNORECASE,
)
PROSE_LABEL = re.compile(
    r"\(paper\)", re.IGNORECASE
)  # a bare label names no place: always a problem
PROSE_WHERE = re.compile(
    r"§\s*\d|\bAppendix [A-D]\b|\b(?:Table|Figure|Tables) \d|(?<!\")\"(?!\")[^\"]{3,}(?<!\")\"(?!\")"
    r"|“[^”]+”"
)
SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z`*(\[]|\s*$)|\n\s*\n|\"\"\"|'''")
# Numbers the paper prints that are neither a listed setting nor a result cell: Table 1's corpus,
# §8's split sizes and Appendix A's per-language counts of the dropped articles.
PAPER_NUMBERS = {
    439423: "Table 1: articles",
    27841: "Table 1: articles with pairs",
    184094: "Table 1: statement-proof pairs",
    147278: "§8: training pairs",
    18408: "§8: development and test pairs",
    143: "Appendix A: French articles",
    11: "Appendix A: Russian articles",
    73.7: "Introduction: the best MRR",
}
KEY_VALUE = re.compile(r"`([a-z_][a-z0-9_.{},\[\]]*\.[a-z0-9_{},\[\]]+): ([^`]+)`(\s*\(([^)]*)\))?")


@dataclass(frozen=True)
class PaperSetting:
    key: str
    value: Any
    where: str
    quote: str
    differs: str | None = None  # why config/paper.yaml uses another value
    note: str | None = (
        None  # this project's gloss of the quote (the quote holds the paper's words only)
    )


def settings_path() -> Path:
    return Path(__file__).parent / "data" / "paper_settings.yaml"


def paper_settings() -> dict[str, PaperSetting]:
    """The list, by key; every key must be a config key and appear once."""
    known = {path for path, _, _ in schema_keys()}
    out: dict[str, PaperSetting] = {}
    for entry in yaml.safe_load(settings_path().read_text(encoding="utf-8")):
        s = PaperSetting(**entry)
        if s.key not in known:
            raise ValueError(
                f"{settings_path()}: {s.key!r} is no config key (see config/README.md)"
            )
        if s.key in out:
            raise ValueError(f"{settings_path()}: {s.key!r} is listed twice")
        out[s.key] = s
    return out


def credits(text: str) -> bool:
    """Whether ``text`` credits the paper with something (silent-paper phrases removed)."""
    return bool(CREDIT.search(SILENT.sub("", text)))


def credited_numbers(text: str) -> list[float]:
    return [float(m.group(1)) for m in CREDITED_NUMBER.finditer(SILENT.sub("", text))]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(float(a) - float(b)) <= 1e-12 * max(1.0, abs(float(b)))
    return a == b


def check_credit(
    key: str,
    text: str,
    settings: dict[str, PaperSetting],
    section: bool = False,
    value: Any = None,
    has_value: bool = False,
) -> list[str]:
    """Problems of one text attached to ``key`` (none if it credits nothing to the paper)."""
    if not credits(text):
        return []
    if section:
        if any(k.startswith(key + ".") for k in settings):
            return []
        return [f"credits the paper for section {key}, which holds no key of paper_settings.yaml"]
    if key not in settings:
        return [
            f"credits the paper for {key}, which paper_settings.yaml does not list (credit the reference?)"
        ]
    listed = settings[key].value
    problems = []
    if has_value and not _same(value, listed):
        problems.append(
            f"credits the paper with {key}: {value!r}; paper_settings.yaml says {listed!r}"
        )
    if isinstance(listed, (int, float)) and not isinstance(listed, bool):
        problems += [
            f"credits the paper with {n:g} for {key}; paper_settings.yaml says {listed!r}"
            for n in credited_numbers(text)
            if not _same(n, listed)
        ]
    return problems


# --- where the credits are -----------------------------------------------------------------------


def _keys(node: Any, prefix: str = "") -> Iterator[tuple[int, int, str, bool]]:
    """(line, column, dotted key, the key holds a section) of every key of a block mapping, nested
    ones too, as ruamel.yaml read them (0-based positions); a list's or a flow mapping's content
    is its key's value, not keys of its own."""
    for key, value in node.items():
        line, col = node.lc.key(key)
        path = f"{prefix}{key}"
        section = isinstance(value, CommentedMap) and not value.fa.flow_style()
        yield line, col, path, section
        if section:
            yield from _keys(value, path + ".")


def _comment_tokens(node: Any) -> Iterator[CommentToken]:
    """Every comment token ruamel.yaml attached to ``node`` or to a node under it."""

    def tokens(obj: Any) -> Iterator[CommentToken]:
        if isinstance(obj, CommentToken):
            yield obj
        elif isinstance(obj, (list, tuple)):
            for item in obj:
                yield from tokens(item)

    if isinstance(node, CommentedBase):
        yield from tokens([node.ca.comment, list(node.ca.items.values()), node.ca.end])
    children = node.values() if isinstance(node, CommentedMap) else node
    if isinstance(node, (CommentedMap, CommentedSeq)):
        for child in children:
            yield from _comment_tokens(child)


def _comments(data: Any, lines: list[str]) -> list[tuple[int, int, str]]:
    """(line, column of the ``#``, text) of every comment, one per line, in file order.

    A token holds one comment and the own-line comments that follow it, one per line of its
    value; its start mark is the line and column of its first comment (a value may begin with
    the end of the line before it). Each comment is checked against the file's line, so a token
    ruamel.yaml laid out otherwise fails here instead of crediting the wrong key."""
    found = set()
    for token in _comment_tokens(data):
        pieces = token.value.split("\n")
        first = next((i for i, piece in enumerate(pieces) if piece.strip()), None)
        for i, piece in enumerate(pieces[first:] if first is not None else []):
            if not piece.strip():
                continue
            line = token.start_mark.line + i
            col = token.start_mark.column if i == 0 else len(piece) - len(piece.lstrip())
            if line >= len(lines) or lines[line][col:].rstrip() != piece.strip():
                raise ValueError(
                    f"line {line + 1}: ruamel.yaml's comment {piece.strip()!r} is not at column "
                    f"{col + 1} of the file's line {lines[line] if line < len(lines) else ''!r}"
                )
            found.add((line, col, piece.strip()[1:].strip()))
    return sorted(found)


def yaml_comments(text: str) -> list[tuple[str, str, int, bool]]:
    """(dotted key, comment, line number, the key holds a section) of every comment of a config
    file that belongs to a key (attachment rules in the module docstring), in file order.

    ruamel.yaml reads the keys and the comments with their positions; its own attachment (a
    comment goes with the token before it) is not the rule here, so the comments are attached
    by position: a line's inline comment to the key of the line (or the key above a list item or
    continued value), an own-line one to the key above if it is aligned with that key's inline
    comment, else to the key below."""
    data = YAML().load(text)
    if not isinstance(data, CommentedMap):
        return []
    lines = text.splitlines()
    keys = sorted(_keys(data))  # the first key of a line is its leading one
    sections = {path for _, _, path, section in keys if section}
    comments = _comments(data, lines)
    own = {line for line, col, _ in comments if not lines[line][:col].strip()}
    inline = {line: col for line, col, _ in comments if line not in own}

    def key_at_or_before(line: int) -> str | None:
        before = [k for k in keys if k[0] <= line]
        return (
            min((k for k in before if k[0] == before[-1][0]), key=lambda k: k[1])[2]
            if before
            else None
        )

    found: list[tuple[str, str, int]] = []
    for line, col, comment in comments:
        above = key_at_or_before(line)
        if line not in own:
            if above is not None:
                found.append((above, comment, line + 1))
            continue
        if above is None:
            continue  # the file's header
        content = max(n for n in range(line) if lines[n].strip() and n not in own)
        below = next((k[2] for k in keys if k[0] > line), None)
        found.append(
            (above if inline.get(content) == col or below is None else below, comment, line + 1)
        )
    return [(k, c, n, k in sections) for k, c, n in found]


def _expand(key: str) -> list[str]:
    """``matching.{npt,bert}.optimizer`` -> both keys."""
    m = re.search(r"\{([^}]*)\}", key)
    if not m:
        return [key]
    return [
        k
        for part in m.group(1).split(",")
        for k in _expand(key[: m.start()] + part.strip() + key[m.end() :])
    ]


def doc_credits(text: str) -> Iterator[tuple[str, Any, str, int]]:
    """(key, value, parenthesis, line number) of every backticked ``key: value`` followed by a parenthesis."""
    for no, line in enumerate(text.splitlines(), 1):
        for m in KEY_VALUE.finditer(line):
            if m.group(4) is None:
                continue
            value = yaml.safe_load(m.group(2))
            for key in _expand(m.group(1)):
                yield key, value, m.group(4), no


def deviations_restores(text: str) -> Iterator[tuple[str, int]]:
    """docs/deviations.md: (``key: value`` without a parenthesis saying whose choice, line) in the
    "restores" column of its tables."""
    column = None
    for no, line in enumerate(text.splitlines(), 1):
        if not line.startswith("|"):
            column = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if column is None:
            column = cells.index("restores") if "restores" in cells else -1
            continue
        if column < 0 or set("".join(cells)) <= set("-: ") or column >= len(cells):
            continue
        for m in KEY_VALUE.finditer(cells[column]):
            if m.group(4) is None:
                yield m.group(0), no


def paper_numbers() -> set[float]:
    """Every number the paper prints that the project holds: the listed values, the numbers of their
    quoted sentences, the result cells of paper_results.csv and :data:`PAPER_NUMBERS`."""
    out = {float(n) for n in PAPER_NUMBERS}
    for s in paper_settings().values():
        values = s.value if isinstance(s.value, list) else [s.value]
        out |= {float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)}
        out |= {
            float(n.replace(",", ""))
            for n in re.findall(r"\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?", s.quote)
        }
    return out | {cell.value for cell in read_paper_cells()}


def _printed(number: str, numbers: set[float]) -> bool:
    """Whether ``number`` as written (``30,522``, ``63.2``) is one of ``numbers`` to its precision."""
    value = float(number.replace(",", ""))
    places = len(number.split(".")[1]) if "." in number else 0
    return any(abs(round(n, places) - value) < 1e-9 for n in numbers)


def _sentence(text: str, start: int, end: int) -> str:
    before = [m.end() for m in SENTENCE_END.finditer(text, 0, start)]
    after = SENTENCE_END.search(text, end)
    return text[before[-1] if before else 0 : after.end() if after else len(text)]


def prose_credits(text: str, numbers: set[float] | None = None) -> Iterator[tuple[int, str]]:
    """(line number, problem) of every prose credit of ``text`` to the paper that it does not hold
    (module docstring): a number it does not print, or a choice whose sentence says not where."""
    numbers = paper_numbers() if numbers is None else numbers
    clean = SILENT.sub(lambda m: " " * len(m.group(0)), text)
    for m in PROSE_NUMBER.finditer(clean):
        if not _printed(m.group(1), numbers):
            yield (
                text.count("\n", 0, m.start()) + 1,
                f"credits the paper with {m.group(1)} ({m.group(0)!r}), a number the paper does not print "
                "(credit the reference?)",
            )
    for m in PROSE_LABEL.finditer(clean):
        if clean[: m.start()].rstrip().endswith("`"):
            continue  # a backticked `key: value` (paper): doc_credits checks it against the list
        yield (
            text.count("\n", 0, m.start()) + 1,
            "a bare '(paper)' label credits the paper without saying where (§, appendix, table or figure)",
        )
    for m in PROSE_CHOICE.finditer(clean):
        if not PROSE_WHERE.search(_sentence(clean, m.start(), m.end())):
            yield (
                text.count("\n", 0, m.start()) + 1,
                f"{m.group(0)!r} credits the paper without saying where (§, appendix, table, figure or "
                "its words in quotes; credit the reference?)",
            )


PROSE = (
    "README.md",
    "docs/*.md",
    "src/proofmatch/**/*.py",
    "workflow/**/*.smk",
    "workflow/**/*.py",
    "Snakefile",
    "bench/*.py",
)


# --- the whole repository ------------------------------------------------------------------------


def false_credits(
    repo: str | Path, config_files: Iterable[str] | None = None, docs: Iterable[str] | None = None
) -> list[str]:
    """Every false or unlabelled credit in the repository: config comments, schema descriptions,
    Markdown docs; and every listed value ``config/paper.yaml`` does not set (unless ``differs``
    says why, in which case it must indeed differ)."""
    repo = Path(repo)
    settings = paper_settings()
    problems: list[str] = []
    files = (
        list(config_files)
        if config_files is not None
        else sorted(str(p.relative_to(repo)) for p in (repo / "config").glob("*.yaml"))
    )
    for name in files:
        for key, comment, no, section in yaml_comments((repo / name).read_text(encoding="utf-8")):
            problems += [f"{name}:{no}: {p}" for p in check_credit(key, comment, settings, section)]
    for key, s, _ in schema_keys():
        section = s.get("type") == "object"
        problems += [
            f"schema {key}: {p}"
            for p in check_credit(key, s.get("description", ""), settings, section)
        ]
    md = (
        list(docs)
        if docs is not None
        else ["README.md", *sorted(str(p.relative_to(repo)) for p in (repo / "docs").glob("*.md"))]
    )
    for name in md:
        text = (repo / name).read_text(encoding="utf-8")
        for key, value, note, no in doc_credits(text):
            problems += [
                f"{name}:{no}: {p}"
                for p in check_credit(key, note, settings, value=value, has_value=True)
            ]
        if name.endswith("deviations.md"):
            problems += [
                f"{name}:{no}: restores {kv} without saying whose choice it is, e.g. (paper §8) or (reference)"
                for kv, no in deviations_restores(text)
            ]
    numbers = paper_numbers()
    prose = sorted({p for pattern in PROSE for p in repo.glob(pattern) if p.is_file()})
    for path in prose:
        name = str(path.relative_to(repo))
        problems += [
            f"{name}:{no}: {p}"
            for no, p in prose_credits(path.read_text(encoding="utf-8"), numbers)
        ]
    paper = load_config(repo / "config/config.yaml", repo / "config/paper.yaml")
    for key, s in settings.items():
        got: Any = paper
        for part in key.split("."):
            got = got[part]
        if s.differs is None and not _same(got, s.value):
            problems.append(
                f"config/paper.yaml: {key} is {got!r}, the paper's {s.value!r} ({s.where}), "
                "and paper_settings.yaml gives no `differs` reason"
            )
        if s.differs is not None and _same(got, s.value):
            problems.append(
                f"paper_settings.yaml: {key} says paper.yaml differs, but it is the paper's {s.value!r}"
            )
    return problems
