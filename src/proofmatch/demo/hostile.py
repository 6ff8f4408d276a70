"""The demo corpus's hostile files: one for every skip counter of the extraction stage.

Each starts from a valid article of its own (or is plain bytes) and breaks it in one way
(:data:`HOSTILE`): empty, cut, wrongly compressed, binary, wrongly encoded, malformed, too deep,
an entity bomb.
"""

from __future__ import annotations

import gzip
import random

from proofmatch.demo.article import Article
from proofmatch.demo.markup import render_article

#: Hostile files written besides the regular articles: name suffix -> (file suffix, what it is).
HOSTILE: dict[str, tuple[str, str]] = {
    "empty": (".xhtml", "zero bytes"),
    "truncated": (".xhtml", "a valid article cut in the middle"),
    "truncated-gz": (".xhtml.gz", "a gzip stream cut in the middle"),
    "not-gzip": (".xhtml.gz", "plain XHTML behind a .gz name"),
    "binary": (".xhtml", "random bytes"),
    "latin1": (".xhtml", "Latin-1 bytes under an UTF-8 declaration"),
    "malformed": (".xhtml", "mismatched end tags"),
    "deep": (".xhtml", "element nesting deeper than libxml2's 256 levels"),
    "entity-bomb": (".xhtml", "nested internal-DTD entities (billion laughs, small)"),
}


def hostile_files(seed: int, donor: Article, donor_fr: Article) -> dict[str, bytes]:
    """The bytes of every :data:`HOSTILE` file; ``donor`` articles supply realistic content."""
    rng = random.Random(f"proofmatch-demo:{seed}:hostile")
    good = render_article(donor).encode("utf-8")
    cut = len(good) * 11 // 20
    gz = gzip.compress(good, compresslevel=6, mtime=0)
    binary = bytearray(rng.randbytes(4096))
    binary[17] = 0
    deep = (
        '<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Nested</title></head><body>'
        + '<div class="ltx_para">' * 300
        + "deep"
        + "</div>" * 300
        + "</body></html>\n"
    )
    bomb = ['<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html [\n<!ENTITY e0 "proof">']
    bomb += [f'<!ENTITY e{i} "{f"&e{i - 1};" * 10}">' for i in range(1, 11)]
    bomb.append(
        ']>\n<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Entities</title></head><body>'
        '<div class="ltx_theorem ltx_theorem_lemma"><p>&e10;</p></div><div class="ltx_proof"><p>&e10;</p></div></body></html>\n'
    )
    out = {
        "empty": b"",
        "truncated": good[:cut],
        "truncated-gz": gz[: len(gz) // 2],
        "not-gzip": good,
        "binary": bytes(binary),
        "latin1": render_article(donor_fr).encode("latin-1", errors="xmlcharrefreplace"),
        "malformed": good.replace(b"</p>", b"</span>", 3),
        "deep": deep.encode("utf-8"),
        "entity-bomb": "\n".join(bomb).encode("utf-8"),
    }
    assert set(out) == set(HOSTILE)
    return out
