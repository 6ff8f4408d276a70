"""The plan of one demo article: sections of statements, proofs and other blocks, a bibliography.

:func:`plan_article` decides how many pairs an article has and where they go (a main theorem in
the introduction proved in the last section, definitions and remarks without proofs, lemmas
followed by a comment instead of a proof) and which pairs get a special treatment
(:data:`SPECIAL_PAIRS`); :class:`proofmatch.demo.content.Planner` writes their text.
"""

from __future__ import annotations

import random

from proofmatch.demo.article import Article, Block, Section, Spec
from proofmatch.demo.content import Planner

#: Kinds of statements that get proofs, with weights.
PROVED_KINDS = (("lemma", 45), ("theorem", 14), ("proposition", 20), ("corollary", 15), ("claim", 6))

#: The share of pairs given each special treatment (the rest are ordinary pairs).
SPECIAL_PAIRS = (
    ("omitted", 0.035),
    ("reference_only", 0.04),
    ("short_proof", 0.02),
    ("short_statement", 0.025),
    ("long_proof", 0.03),
    ("title_only_statement", 0.012),
    ("title_only_proof", 0.006),
)

#: Invented author names for the bylines and the bibliography.
SURNAMES = tuple(
    "Abele Baker Costa Dubois Eriksen Fischer Garcia Horvat Ivanova Jensen Kowalski Lindqvist Moreau"
    " Nakamura Olsen Petrov Quist Rossi Schmidt Tanaka Urban Varga Weber Yilmaz Zhou".split()
)
INITIALS = "ABCDEFGHJKLMNOPRSTVW"


def _special_kind(rng: random.Random) -> str | None:
    r = rng.random()
    for name, share in SPECIAL_PAIRS:
        if r < share:
            return name
        r -= share
    return None


def plan_article(spec: Spec, seed: int) -> Article:
    """The full content of one article: sections of blocks, every sentence realized."""
    pl = Planner(spec, seed)
    rng, lang, cat = pl.rng, pl.lang, pl.cat
    topics = rng.sample(cat["topics"], 2)
    topic_slots = {
        "topic": lambda: topics[0],
        "topic2": lambda: topics[1],
        "Topic": lambda: topics[0][:1].upper() + topics[0][1:],
    }
    title = pl.fill(rng.choice(lang["titles"]), topic_slots)
    authors = [f"{rng.choice(INITIALS)}. {s}" for s in rng.sample(SURNAMES, rng.randint(1, 3))]
    abstract = pl.fill(rng.choice(lang["abstract"]), {**pl.slots([], [], None, 0.0), **topic_slots})

    n_pairs = 0 if spec.no_theorems else rng.randint(16, 32)
    pl.n_sections = n_later = rng.randint(3, 5)
    pl.n_sections += 1
    sections: list[Section] = []

    # Section 1: introduction, sometimes with a main theorem proved in the last section.
    pl.section = 1
    counter = [0]
    intro = Section(1, lang["intro_title"], [Block("para", body=[pl.plain("filler"), pl.plain("filler")])])
    main_theorem: Block | None = None
    main_proof: list[str] | None = None
    if not spec.no_theorems and rng.random() < 0.35:
        statement, proof, _ = pl.statement_proof(None)
        main_theorem = pl.number_block(Block("theorem", body=statement), counter)
        intro.blocks.append(Block("para", body=[lang["main_result"]]))
        intro.blocks.append(main_theorem)
        pl.blocks_so_far.append(main_theorem)
        kind_ref = f"{lang['kinds']['theorem']}\u00a0\\ref{{{main_theorem.anchor}}}"
        intro.blocks.append(
            Block(
                "para",
                body=[pl.fill(lang["later_proof"], {"self": lambda: kind_ref, "sec": lambda: str(pl.n_sections)})],
            )
        )
        main_proof = proof
    sections.append(intro)

    per_section = _split_count(n_pairs, n_later, rng)
    titles = rng.sample(lang["sections"], n_later)
    for s, (count, stitle) in enumerate(zip(per_section, titles), start=2):
        pl.section, counter = s, [0]
        sec = Section(s, stitle, [Block("para", body=[pl.plain("filler")])])
        extras = (
            ["definition"] * (rng.random() < 0.7) + ["remark"] * rng.randint(0, 1) + ["example"] * (rng.random() < 0.3)
        )
        extras += ["commentary"] * (not spec.no_theorems and rng.random() < 0.3)
        kinds = [
            rng.choices([k for k, _ in PROVED_KINDS], weights=[w for _, w in PROVED_KINDS])[0] for _ in range(count)
        ]
        order = kinds + extras
        rng.shuffle(order)
        if spec.no_theorems:
            order = ["para"] * rng.randint(2, 4)
        for what in order:
            if what == "para":
                sec.blocks.append(Block("para", body=[pl.plain("filler") + " " + pl.plain("examples")]))
            elif what in ("definition", "remark", "example"):
                key = {"definition": "definitions", "remark": "remarks", "example": "examples"}[what]
                block = pl.number_block(Block(what, body=[pl.plain(key)]), counter)
                sec.blocks.append(block)
                pl.blocks_so_far.append(block)
            elif what == "commentary":
                statement, _, name = pl.statement_proof(None)
                block = pl.number_block(Block("lemma", body=statement, name=name), counter)
                self_ref = f"{lang['kinds']['lemma']}\u00a0\\ref{{{block.anchor}}}"
                slots = {
                    **pl.slots([], [], None, 0.0),
                    "self": lambda: self_ref,
                    "sec": lambda: str(min(pl.n_sections, s + 1)),
                }
                sec.blocks += [block, Block("para", body=[pl.fill(rng.choice(lang["commentary"]), slots)])]
                pl.blocks_so_far.append(block)
            else:
                special = _special_kind(rng)
                statement, proof, name = pl.statement_proof(special)
                block = pl.number_block(
                    Block(what, body=statement, proof=proof, name=name, proof_title=lang["proof_title"]), counter
                )
                sec.blocks.append(block)
                pl.blocks_so_far.append(block)
        sections.append(sec)

    if main_theorem is not None:
        last = sections[-1]
        kind_ref = f"{lang['kinds']['theorem']} {main_theorem.number}"
        last.blocks.append(Block("para", body=[pl.plain("filler")]))
        last.blocks.append(
            Block("proof", proof=main_proof, proof_title=lang["proof_of"].replace("{kind}", kind_ref) + ".")
        )

    bib = []
    for i in range(1, pl.n_bib + 1):
        names = rng.sample(SURNAMES, rng.randint(1, 3))
        year = rng.randint(1975, 2011)
        label = (
            str(i)
            if spec.index % 3
            else (
                "".join(n[0] for n in names) + f"{year % 100:02d}"
                if len(names) > 1
                else names[0][:3] + f"{year % 100:02d}"
            )
        )
        btitle = pl.fill(
            rng.choice(lang["bib_titles"]),
            {"topic": lambda: rng.choice(cat["topics"]), "Topic": lambda: rng.choice(cat["topics"]).capitalize()},
        )
        entry = f"{', '.join(f'{rng.choice(INITIALS)}. {n}' for n in names)}, {btitle}, {rng.choice(lang['journals'])} ({year})."
        bib.append((f"bib{i}", label, entry))
    return Article(spec, title, authors, abstract, sections, bib, pl.anchors)


def _split_count(total: int, parts: int, rng: random.Random) -> list[int]:
    """``total`` items over ``parts`` sections, each share at least a third of the average."""
    weights = [rng.uniform(1.0, 3.0) for _ in range(parts)]
    raw = [total * w / sum(weights) for w in weights]
    counts = [int(x) for x in raw]
    for i in sorted(range(parts), key=lambda i: raw[i] - counts[i], reverse=True)[: total - sum(counts)]:
        counts[i] += 1
    return counts
