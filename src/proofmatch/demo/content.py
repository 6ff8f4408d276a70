"""The random content of one demo article: its notation, facts, statements and proofs.

:class:`Planner` realizes the templates of one article (:mod:`proofmatch.demo.templates`) with the
article's own random stream and notation; :func:`proofmatch.demo.plan.plan_article` arranges what
it writes into sections.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from proofmatch.demo.article import Block, Spec
from proofmatch.demo.templates import (
    choose_alternatives,
    fill_slots,
    load_language,
    main_formula,
    substitute_roles,
)

# Difficulty knobs, tuned so that TF-IDF (statements vs proofs, 10% held out) scores 30-40 MRR,
# like real corpora (about 32 on the Stacks chapters). With RESTATEMENT = 0 the article-level
# signal alone (notation, category vocabulary) gives about 25; see tests/test_demo.py.
#: Weights of a role's candidate symbols: most articles share the first (common notation).
NOTATION_WEIGHTS = (0.8, 0.15, 0.05, 0.05)
#: Share of its category's facts an article talks about (its topic).
ARTICLE_FACTS = 0.85
#: Probability that a distractor fact in a proof comes from the article's topic, not the category.
ARTICLE_DISTRACTORS = 0.5
#: Mean probability that a proof slot restates the statement's own hypothesis or conclusion.
RESTATEMENT = 0.25


@dataclass
class Fact:
    """A realized fact: its sentence fragment and the TeX of its first formula."""

    text: str
    math: str | None


def choose_notation(roles: dict[str, list[str]], rng: random.Random) -> dict[str, str]:
    """The article's symbol for every role: mostly the first candidate, so that many articles
    share conventions (as real papers do), and never one symbol for two roles."""
    used: set[str] = set()
    out: dict[str, str] = {}
    for role, candidates in roles.items():
        weights = NOTATION_WEIGHTS[: len(candidates)]
        first = rng.choices(candidates, weights=weights)[0]
        pick = next((c for c in [first, *candidates] if c not in used), None)
        if pick is None:
            raise ValueError(
                f"role {role!r}: every candidate {candidates} is taken by another role"
            )
        used.add(pick)
        out[role] = pick
    return out


class Planner:
    """Realizes the templates of one article with its own random stream and notation."""

    def __init__(self, spec: Spec, seed: int) -> None:
        self.spec = spec
        self.rng = random.Random(f"proofmatch-demo:{seed}:article:{spec.index}")
        self.lang = load_language(spec.lang)
        self.cat = self.lang["categories"][spec.primary]
        self.notation = choose_notation(self.cat["roles"], self.rng)
        facts = self.cat["facts"]
        self.article_facts = self.rng.sample(facts, max(8, round(ARTICLE_FACTS * len(facts))))
        self.blocks_so_far: list[Block] = []
        self.anchors: dict[str, tuple[str, str]] = {}
        self.n_bib = self.rng.randint(6, 14)
        self.n_sections = 0
        self.section = 0

    # -- realization --------------------------------------------------------------------------
    def realize(self, template: str) -> str:
        """Alternatives and notation roles of one template string (slots left alone)."""
        return substitute_roles(choose_alternatives(template, self.rng), self.notation)

    def fact(self, pool: list[str] | None = None, need_math: bool = False) -> Fact:
        """A realized fact from ``pool`` (default: the article's topic or its category); with
        ``need_math``, one whose main formula exists (see :func:`main_formula`)."""
        pool = (
            pool
            if pool is not None
            else (
                self.article_facts if self.rng.random() < ARTICLE_DISTRACTORS else self.cat["facts"]
            )
        )
        if need_math:
            pool = [t for t in pool if main_formula(t)] or [
                t for t in self.cat["facts"] if main_formula(t)
            ]
            if not pool:
                raise ValueError(
                    f"no fact with a formula in {self.spec.primary} ({self.spec.lang})"
                )
        text = self.realize(self.rng.choice(pool))
        return Fact(text, main_formula(text))

    def ref(self) -> str:
        """A reference to an earlier numbered block, or a citation when there is none."""
        targets = [b for b in self.blocks_so_far if b.anchor and b.kind != "proof"]
        if not targets:
            return self.cite()
        b = self.rng.choice(targets[-12:])
        return f"{self.lang['kinds'][b.kind]}\u00a0\\ref{{{b.anchor}}}"

    def cite(self) -> str:
        key = f"bib{self.rng.randint(1, self.n_bib)}"
        if self.rng.random() < 0.6:
            word = self.lang["kinds"][self.rng.choice(("theorem", "lemma", "proposition"))]
            return f"\\cite{{{key}}}[{word} {self.rng.randint(1, 9)}.{self.rng.randint(1, 12)}]"
        return f"\\cite{{{key}}}"

    def fill(self, template: str, slots: dict[str, Callable[[], str]]) -> str:
        """A template with its slots filled, then realized."""
        return self.realize(fill_slots(template, slots))

    def slots(
        self, hyps: list[Fact], concls: list[Fact], intro: str | None, signal: float
    ) -> dict[str, Callable[[], str]]:
        """Slot values: statement facts with probability ``signal``, other facts otherwise."""
        rng = self.rng

        def pick(facts: list[Fact], i: int, need_math: bool) -> Fact:
            if i < len(facts) and rng.random() < signal and (facts[i].math or not need_math):
                return facts[i]
            return self.fact(need_math=need_math)

        def text_of(facts: list[Fact], i: int) -> Callable[[], str]:
            return lambda: pick(facts, i, False).text

        def math_of(facts: list[Fact], i: int) -> Callable[[], str]:
            return lambda: pick(facts, i, True).math or ""

        intro_value = intro
        values: dict[str, Callable[[], str]] = {
            "hyp": text_of(hyps, 0),
            "hyp2": text_of(hyps, 1),
            "concl": text_of(concls, 0),
            "concl2": text_of(concls, 1),
            "hypm_tex": math_of(hyps, 0),
            "conclm_tex": math_of(concls, 0),
            "fact": lambda: self.fact().text,
            "fact2": lambda: self.fact().text,
            "factm_tex": lambda: self.fact(need_math=True).math or "",
            "intro": lambda: (
                intro_value
                if intro_value and rng.random() < signal
                else self.realize(rng.choice(self.cat["intros"]))
            ),
            "ref": self.ref,
            "cite": self.cite,
            "step": lambda: self.realize(rng.choice(self.cat["steps"])),
            "sec": lambda: str(rng.randint(2, max(2, self.n_sections))),
            "term": lambda: rng.choice(self.cat["terms"]),
            "termsym": lambda: f"${self.notation[rng.choice(self.cat['term_sym'])]}$",
        }
        for name in ("hypm", "conclm", "factm"):
            values[name] = (lambda f: lambda: f"${f()}$")(values[name + "_tex"])
        return values

    # -- statements and proofs ----------------------------------------------------------------
    def statement_proof(
        self, special: str | None
    ) -> tuple[list[str], list[str] | None, str | None]:
        """(statement paragraphs, proof paragraphs, theorem name) of one pair."""
        rng, lang = self.rng, self.lang
        intro = self.realize(rng.choice(self.cat["intros"]))
        pool = self.article_facts if rng.random() < 0.8 else self.cat["facts"]
        chosen = [self.fact([t]) for t in rng.sample(pool, 4)]  # four different facts
        hyps, concls = chosen[:2], chosen[2:]
        own = self.slots(hyps, concls, intro, 1.0)
        if special == "short_statement":
            statement = [self.fill(rng.choice(lang["short_statements"]), own)]
        elif special == "title_only_statement":
            statement = []
        else:
            statement = [self.fill(rng.choice(lang["statements"]), own)]
        name = (
            rng.choice(self.cat["names"])
            if special == "title_only_statement" or rng.random() < 0.12
            else None
        )
        # How much of the statement the proof restates: from almost nothing to most of it.
        signal = min(1.0, rng.betavariate(2.0, 2.0) * 2 * RESTATEMENT)
        slots = self.slots(hyps, concls, intro, signal)
        if special == "omitted":
            return statement, [rng.choice(lang["omitted"])], name
        if special == "reference_only":
            return statement, [self.fill(rng.choice(lang["reference_only"]), slots)], name
        if special == "short_proof":
            return statement, [self.fill(rng.choice(lang["short_proofs"]), slots)], name
        if special == "title_only_proof":
            return statement, [], name
        n_mid = (
            rng.randint(45, 60)
            if special == "long_proof"
            else rng.choice((1, 1, 2, 2, 3, 3, 4, 5, 6, 8))
        )
        sentences = [self.fill(rng.choice(lang["proof_open"]), slots)]
        for _ in range(n_mid):
            if rng.random() < 0.12 or (special == "long_proof" and rng.random() < 0.2):
                lead = rng.choice(lang["display_leads"])
                sentences.append(f"{lead} $${self.realize(rng.choice(self.cat['displays']))}$$")
            else:
                sentences.append(self.fill(rng.choice(lang["proof_middle"]), slots))
        sentences.append(self.fill(rng.choice(lang["proof_close"]), slots))
        return statement, _paragraphs(sentences, rng), name

    def plain(self, key: str) -> str:
        """One realized sentence of a generic list (filler, remarks, ...)."""
        slots = self.slots([], [], None, 0.0)
        return self.fill(self.rng.choice(self.lang[key]), slots)

    def number_block(self, block: Block, counter: list[int]) -> Block:
        counter[0] += 1
        block.number = f"{self.section}.{counter[0]}"
        if self.spec.flat_ids:
            block.anchor = f"Thm{counter[0]}"  # restarts in every section: duplicate ids
        elif self.spec.dialect in ("arxmliv", "arxmliv_ltx"):
            block.anchor = f"S{self.section}.Thm{counter[0]}"
        else:
            block.anchor = f"S{self.section}.Thmtheorem{counter[0]}"
        self.anchors[block.anchor] = (self.lang["kinds"][block.kind], block.number)
        return block


def _paragraphs(sentences: list[str], rng: random.Random) -> list[str]:
    """Group sentences into 1-3 paragraphs (displays end a sentence but not a paragraph)."""
    if len(sentences) < 4:
        return [" ".join(sentences)]
    cuts = sorted(rng.sample(range(1, len(sentences)), min(len(sentences) // 4, 2)))
    bounds = [0, *cuts, len(sentences)]
    return [" ".join(sentences[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a]
