"""The released MATcH format (proofmatch.data.matchfmt) and a released folder as the project's
data (proofmatch.data.match): every quirk of the format, the three header forms, the pb names, the
CSV variant, every bad input, and the round trip export -> read."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from proofmatch.data import match as M
from proofmatch.data import match_counts as MC
from proofmatch.data import match_export as ME
from proofmatch.data import matchfmt as F
from proofmatch.data import matchfmt_write as FW

SEP = "_" * 12


def pair_text(header: str, statement: list[str], proof: list[str]) -> str:
    return "\n".join([header, SEP, *statement, SEP, *proof]) + "\n\n"


ST = ["text\tLemma 3.2. Let", "math\tx____bold ∈ R____double-struck", "text\tbe given ."]
PR = ["text\tProof.", "math\tx = 0____bold", "math\ty ⁡____italic", "text\t∎"]


def file_a(pairs: list[tuple[str, list[str], list[str]]], articles: dict[str, str]) -> str:
    head = f"{len(articles)}\n\n" + "".join(
        f"{a}\t{c}\tTitle of {a}\n" for a, c in articles.items()
    )
    return head + "\n" + "".join(pair_text(*p) for p in pairs)


def file_b(pairs: list[tuple[str, list[str], list[str]]]) -> str:
    return "0\n\n\n" + "".join(pair_text(*p) for p in pairs)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


# ----------------------------------------------------------------------------- one file


def test_variant_a_headers_split_at_first_bar(tmp_path):
    text = file_a(
        [("arXiv:1201.5657|S2.Thm3", ST, PR), ("arXiv:math/0305043|S1.Thm1|x", ST, PR)],
        {"arXiv:1201.5657": "math.PR|math.ST", "arXiv:math/0305043": "math.AG"},
    )
    f = F.read_file(write(tmp_path / "f", text))
    assert f.count == 2 and f.with_metadata
    assert f.articles["arXiv:1201.5657"] == (["math.PR", "math.ST"], "Title of arXiv:1201.5657")
    assert [(p.article_id, p.statement_id) for p in f.pairs] == [
        ("arXiv:1201.5657", "S2.Thm3"),
        ("arXiv:math/0305043", "S1.Thm1|x"),
    ]


def test_variant_b_keeps_the_first_pair(tmp_path):
    """The empty-metadata quirk: '0\\n\\n\\n' then pairs; the reference readers lose pair 1."""
    text = file_b([("7|S1.Thm1", ST, PR), ("12|S2.Thm2", ST, PR)])
    f = F.read_file(write(tmp_path / "f", text))
    assert not f.with_metadata and f.count == 0
    assert [p.header for p in f.pairs] == ["7|S1.Thm1", "12|S2.Thm2"]
    # what the reference's split("\n\n")[2:] would see: only the second pair
    assert len([c for c in text.split("\n\n")[2:] if c.strip()]) == 1


@pytest.mark.parametrize(
    "header, ids",
    [
        ("arXiv:1201.5657|S2.Thm3", ("arXiv:1201.5657", "S2.Thm3")),  # the released form
        ("arXiv:1201.5657", ("arXiv:1201.5657", None)),  # the older form: the article id alone
        ("3|None", ("3", None)),  # a document index, a statement without id
    ],
)
def test_three_header_forms(header, ids):
    assert F.split_header(header) == ids


def test_tokens_and_fonts_both_ways():
    tokens = F.segment_tokens(
        [("text", "Lemma 3.2. Let"), ("math", "x____bold ∈ R____double-struck ⁡____italic")]
    )
    assert tokens == [
        "Lemma",
        "3",
        ".",
        "2",
        ".",
        "Let",
        "$x~bold",
        "$∈",
        "$R~double-struck",
        "$⁡~italic",
    ]
    assert F.token_segments(tokens) == [
        ("text", "Lemma 3 . 2 . Let"),
        ("math", "x____bold ∈ R____double-struck ⁡____italic"),
    ]
    assert F.segment_tokens(F.token_segments(tokens)) == tokens
    # an underscore run that is no font stays one token
    assert F.math_file_token("____") == "$____" and F.math_file_token("a____") == "$a____"
    with pytest.raises(ValueError, match="cannot be written"):
        F.token_segments(["$a____b~bold"], "pair p")


def test_writer_matches_the_reference_layout(tmp_path):
    pairs = [
        FW.OutPair("b", "S1", [("text", "Let")], [("math", "x")]),
        FW.OutPair("a", None, [("text", "A")], [("text", "B")]),
    ]
    path = tmp_path / "out"
    FW.write_file(path, pairs, {"a": (["math.AG", "math.CO"], "T\tone"), "b": ([], "U")})
    assert (
        path.read_bytes()
        == (
            "2\n\na\tmath.AG|math.CO\tT one\nb\t\tU\n\n"
            f"b|S1\n{SEP}\ntext\tLet\n{SEP}\nmath\tx\n\n"
            f"a|None\n{SEP}\ntext\tA\n{SEP}\ntext\tB\n\n"
        ).encode()
    )
    FW.write_file(path, pairs, None)
    assert path.read_text().startswith("0\n\n\nb|S1\n")


def test_tolerates_bom_crlf_extra_blanks_and_no_final_blank(tmp_path):
    text = "\ufeff" + file_b([("1|a", ST, PR), ("1|b", ST, PR)]).replace(
        "\n\n1|b", "\n\n\n1|b"
    ).rstrip("\n")
    text = text.replace("\n", "\r\n")
    f = F.read_file(write(tmp_path / "f", text))
    assert [p.statement_id for p in f.pairs] == ["a", "b"]


@pytest.mark.parametrize(
    "mutate, message, line",
    [
        (lambda t: t.replace(f"1|a\n{SEP}\n", "1|a\n", 1), "expected the separator line", 5),
        (
            lambda t: t.replace("text\t∎\n\n1|b", f"text\t∎\n{SEP}\ntext\tx\n\n1|b", 1),
            "third separator",
            14,
        ),
        (lambda t: t.replace("text\tProof.", "prose\tProof.", 1), "expected 'text<TAB>", 10),
        (lambda t: t.replace("text\tProof.", "text\t ", 1), "empty text line", 10),
        (lambda t: t.replace("0\n", "zero\n", 1), "count line", 1),
    ],
)
def test_bad_files_name_file_and_line(tmp_path, mutate, message, line):
    text = mutate(file_b([("1|a", ST, PR), ("1|b", ST, PR)]))
    path = write(tmp_path / "bad", text)
    with pytest.raises(F.MatchFormatError, match=message) as err:
        F.read_file(path)
    assert str(path) in str(err.value) and err.value.line == line


def test_truncated_file(tmp_path):
    text = file_b([("1|a", ST, PR)])
    for cut in (text[: text.index(SEP) + 2], text[:2], "0\n\n"):
        path = write(tmp_path / "t", cut)
        with pytest.raises(F.MatchFormatError, match="truncated|ends"):
            F.read_file(path)


def test_count_line_disagreeing_with_the_article_lines(tmp_path):
    text = file_a([("a|S1", ST, PR)], {"a": "math.PR"}).replace("1\n", "3\n", 1)
    with pytest.raises(F.MatchFormatError, match=r"line 1: the count line says 3 articles but 1"):
        F.read_file(write(tmp_path / "f", text))
    text = file_a([("c|S1", ST, PR)], {"a": "math.PR"})
    with pytest.raises(F.MatchFormatError, match="line 5: .*not in the article lines"):
        F.read_file(write(tmp_path / "g", text))


def test_non_utf8_byte_names_its_line(tmp_path):
    raw = file_b([("1|a", ST, PR)]).encode().replace(b"Proof.", b"Pro\xffof.")
    with pytest.raises(F.MatchFormatError, match=r"line 10: not UTF-8: byte 0xff"):
        F.read_file(write(tmp_path / "f", raw))


# ----------------------------------------------------------------------------- names


def test_file_names():
    assert F.file_role("mixed", "mixed_trans_dev") == F.FileRole("mixed", "trans", "dev")
    assert F.file_role("unmixed", "unmixed_full_train") == F.FileRole("unmixed", "full", "train")
    assert F.file_role("pb", "partial_pb_test_no_protected") == F.FileRole("pr", "partial", "test")
    assert F.file_role("pb", "partial_pb_test_protected") == F.FileRole("pr", "partial_p", "test")
    assert F.file_role("pb", "full_pb_dev_protected") == F.FileRole("pr", "full_p", "dev")
    # the misnamed file of the authors' tree is Full's train part
    assert F.file_role("pb", "full_pb_no_train_no_protected") == F.FileRole("pr", "full", "train")
    assert F.file_role("pb", "partial_pb_no_train_no_protected") is None
    assert F.file_role("pb", "trans_pb_dev_protected").skip
    assert F.file_role("pb", "conservation_pb_dev_protected").skip
    assert F.file_role("mixed", "mixed_full").skip == F.UNSPLIT
    assert F.file_role("mixed", "unmixed_full_dev") is None
    assert F.file_role("mixed", "mixed_full_dev.csv") is None
    for split, level, part in [
        ("pr", "full", "train"),
        ("pr", "full_p", "dev"),
        ("mixed", "trans", "test"),
    ]:
        family, name = F.file_name(split, level, part).split("/")
        role = F.file_role(family, name)
        assert (role.split, role.level, role.part) == (split, level, part)
    assert all(F.file_role(*n.split("/")) is not None for n in F.expected_names())


# ----------------------------------------------------------------------------- CSV variant


def test_csv_variant(tmp_path):
    pairs = F.read_file(
        write(tmp_path / "f", file_b([("1|a", ST, PR), ("2|b", ['text\tsay "hi", then'], PR)]))
    ).pairs
    text = FW.csv_text(pairs)
    lines = text.split("\n")
    assert lines[0] == ",theory,proof,meta"
    assert lines[1].startswith("0,Lemma 3.2. Let x____bold ∈ R____double-struck be given .,")
    assert lines[2].startswith('0,"say ""hi"", then",')
    write(tmp_path / "f.csv", text)
    rows = FW.read_csv(tmp_path / "f.csv")
    assert rows[1] == {
        "theory": 'say "hi", then',
        "proof": "Proof. x = 0____bold y ⁡____italic ∎",
        "meta": "2|b",
    }
    text_only = next(csv.reader(io.StringIO(FW.csv_text(pairs[:1], only="text").split("\n")[1])))
    assert text_only[1] == "Lemma 3.2. Let  be given ."  # a double space where the formula was
    write(tmp_path / "bad.csv", "a,b\n")
    with pytest.raises(F.MatchFormatError, match="line 1"):
        FW.read_csv(tmp_path / "bad.csv")


# ----------------------------------------------------------------------------- a folder


def release(root: Path, n: int = 3, variant: str = "a") -> Path:
    """A tiny released folder: Mixed and Unmixed at four levels, pb with every name."""
    arts = {f"arXiv:{k:04d}.0001": "math.PR|math.ST" if k % 2 else "math.AG" for k in range(n)}

    def one(level: str, prefix: str, k0: int) -> str:
        proof = [p.replace("x =", "z =") if level != "conservation" else p for p in PR]
        pairs = [(f"{a}|S{k0}.Thm{k}", ST, proof) for k, a in enumerate(arts)]
        if variant == "a":
            return file_a(pairs, arts)
        return file_b(pairs)

    for level in F.FILE_LEVELS:
        for k, part in enumerate(F.FILE_PARTS):
            for fam in ("mixed", "unmixed"):
                write(root / fam / f"{fam}_{level}_{part}", one(level, fam, k))
            name = (
                "full_pb_no_train_no_protected"
                if (level, part) == ("full", "train")
                else f"{level}_pb_{part}_no_protected"
            )
            write(root / "pb" / name, one(level, "pb", k))
            write(root / "pb" / f"{level}_pb_{part}_protected", one(level, "pb", k))
        write(root / "mixed" / f"mixed_{level}", one(level, "mixed", 0))
    return root


def test_import_folder(tmp_path):
    folder = release(tmp_path / "rel")
    report = M.import_folder(folder, tmp_path / "out", report_json=tmp_path / "out/report.json")
    assert report["splits"]["mixed"]["parts"] == {"train": 3, "dev": 3, "test": 3}
    assert report["splits"]["pr"]["levels"] == [
        "conservation",
        "partial",
        "full",
        "trans",
        "partial_p",
        "full_p",
    ]
    assert report["articles"] == 3 and report["pairs"] == 9
    assert report["skipped"]["mixed/mixed_full"] == F.UNSPLIT
    assert "trans_pb_dev_protected" in " ".join(report["skipped"])
    data = pq.read_table(tmp_path / "out/replaced/mixed/full.parquet").to_pandas()
    assert list(data["proof_tokens"][0][:3]) == ["Proof", ".", "$z"]
    cons = pq.read_table(tmp_path / "out/replaced/mixed/conservation.parquet").to_pandas()
    assert cons["pair_id"][0] == "arXiv:0000.0001/S0.Thm0" and list(
        cons["proof_tokens"][0][:3]
    ) == ["Proof", ".", "$x"]
    arts = pq.read_table(tmp_path / "out/corpus/articles.parquet").to_pandas()
    assert arts["primary_category"].tolist() == ["math.AG", "math.PR", "math.AG"]
    pairs = pq.read_table(tmp_path / "out/data/pairs.parquet").to_pandas()
    assert len(pairs) == 9 and "<math" in pairs["statement_xml"][0]
    assert MC.compare_counts(report)[0].startswith("pairs: 9 read, the paper has 184,094")


def test_table2_counts_the_text_lines_words(tmp_path):
    from proofmatch.data.stats import paper_counts

    M.import_folder(release(tmp_path / "rel", 1), tmp_path / "out", splits=["mixed"])
    pairs = pq.read_table(tmp_path / "out/data/pairs.parquet").to_pandas()
    # "Lemma 3.2. Let" "be given ." -> 6 words; 3 math tokens
    assert paper_counts(pairs, "statement").iloc[0].tolist() == [5, 3]  # statement: .strip(" .")


def test_import_without_metadata(tmp_path):
    report = M.import_folder(
        release(tmp_path / "rel", variant="b"), tmp_path / "out", splits=["mixed"]
    )
    assert report["variant"] == "without metadata" and report["articles"] == 3
    assert "split pr not configured" in report["skipped"].values()


def test_misaligned_level_file_names_file_and_header(tmp_path):
    folder = release(tmp_path / "rel")
    path = folder / "unmixed/unmixed_trans_dev"
    path.write_text(path.read_text().replace("|S1.Thm1", "|S9.Thm9"))
    with pytest.raises(
        F.MatchFormatError,
        match=r"unmixed_trans_dev, line \d+: pair 2 is 'arXiv:0001.0001\|S9.Thm9'",
    ):
        M.import_folder(folder, tmp_path / "out")
    # nothing is written, not even the tables read before the error (Mixed is read first)
    assert not (tmp_path / "out/replaced/unmixed/trans.parquet").exists()
    assert [p.name for p in (tmp_path / "out").rglob("*")] == []


def test_level_file_with_fewer_pairs(tmp_path):
    folder = release(tmp_path / "rel")
    path = folder / "mixed/mixed_partial_test"
    text = path.read_text()
    path.write_text(text[: text.rindex("arXiv:0002")])
    with pytest.raises(
        F.MatchFormatError, match=r"mixed_partial_test: 2 pairs, .*has 3; first missing header"
    ):
        M.import_folder(folder, tmp_path / "out")
    assert not (tmp_path / "out/replaced/mixed/partial.parquet").exists()


def test_unknown_file_and_empty_folder(tmp_path):
    folder = release(tmp_path / "rel")
    write(folder / "mixed/mixed_full_dev.bak", "x")
    with pytest.raises(F.MatchFormatError, match=r"mixed_full_dev.bak: unknown file name"):
        M.import_folder(folder, tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(F.MatchFormatError, match="empty folder"):
        M.import_folder(tmp_path / "empty", tmp_path / "out")
    (tmp_path / "empty/mixed").mkdir()
    with pytest.raises(F.MatchFormatError, match="empty folder"):
        M.import_folder(tmp_path / "empty", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_bad_byte_in_a_level_file_writes_nothing(tmp_path):
    folder = release(tmp_path / "rel")
    path = folder / "mixed/mixed_trans_test"
    path.write_bytes(path.read_bytes().replace(b"Proof.", b"Pr\xc3of.", 1))
    with pytest.raises(F.MatchFormatError, match=r"mixed_trans_test, line \d+: not UTF-8"):
        M.import_folder(folder, tmp_path / "out", splits=["mixed"])
    assert not (tmp_path / "out/replaced/mixed/trans.parquet").exists()


def test_export_reads_back_equal(tmp_path):
    M.import_folder(release(tmp_path / "rel"), tmp_path / "one")
    ME.export(tmp_path / "one", tmp_path / "exp")
    M.import_folder(tmp_path / "exp", tmp_path / "two")
    for split, levels in M.SPLIT_LEVELS.items():
        for level in levels:
            a = tmp_path / f"one/replaced/{split}/{level}.parquet"
            assert ME.data_digest(a) == ME.data_digest(
                tmp_path / f"two/replaced/{split}/{level}.parquet"
            )
    # an export read back and exported again is the same bytes (text lines come back tokenised
    # and consecutive formulas as one math line, so the first export is not the release's bytes)
    ME.export(tmp_path / "two", tmp_path / "exp2")
    for path in (tmp_path / "exp").rglob("*"):
        if path.is_file():
            assert (
                path.read_bytes()
                == (tmp_path / "exp2" / path.relative_to(tmp_path / "exp")).read_bytes()
            )


def test_export_writes_the_csv_variant(tmp_path):
    M.import_folder(release(tmp_path / "rel"), tmp_path / "one", splits=["mixed"])
    written = ME.export(
        tmp_path / "one", tmp_path / "exp", splits=["mixed"], levels=["trans"], csv=True
    )
    assert str(tmp_path / "exp/csv/mixed/mixed_trans_dev.csv") in written
    rows = FW.read_csv(tmp_path / "exp/csv/mixed/mixed_trans_dev.csv")
    assert len(rows) == 3 and rows[0]["meta"] == "arXiv:0000.0001|S1.Thm0"
    assert rows[0]["proof"].startswith("Proof . z = 0____bold")


def test_headers_without_statement_ids_get_numbered_pair_ids():
    pairs = [
        F.Pair(1, h, *F.split_header(h), [], [])
        for h in ["arXiv:1", "arXiv:1", "arXiv:2|None", "arXiv:1|S1", "arXiv:1|S1"]
    ]
    assert M.pair_ids(pairs, set()) == [
        "arXiv:1/#1",
        "arXiv:1/#2",
        "arXiv:2/#1",
        "arXiv:1/S1",
        "arXiv:1/S1#2",
    ]


def test_import_names_repeated_and_anonymous_headers_as_pair_ids_does(tmp_path):
    folder = release(tmp_path / "rel")
    for fam in ("mixed", "unmixed"):
        for level in F.FILE_LEVELS:
            path = folder / fam / f"{fam}_{level}_train"
            text = path.read_text().replace("0001.0001|S0.Thm1", "0000.0001|S0.Thm0")  # again
            path.write_text(text.replace("arXiv:0002.0001|S0.Thm2", "arXiv:0002.0001"))
    M.import_folder(folder, tmp_path / "out", splits=["mixed", "unmixed"])
    ids = pq.read_table(tmp_path / "out/replaced/mixed/full.parquet").column("pair_id")
    assert ids.to_pylist()[:3] == [
        "arXiv:0000.0001/S0.Thm0",
        "arXiv:0000.0001/S0.Thm0#2",
        "arXiv:0002.0001/#1",
    ]
    pairs = pq.read_table(tmp_path / "out/data/pairs.parquet").column("pair_id").to_pylist()
    assert len(pairs) == len(set(pairs)) == 9


def test_a_pair_that_differs_between_splits_names_both_files(tmp_path):
    folder = release(tmp_path / "rel")
    path = folder / "unmixed/unmixed_conservation_dev"
    text = path.read_text()
    path.write_text(text.replace("text\t∎", "text\t∎ .", 2))
    with pytest.raises(
        F.MatchFormatError,
        match=r"unmixed_conservation_dev, line \d+: pair 'arXiv:0000.0001/S1.Thm0' differs "
        r"from the pair of that id in mixed/mixed_conservation_dev, line \d+",
    ):
        M.import_folder(folder, tmp_path / "out", splits=["mixed", "unmixed"])
