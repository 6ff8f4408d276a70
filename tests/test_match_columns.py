"""A released file read into columns (proofmatch.data.match_columns) gives what the line-by-line
reader and the Python tokenisers give (proofmatch.data.matchfmt): the same tokens, XHTML fragments,
headers and errors, for the lines Arrow's kernels tokenise and for every line they leave to Python."""

from __future__ import annotations

from pathlib import Path

import pytest

from proofmatch.data import match_columns as MC
from proofmatch.data import matchfmt as F

SEP = "_" * 12

ODD_LINES = [
    "text\tLemma 3.2. Let",
    "math\tx____bold ∈ R____double-struck",
    "text\tbe given .",
    "text\t  two  spaces , and (brackets)...  ",
    "text\tnon-ASCII: Poincaré’s “map” — x²",
    "text\tunder_score and $ dollar & <tag> ~tilde",
    "math\tx____normal + y____normalize = z____normal",
    "math\ta_____b c____ ____d e__f _ x____bold____italic",
    "math\tdouble  space",
    "math\t leading",
    "math\ta\u00a0b c\u2062d ⁡____italic",
    "math\ta~b x____bold",
    "math\t&lt; < > & x____bold",
    "math\tx____bold~y",
    "text\tzero\u200bwidth",
    "math\ttab\there",
]


def pair_text(header: str, statement: list[str], proof: list[str]) -> str:
    return "\n".join([header, SEP, *statement, SEP, *proof]) + "\n\n"


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def file_text(pairs, articles=None) -> str:
    if articles is None:
        head = "0\n\n\n"
    else:
        head = f"{len(articles)}\n\n" + "".join(f"{a}\tmath.AG\tT {a}\n" for a in articles) + "\n"
    return head + "".join(pair_text(*p) for p in pairs)


def same_as_python(path: Path) -> MC.FileColumns:
    """read_columns of ``path`` equals the line-by-line reading, field by field."""
    fast = MC.read_columns(path, digests=True)
    slow = MC._from_pairs(path, digests=True)
    assert fast.headers == slow.headers and fast.header_lines == slow.header_lines
    assert (fast.count, fast.articles) == (slow.count, slow.articles)
    assert fast.statements.to_pylist() == slow.statements.to_pylist()
    assert fast.proofs.to_pylist() == slow.proofs.to_pylist()
    xml = [x.to_pylist() for x in slow.fragments()]
    assert [x.to_pylist() for x in fast.fragments()] == xml
    # made in their own thread while the tokens are cut (or the file read in Python after all)
    made = MC.read_columns(path, digests=True, fragments=True)
    assert [x.to_pylist() for x in made.fragments()] == xml
    assert fast.digests == slow.digests == made.digests
    assert [(p.article_id, p.statement_id) for p in fast.pairs] == [
        (p.article_id, p.statement_id) for p in slow.pairs
    ]
    return fast


@pytest.mark.parametrize("k", range(len(ODD_LINES)))
def test_each_kind_of_line_reads_as_in_python(tmp_path, k):
    line = ODD_LINES[k]
    pairs = [
        ("a|S1", ["text\tLet x .", line], ["math\tx = 0____bold", line, "text\tDone ."]),
        ("a|S2", [line], [line]),
        ("b|None", ["math\ty"], ["text\tTrivial ."]),
    ]
    cols = same_as_python(write(tmp_path / "f", file_text(pairs, ["a", "b"])))
    assert len(cols.headers) == 3


def test_every_line_together_and_the_fast_lines_alone(tmp_path):
    pairs = [(f"a|S{k}", ODD_LINES[k:] + ODD_LINES[:k], ODD_LINES[::-1]) for k in range(6)]
    cols = same_as_python(write(tmp_path / "f", file_text(pairs)))
    assert cols.statements[0].as_py()[:5] == ["Lemma", "3", ".", "2", "."]
    fast = [("a|S1", ODD_LINES[:3], ODD_LINES[:3])] * 3
    cols = same_as_python(write(tmp_path / "g", file_text(fast, ["a"])))
    assert cols.proofs[0].as_py()[6:10] == ["$x~bold", "$∈", "$R~double-struck", "be"]
    assert cols.fragments()[0][0].as_py().startswith("<div><span>Lemma 3.2. Let</span><math")


def test_quirks_of_the_layout(tmp_path):
    text = "\ufeff" + file_text([("1|a", ODD_LINES[:3], ODD_LINES[:2])] * 2).replace(
        "\n\n1|a", "\n\n\n\n1|a", 1
    ).rstrip("\n")
    same_as_python(write(tmp_path / "f", text.replace("\n", "\r\n")))
    header_like_a_line = file_text([("text\tx|S1", ["math\tx"], ["text\ty"])])
    assert same_as_python(write(tmp_path / "g", header_like_a_line)).headers == ["text\tx|S1"]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda t: t.replace(f"1|a\n{SEP}\n", "1|a\n", 1),
        lambda t: t.replace("text\tDone .\n\n1|b", f"text\tDone .\n{SEP}\ntext\tx\n\n1|b", 1),
        lambda t: t.replace("text\tProof .", "prose\tProof .", 1),
        lambda t: t.replace("text\tProof .", "text\t ", 1),
        lambda t: t.replace("text\tProof .", "math\t\u3000", 1),
        lambda t: t.replace("text\tProof .", "text\t", 1),
        lambda t: t.replace("0\n", "zero\n", 1),
        lambda t: t.replace(f"{SEP}\ntext\tProof .", "text\tProof .", 1),
        lambda t: t.replace("1|b", SEP, 1),
        lambda t: t[: t.index("text\tProof")],
        lambda t: t.encode().replace(b"Proof", b"Pr\xc3of", 1),
    ],
)
def test_bad_files_raise_what_the_line_reader_raises(tmp_path, mutate):
    good = file_text(
        [
            ("1|a", ["text\tLet x ."], ["text\tProof .", "text\tDone ."]),
            ("1|b", ["text\tLet y ."], ["math\ty", "text\tDone ."]),
        ]
    )
    path = write(tmp_path / "bad", mutate(good))
    with pytest.raises(F.MatchFormatError) as expected:
        F.read_file(path)
    with pytest.raises(F.MatchFormatError) as got:
        MC.read_columns(path)
    assert str(got.value) == str(expected.value) and got.value.line == expected.value.line


def test_a_level_file_takes_the_statements_it_repeats(tmp_path):
    cons = [("a|S1", ODD_LINES[:3], ["text\tDone ."]), ("a|S2", ODD_LINES[3:6], ODD_LINES[:2])]
    base = MC.read_columns(write(tmp_path / "c", file_text(cons, ["a"])), digests=True).base()
    renamed = [(h, s, [p[:5] + p[5:].replace("x", "y") for p in pr]) for h, s, pr in cons]
    level = write(tmp_path / "l", file_text(renamed, ["a"]))
    cols = MC.read_columns(level, base=base)
    assert cols.statements is base.tokens
    slow = MC._from_pairs(level, digests=False)
    assert cols.statements.to_pylist() == slow.statements.to_pylist()
    assert cols.proofs.to_pylist() == slow.proofs.to_pylist()
    # a statement line that differs, or the same lines cut into other statements: cut again
    for other in (
        [(h, [*s, "math\tz"], p) for h, s, p in renamed],
        [("a|S1", ODD_LINES[:4], ["text\tDone ."]), ("a|S2", ODD_LINES[4:6], ODD_LINES[:2])],
    ):
        path = write(tmp_path / "o", file_text(other, ["a"]))
        cols = MC.read_columns(path, base=base)
        assert cols.statements is not base.tokens
        assert cols.statements.to_pylist() == MC._from_pairs(path, False).statements.to_pylist()
