"""Figure 2 (proofmatch.evaluation.figure): pair choice, LIME probability function, rendering with fake matchers."""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import pytest

from proofmatch.evaluation import figure as F
from proofmatch.scoring.tokens import display_token


class BagMatcher:
    """Hashed bag of tokens; math tokens weigh ``math_weight``, text tokens 1; UNK counts for nothing."""

    unk_token = "[UNK]"

    def __init__(self, math_weight: float = 1.0, dim: int = 1 << 14):
        self.math_weight, self.dim = math_weight, dim

    def _embed(self, docs):
        M = np.zeros((len(docs), self.dim), np.float32)
        for i, d in enumerate(docs):
            for t in d:
                if t != self.unk_token:
                    M[i, zlib.crc32(t.encode()) % self.dim] += (
                        self.math_weight if t.startswith("$") else 1.0
                    )
        return M

    def factors(self, statements, proofs, batch_size=64):
        assert len(statements) == len(proofs)
        n = len(statements)
        return (
            self._embed(statements),
            self._embed(proofs),
            np.zeros(n, np.float32),
            np.zeros(n, np.float32),
        )


def toy_pairs(n: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    words = (
        "let be a module and local submodule then is supplement of each proper with since".split()
    )
    rows = []
    for i in range(n):
        own = [f"$M{i}", f"$K{i}", "$+", "$="]
        rows.append(
            {
                "pair_id": f"art{i}/lemma{i}",
                "article_id": f"art{i}",
                "part": "test",
                "statement_tokens": ["Lemma", "."]
                + list(rng.choice(words, 6))
                + own[: 2 + (i == 3)],
                "proof_tokens": ["Proof", "."] + list(rng.choice(words, 10)) + own,
            }
        )
    rows[5]["proof_tokens"] = rows[5]["proof_tokens"] + [
        f"w{j}" for j in range(200)
    ]  # too long for max_tokens
    rows[5]["statement_tokens"] = rows[5]["statement_tokens"] + ["$+", "$=", "$x"]
    return pd.DataFrame(rows)


def test_pick_pairs_is_deterministic_prefers_shared_math_and_two_articles():
    df = toy_pairs()
    # row 3 shares 3 symbols; row 5 shares 4 but is too long; the rest tie on 2 symbols and length
    assert F.pick_pairs(df, 2, max_tokens=120) == [3, 0]
    assert F.pick_pairs(df, 2, max_tokens=10_000) == [5, 3]
    assert F.pick_pairs(df.iloc[::-1].reset_index(drop=True), 2, 120) == [
        len(df) - 1 - 3,
        len(df) - 1,
    ]
    # the second pair comes from another article than the first
    same = df.assign(article_id=df["article_id"].where(df.index != 0, "art3"))
    assert F.pick_pairs(same, 2, 120) == [3, 1]
    # one article only: the pairs share it (with a warning) rather than fail
    assert F.pick_pairs(df.assign(article_id="one"), 2, 120) == [3, 0]
    assert F.shared_math(["$x", "x", "$y"], ["$x", "$x", "y"]) == 1
    with pytest.raises(ValueError, match="need 2 pairs"):
        F.pick_pairs(df.iloc[:1], 2)


def test_display_tokens_have_no_whitespace():
    assert display_token("$x") == "x"
    assert display_token("$x~bold") == "x[bold]"
    assert display_token("such that") == "such_that"
    assert display_token("$") == "$"


def test_probability_fn_masks_in_place_and_is_a_softmax():
    m = BagMatcher()
    st, pr = ["$a", "is", "$b"], ["$b", "so", "$a"]
    others = [["$c", "so"], ["$d"]]
    fn = F.match_probability_fn(m, st, pr, others, unk="[UNK]", progress=False)
    probs = fn(["a is b\nb so a", "a is b\n[UNK] [UNK] [UNK]", "[UNK] [UNK] [UNK]\nb so a"])
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    # unperturbed: scores 3 (own: $a, $b... bag dot) vs others -> high probability
    assert probs[0, 1] > 0.5
    # masking the whole proof or the statement gives every candidate score 0 -> uniform 1/3
    np.testing.assert_allclose(probs[1:, 1], 1 / 3)
    with pytest.raises(ValueError, match="expected 6"):
        fn(["a is b\nb so"])


def test_figure_from_fake_matchers_has_both_pairs_under_both_models(tmp_path):
    df = toy_pairs()
    png, pdf = tmp_path / "figure2.png", tmp_path / "figure2.pdf"
    panels = F.figure_from_matchers(
        [("math model", BagMatcher(math_weight=3.0)), ("text model", BagMatcher(math_weight=0.1))],
        df,
        png,
        pdf,
        samples=150,
        seed=0,
        n_others=8,
    )
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pdf.read_bytes()[:5] == b"%PDF-"
    # as the paper's examples: a pair whose own proof both models rank first comes first (the
    # text model matches only row 11); the next is not matched by both, and its title says so
    matched = F.top1_matched(BagMatcher(math_weight=3.0), df, 64) & F.top1_matched(
        BagMatcher(math_weight=0.1), df, 64
    )
    assert list(np.flatnonzero(matched)) == [11]
    assert F.pick_pairs(df, 2, 120, matched) == [11, 3] and F.pick_pairs(df, 2, 120) == [3, 0]
    first, second = df["pair_id"][11], df["pair_id"][3]
    assert [p.pair_id for p in panels] == [first, first, second, second]
    assert [p.title for p in panels] == [
        f"(a) Example 1: math model — {first}",
        f"(b) Example 1: text model — {first}",
        f"(c) Example 2: math model — {second} (not top 1 under every model)",
        f"(d) Example 2: text model — {second} (not top 1 under every model)",
    ]
    for panel, row in zip(panels, (11, 11, 3, 3)):
        assert len(panel.tokens) == len(df["statement_tokens"][row]) + len(df["proof_tokens"][row])
        assert panel.n_statement == len(df["statement_tokens"][row])
    # as in the paper: the math-heavy model's strongest "match" evidence is a shared math symbol,
    # the text-heavy model's is a word
    for math_panel, text_panel in (panels[0:2], panels[2:4]):
        assert math_panel.is_math[int(np.argmax(math_panel.weights))]
        assert not text_panel.is_math[int(np.argmax(text_panel.weights))]
        assert math_panel.p_match > 0.9 and 0.0 < text_panel.p_match < 1.0
        assert not np.allclose(math_panel.weights, text_panel.weights)


def test_figure2_loads_both_runs(tmp_path, monkeypatch):
    df = toy_pairs()
    data = tmp_path / "conservation.parquet"
    df.to_parquet(data, index=False)
    loaded = []
    monkeypatch.setattr(F, "_load_matcher", lambda run: loaded.append(str(run)) or BagMatcher())
    F.figure2(
        "runs/cons", "runs/full", data, tmp_path / "f.png", tmp_path / "f.pdf", samples=20, seed=1
    )
    assert loaded == ["runs/cons", "runs/full"]
    F.figure2(
        "runs/cons",
        "runs/full",
        data,
        tmp_path / "g.png",
        tmp_path / "g.pdf",
        samples=20,
        seed=1,
        n_pairs=1,
    )
    assert (tmp_path / "g.png").stat().st_size < (
        tmp_path / "f.png"
    ).stat().st_size  # two panels, not four
    assert (tmp_path / "f.png").stat().st_size > 0 and (tmp_path / "f.pdf").stat().st_size > 0


def test_figure_check_sees_every_panel(tmp_path):
    """The check that the CLI and end-to-end tests apply to Figure 2 (tests/artifacts.py): four
    panels for two pairs under two models, two for one pair, and a wrong count fails."""
    from artifacts import check_figure, panel_count

    matchers = [
        ("math model", BagMatcher(math_weight=3.0)),
        ("text model", BagMatcher(math_weight=0.1)),
    ]
    for n_pairs in (2, 1):
        png, pdf = tmp_path / f"{n_pairs}.png", tmp_path / f"{n_pairs}.pdf"
        F.figure_from_matchers(
            matchers, toy_pairs(), png, pdf, samples=40, seed=0, n_others=8, n_pairs=n_pairs
        )
        check_figure(png, pdf, panels=2 * n_pairs)
    assert panel_count(tmp_path / "1.png") == 2
    with pytest.raises(AssertionError):
        check_figure(tmp_path / "1.png", tmp_path / "1.pdf", panels=4)


def test_math_tokens_print_as_symbols_and_panels_name_the_model():
    from proofmatch.evaluation.panels import math_symbol

    assert [math_symbol(t) for t in ("F[script]", "Q[double-struck]", "g[fraktur]")] == [
        "ℱ",
        "ℚ",
        "𝔤",
    ]
    assert math_symbol("F[bold-script]") == "𝓕" and math_symbol("R[double-struck]") == "ℝ"
    # a symbol the fonts lack stays its token (never an empty box)
    from proofmatch.evaluation.panels import _glyphs

    for token, symbol in (("x[bold]", "𝐱"), ("N[sans-serif]", "𝖭")):
        assert math_symbol(token) == (symbol if ord(symbol) in _glyphs() else token)
    assert math_symbol("α[bold]") == "α[bold]" and math_symbol("x") == "x"  # kept as they are
    assert (
        F.model_label("results/runs/mixed/scratchbert-local/conservation-both")
        == "ScratchBERT-Local-Local"
    )
    assert F.model_label("somewhere/run") == "somewhere"


def test_panels_draw_symbols_and_a_colour_scale(tmp_path, monkeypatch):
    from proofmatch.evaluation import panels as P

    drawn = []
    import matplotlib.figure

    real = matplotlib.figure.Figure.text

    def spy(self, x, y, s, *args, **kwargs):
        drawn.append(s)
        return real(self, x, y, s, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "text", spy)
    panel = P.Explanation(
        "(a) Example 1: NPT-Local-Local trained with symbol conservation — a/1",
        ["Let", "F[script]", "be", "Q[double-struck]"],
        [False, True, False, True],
        np.array([0.1, -0.4, 0.0, 0.2]),
        2,
        0.8,
        0.9,
        "a/1",
    )
    P.draw_panels([panel], tmp_path / "f.png", tmp_path / "f.pdf")
    assert "ℱ" in drawn and "ℚ" in drawn and "F[script]" not in drawn
    assert any("largest |weight| = 0.400" in s for s in drawn)
    assert (tmp_path / "f.png").stat().st_size > 1000
