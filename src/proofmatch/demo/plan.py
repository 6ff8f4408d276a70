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
PROVED_KINDS = (
    ("lemma", 45),
    ("theorem", 14),
    ("proposition", 20),
    ("corollary", 15),
    ("claim", 6),
)

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
    """The full content of one article: sections of blocks, every sentence realized.

    Every step draws from the planner's one random stream, in this order; a change of order
    changes every demo article after it.
    """
    pl = Planner(spec, seed)
    rng, lang = pl.rng, pl.lang
    title, authors, abstract = _front_matter(pl)

    n_pairs = 0 if spec.no_theorems else rng.randint(16, 32)
    pl.n_sections = n_later = rng.randint(3, 5)
    pl.n_sections += 1
    intro, main_theorem, main_proof = _introduction(pl)
    sections = [intro]

    per_section = _split_count(n_pairs, n_later, rng)
    titles = rng.sample(lang["sections"], n_later)
    for s, (count, stitle) in enumerate(zip(per_section, titles), start=2):
        sections.append(_body_section(pl, s, stitle, count))

    if main_theorem is not None:
        _prove_main_theorem(pl, sections[-1], main_theorem, main_proof)
    bib = [_bib_entry(pl, i) for i in range(1, pl.n_bib + 1)]
    return Article(spec, title, authors, abstract, sections, bib, pl.anchors)


def _front_matter(pl: Planner) -> tuple[str, list[str], str]:
    """Title, authors and abstract, about two topics of the article's category."""
    rng, lang = pl.rng, pl.lang
    topics = rng.sample(pl.cat["topics"], 2)
    topic_slots = {
        "topic": lambda: topics[0],
        "topic2": lambda: topics[1],
        "Topic": lambda: topics[0][:1].upper() + topics[0][1:],
    }
    title = pl.fill(rng.choice(lang["titles"]), topic_slots)
    authors = [f"{rng.choice(INITIALS)}. {s}" for s in rng.sample(SURNAMES, rng.randint(1, 3))]
    abstract = pl.fill(rng.choice(lang["abstract"]), {**pl.slots([], [], None, 0.0), **topic_slots})
    return title, authors, abstract


def _introduction(pl: Planner) -> tuple[Section, Block | None, list[str] | None]:
    """Section 1, sometimes with a main theorem (returned with its proof, written in the last section)."""
    rng, lang = pl.rng, pl.lang
    pl.section = 1
    counter = [0]
    intro = Section(
        1, lang["intro_title"], [Block("para", body=[pl.plain("filler"), pl.plain("filler")])]
    )
    if pl.spec.no_theorems or rng.random() >= 0.35:
        return intro, None, None
    statement, proof, _ = pl.statement_proof(None)
    main_theorem = pl.number_block(Block("theorem", body=statement), counter)
    intro.blocks.append(Block("para", body=[lang["main_result"]]))
    intro.blocks.append(main_theorem)
    pl.blocks_so_far.append(main_theorem)
    kind_ref = f"{lang['kinds']['theorem']}\u00a0\\ref{{{main_theorem.anchor}}}"
    later = pl.fill(
        lang["later_proof"], {"self": lambda: kind_ref, "sec": lambda: str(pl.n_sections)}
    )
    intro.blocks.append(Block("para", body=[later]))
    return intro, main_theorem, proof


def _body_section(pl: Planner, s: int, stitle: str, count: int) -> Section:
    """Section ``s``: ``count`` proved statements among definitions, remarks, examples and a
    commented lemma, shuffled (only paragraphs in an article without theorems)."""
    pl.section, counter = s, [0]
    sec = Section(s, stitle, [Block("para", body=[pl.plain("filler")])])
    for what in _block_order(pl, count):
        if what == "para":
            sec.blocks.append(Block("para", body=[pl.plain("filler") + " " + pl.plain("examples")]))
        elif what in ("definition", "remark", "example"):
            _add_unproved(pl, sec, what, counter)
        elif what == "commentary":
            _add_commentary(pl, sec, counter)
        else:
            _add_proved(pl, sec, what, counter)
    return sec


def _block_order(pl: Planner, count: int) -> list[str]:
    """The kinds of a section's blocks in order: ``count`` proved kinds drawn by weight, and extras."""
    rng, no_theorems = pl.rng, pl.spec.no_theorems
    extras = (
        ["definition"] * (rng.random() < 0.7)
        + ["remark"] * rng.randint(0, 1)
        + ["example"] * (rng.random() < 0.3)
    )
    extras += ["commentary"] * (not no_theorems and rng.random() < 0.3)
    kinds = [
        rng.choices([k for k, _ in PROVED_KINDS], weights=[w for _, w in PROVED_KINDS])[0]
        for _ in range(count)
    ]
    order = kinds + extras
    rng.shuffle(order)
    if no_theorems:
        order = ["para"] * rng.randint(2, 4)
    return order


def _add_unproved(pl: Planner, sec: Section, what: str, counter: list[int]) -> None:
    """A numbered definition, remark or example: a statement-like block without a proof."""
    key = {"definition": "definitions", "remark": "remarks", "example": "examples"}[what]
    block = pl.number_block(Block(what, body=[pl.plain(key)]), counter)
    sec.blocks.append(block)
    pl.blocks_so_far.append(block)


def _add_commentary(pl: Planner, sec: Section, counter: list[int]) -> None:
    """A lemma followed by a comment that defers its proof (an unpaired statement)."""
    rng, lang, s = pl.rng, pl.lang, sec.number
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


def _add_proved(pl: Planner, sec: Section, what: str, counter: list[int]) -> None:
    """A statement of kind ``what`` with its proof, perhaps one of the :data:`SPECIAL_PAIRS`."""
    special = _special_kind(pl.rng)
    statement, proof, name = pl.statement_proof(special)
    block = pl.number_block(
        Block(what, body=statement, proof=proof, name=name, proof_title=pl.lang["proof_title"]),
        counter,
    )
    sec.blocks.append(block)
    pl.blocks_so_far.append(block)


def _prove_main_theorem(
    pl: Planner, last: Section, main_theorem: Block, main_proof: list[str] | None
) -> None:
    """The proof of the introduction's main theorem, at the end of the last section."""
    lang = pl.lang
    kind_ref = f"{lang['kinds']['theorem']} {main_theorem.number}"
    last.blocks.append(Block("para", body=[pl.plain("filler")]))
    last.blocks.append(
        Block(
            "proof",
            proof=main_proof,
            proof_title=lang["proof_of"].replace("{kind}", kind_ref) + ".",
        )
    )


def _bib_entry(pl: Planner, i: int) -> tuple[str, str, str]:
    """Bibliography entry ``i``: key, label (numeric, or alpha for every third article), text."""
    rng, lang, topics = pl.rng, pl.lang, pl.cat["topics"]
    names = rng.sample(SURNAMES, rng.randint(1, 3))
    year = rng.randint(1975, 2011)
    if pl.spec.index % 3:
        label = str(i)
    elif len(names) > 1:
        label = "".join(n[0] for n in names) + f"{year % 100:02d}"
    else:
        label = names[0][:3] + f"{year % 100:02d}"
    btitle = pl.fill(
        rng.choice(lang["bib_titles"]),
        {"topic": lambda: rng.choice(topics), "Topic": lambda: rng.choice(topics).capitalize()},
    )
    authors = ", ".join(f"{rng.choice(INITIALS)}. {n}" for n in names)
    return (f"bib{i}", label, f"{authors}, {btitle}, {rng.choice(lang['journals'])} ({year}).")


def _split_count(total: int, parts: int, rng: random.Random) -> list[int]:
    """``total`` items over ``parts`` sections, each share at least a third of the average."""
    weights = [rng.uniform(1.0, 3.0) for _ in range(parts)]
    raw = [total * w / sum(weights) for w in weights]
    counts = [int(x) for x in raw]
    for i in sorted(range(parts), key=lambda i: raw[i] - counts[i], reverse=True)[
        : total - sum(counts)
    ]:
        counts[i] += 1
    return counts
