"""Figure 2 (proofmatch.figure): pair choice, LIME probability function, rendering with fake matchers."""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import pytest

from proofmatch import figure as F


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
                    M[i, zlib.crc32(t.encode()) % self.dim] += self.math_weight if t.startswith("$") else 1.0
        return M

    def factors(self, statements, proofs, batch_size=64):
        assert len(statements) == len(proofs)
        n = len(statements)
        return self._embed(statements), self._embed(proofs), np.zeros(n, np.float32), np.zeros(n, np.float32)


def toy_pairs(n: int = 12) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    words = "let be a module and local submodule then is supplement of each proper with since".split()
    rows = []
    for i in range(n):
        own = [f"$M{i}", f"$K{i}", "$+", "$="]
        rows.append({"pair_id": f"art{i}/lemma{i}", "article_id": f"art{i}", "part": "test",
                     "statement_tokens": ["Lemma", "."] + list(rng.choice(words, 6)) + own[: 2 + (i == 3)],
                     "proof_tokens": ["Proof", "."] + list(rng.choice(words, 10)) + own})
    rows[5]["proof_tokens"] = rows[5]["proof_tokens"] + [f"w{j}" for j in range(200)]  # too long for max_tokens
    rows[5]["statement_tokens"] = rows[5]["statement_tokens"] + ["$+", "$=", "$x"]
    return pd.DataFrame(rows)


def test_pick_pair_is_deterministic_and_prefers_shared_math():
    df = toy_pairs()
    assert F.pick_pair(df, max_tokens=120) == 3      # 3 shared symbols; row 5 shares 4 but is too long
    assert F.pick_pair(df, max_tokens=10_000) == 5
    assert F.pick_pair(df.iloc[::-1].reset_index(drop=True), 120) == len(df) - 1 - 3
    assert F.shared_math(["$x", "x", "$y"], ["$x", "$x", "y"]) == 1


def test_display_tokens_have_no_whitespace():
    assert F.display_token("$x") == "x"
    assert F.display_token("$x~bold") == "x[bold]"
    assert F.display_token("such that") == "such_that"
    assert F.display_token("$") == "$"


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


def test_figure_from_fake_matchers_renders_png_and_pdf(tmp_path):
    df = toy_pairs()
    png, pdf = tmp_path / "figure2.png", tmp_path / "figure2.pdf"
    panels = F.figure_from_matchers([("(a) math model", BagMatcher(math_weight=3.0)),
                                     ("(b) text model", BagMatcher(math_weight=0.1))],
                                    df, png, pdf, samples=150, seed=0, n_others=8)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pdf.read_bytes()[:5] == b"%PDF-"
    assert len(panels) == 2 and panels[0].title.startswith("(a) math model — art3/lemma3")
    math_panel = panels[0]
    assert len(math_panel.tokens) == len(df["statement_tokens"][3]) + len(df["proof_tokens"][3])
    # as in the paper: the math-heavy model's strongest "match" evidence is a shared math symbol,
    # the text-heavy model's is a word
    assert math_panel.is_math[int(np.argmax(math_panel.weights))]
    assert not panels[1].is_math[int(np.argmax(panels[1].weights))]
    assert math_panel.p_match > 0.9 and 0.0 < panels[1].p_match < 1.0


def test_figure2_loads_both_runs(tmp_path, monkeypatch):
    df = toy_pairs()
    data = tmp_path / "conservation.parquet"
    df.to_parquet(data, index=False)
    loaded = []
    monkeypatch.setattr(F, "_load_matcher", lambda run: loaded.append(str(run)) or BagMatcher())
    F.figure2("runs/cons", "runs/full", data, tmp_path / "f.png", tmp_path / "f.pdf", samples=20, seed=1)
    assert loaded == ["runs/cons", "runs/full"]
    assert (tmp_path / "f.png").stat().st_size > 0 and (tmp_path / "f.pdf").stat().st_size > 0
