"""Read and parse one untrusted article file: bounded read, gzip, text checks, entities, safe parser.

Article files are untrusted input (a downloaded corpus, a user's own folder), so each one is read
and parsed under these rules before :mod:`proofmatch.data.statements` looks for statements in it:

* The XML parser resolves no entities, loads no DTD and never touches the network
  (``resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False``). libxml2 then
  also refuses entity amplification (billion laughs), text nodes over 10 MB and nesting deeper
  than 256; those files are skipped. ``max_depth`` can only lower that 256 bound.
* Files are read with a size bound; ``.gz`` files are decompressed incrementally and the bound
  applies to the *decompressed* size, so a gzip bomb costs at most ``max_file_mb``.
* XHTML often uses named HTML entities (``&nbsp;``, ``&InvisibleTimes;``) that only its
  (never loaded) DTD declares. Before parsing, names from ``html.entities.html5`` are replaced
  textually by numeric character references: one linear pass, no recursion, output at most a
  few times the input. The XML built-ins (``&amp;`` ...) are left alone. (The pass also rewrites
  such names inside comments and CDATA, which carry no statement text.) It works on
  ASCII-compatible encodings (UTF-8, Latin-1); UTF-16 files are parsed as they are.
* An entity reference that survives parsing (an undeclared name under a DOCTYPE, or one declared
  in an internal DTD subset) is never expanded: inside an extracted fragment it becomes the
  literal text ``&name;`` and is counted as ``unresolved_entities``, so a fragment always
  re-parses on its own.
* ``.html`` / ``.html.gz`` files that are not well-formed XML (HTML5 as served by ar5iv) are
  parsed with lxml's HTML parser (no network); it recovers from errors, so such files are never
  reported as truncated or malformed. ``.xhtml`` files must be well-formed XML.

Every failure of one file is a :class:`SkipFile` with one of :data:`REASONS`; the extraction
(:mod:`proofmatch.data.extract`) counts it in its report and goes on with the next file.
"""

from __future__ import annotations

import html.entities
import os
import re
import zlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from lxml import etree

from proofmatch import config

#: Why a file was skipped, in the order the checks run.
REASONS = (
    "bad_name",  # a path (or id) that is not valid UTF-8
    "unreadable",  # open/read failed (permissions, vanished, not a regular file)
    "bad_gzip",  # not gzip, corrupt, CRC error or truncated gzip stream
    "too_large",  # (decompressed) size over max_file_mb, or a text node over libxml2's 10 MB
    "empty",  # no bytes, or only whitespace
    "binary",  # NUL or many control bytes: not a text file
    "bad_encoding",  # bytes invalid in the declared (or default UTF-8) encoding, unknown encoding
    "entity_expansion",  # libxml2 refused an entity amplification (billion laughs)
    "too_deep",  # element nesting deeper than max_depth (or libxml2's 256)
    "truncated",  # input ends inside the document
    "malformed",  # any other well-formedness error, or no root element
    "output_too_large",  # its pairs' XML would exceed the output budget (nested statements repeat)
    "shard_output_too_large",  # its pairs would carry its shard's XML past extract.SHARD_OUTPUT_CHARS
    "internal_error",  # an unexpected exception (a bug): logged with its traceback
)

_CHUNK = 1 << 20
_SNIFF = 1 << 16
_XML_BUILTIN = {"amp", "lt", "gt", "quot", "apos"}
_XML_BUILTIN_BYTES = {n.encode() for n in _XML_BUILTIN}
_ENTITY_REF = re.compile(rb"&([A-Za-z][A-Za-z0-9]{1,31});")
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00")
_META_CHARSET = re.compile(
    rb"""<meta[^>]{0,200}?charset\s*=\s*["']?([A-Za-z0-9._:-]{1,40})""", re.I
)
_CONTROL = bytes(range(0, 9)) + b"\x0b\x0c" + bytes(range(0x0E, 0x20))


def _numeric_refs(text: str) -> bytes:
    return "".join(f"&#x{ord(ch):X};" for ch in text).encode("ascii")


#: entity name -> numeric character references (ASCII), for every HTML5 name except XML's own.
HTML_ENTITY_REFS: dict[bytes, bytes] = {
    name[:-1].encode("ascii"): _numeric_refs(value)
    for name, value in html.entities.html5.items()
    if name.endswith(";") and name[:-1] not in _XML_BUILTIN
}


class SkipFile(Exception):
    """One article cannot be used; ``reason`` is one of :data:`REASONS`."""

    def __init__(self, reason: str, detail: str) -> None:
        assert reason in REASONS, reason
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


# --------------------------------------------------------------------------------------------
# reading and sniffing


def is_gzip_path(path: str | os.PathLike) -> bool:
    return str(path).lower().endswith(".gz")


def is_html_path(path: str | os.PathLike) -> bool:
    """``.html`` / ``.html.gz``: files that may fall back to the HTML parser."""
    name = str(path).lower()
    return name.endswith(".html") or name.endswith(".html.gz")


def read_bounded(path: str | os.PathLike, max_bytes: int) -> bytes:
    """The file's bytes (decompressed for ``.gz``); never holds more than ``max_bytes + 1`` of them."""
    limit = f"{max_bytes / 2**20:g} MB"
    try:
        if not is_gzip_path(path):
            size = os.stat(path).st_size
            if size > max_bytes:
                raise SkipFile("too_large", f"{size} bytes > {limit}")
            with open(path, "rb") as fh:
                data = fh.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise SkipFile("too_large", f"more than {limit} (file grew while read)")
            return data
        return _gunzip_bounded(path, max_bytes, limit)
    except SkipFile:
        raise
    except zlib.error as exc:
        raise SkipFile("bad_gzip", str(exc)) from exc
    except OSError as exc:
        raise SkipFile("unreadable", f"{type(exc).__name__}: {exc}") from exc


def _gunzip_bounded(path: str | os.PathLike, max_bytes: int, limit: str) -> bytes:
    """Decompress a (multi-member) gzip file chunk by chunk, stopping past ``max_bytes``.

    zlib checks each member's CRC32 and length; trailing NUL padding is allowed (as gzip does).
    """
    parts: list[bytes] = []
    total = 0
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    started = False
    with open(path, "rb") as fh:
        while comp := fh.read(_CHUNK):
            while comp:
                if inflater.eof:  # previous member complete: NUL padding and/or a next member
                    comp = comp.lstrip(b"\x00")
                    if not comp:
                        break
                    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
                started = True
                out = inflater.decompress(comp, max_bytes + 1 - total)
                total += len(out)
                if total > max_bytes:
                    raise SkipFile("too_large", f"decompressed size exceeds {limit}")
                parts.append(out)
                comp = inflater.unused_data if inflater.eof else inflater.unconsumed_tail
    if started and not inflater.eof:
        raise SkipFile("bad_gzip", "truncated gzip stream (ends before the end-of-stream marker)")
    return b"".join(parts)


def _bom_text(body: bytes, bom: bytes) -> str:
    """The text after a byte-order mark (as far as it decodes), to tell a BOM-only file."""
    codec = {
        b"\xef\xbb\xbf": "utf-8",
        b"\xff\xfe\x00\x00": "utf-32-le",
        b"\x00\x00\xfe\xff": "utf-32-be",
        b"\xff\xfe": "utf-16-le",
        b"\xfe\xff": "utf-16-be",
    }.get(bom, "utf-8")
    return body[len(bom) : len(bom) + 4096].decode(codec, "ignore")


def check_text(data: bytes) -> None:
    """Skip empty and binary inputs before the parser sees them (clearer reasons than libxml2's)."""
    body = data
    for bom in _BOMS:
        if body.startswith(bom):
            if not _bom_text(body, bom).strip():
                raise SkipFile(
                    "empty",
                    "only a byte-order mark" + (" and whitespace" if len(body) > len(bom) else ""),
                )
            return  # UTF-16/32 (NULs expected) or UTF-8 with BOM: leave it to the parser
    if not body.strip():
        raise SkipFile("empty", "no content" if not body else "only whitespace")
    head = body[:_SNIFF]
    if b"\x00" in head:
        if head.lstrip()[:2] in (b"<\x00", b"\x00<"):
            return  # UTF-16 without BOM: libxml2 detects it
        raise SkipFile("binary", f"NUL byte at offset {head.index(0)}")
    controls = len(head) - len(head.translate(None, _CONTROL))
    if controls > len(head) // 20:
        raise SkipFile("binary", f"{controls} control bytes in the first {len(head)} bytes")


def replace_html_entities(data: bytes) -> tuple[bytes, int, int]:
    """Replace HTML5 named entities by numeric references in one pass.

    Returns (bytes, replaced, unknown): ``unknown`` counts named references that are neither XML
    built-ins nor HTML5 names; when it is 0 the parsed tree cannot hold entity-reference nodes.
    The scan jumps from ``&`` to ``&`` (memchr speed); articles hold few of them.
    """
    parts: list[bytes] = []
    replaced = unknown = 0
    pos = 0
    i = data.find(b"&")
    while i != -1:
        m = _ENTITY_REF.match(data, i)
        if m:
            ref = HTML_ENTITY_REFS.get(m.group(1))
            if ref is not None:
                parts += (data[pos:i], ref)
                pos = m.end()
                replaced += 1
            elif m.group(1) not in _XML_BUILTIN_BYTES:
                unknown += 1
        i = data.find(b"&", i + 1)
    if replaced:
        parts.append(data[pos:])
        data = b"".join(parts)
    return data, replaced, unknown


# --------------------------------------------------------------------------------------------
# parsing


def xml_parser() -> etree.XMLParser:
    """The one XML parser configuration used for articles (no entities, no DTD, no network)."""
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=False,
        remove_blank_text=False,
    )


def _html_parser(data: bytes) -> etree.HTMLParser:
    m = _META_CHARSET.search(data[:_SNIFF])
    encoding = m.group(1).decode("ascii") if m else "utf-8"
    return etree.HTMLParser(no_network=True, huge_tree=False, encoding=encoding)


def _at_end(data: bytes, line: int, column: int) -> bool:
    """Whether a libxml2 error position lies at the end of the input (truncation, not a typo)."""
    stripped = data.rstrip()
    last_line = stripped.count(b"\n") + 1
    tail = stripped[stripped.rfind(b"\n") + 1 :]
    return line >= last_line and column >= len(tail.decode("utf-8", "replace"))


def classify_errors(errors: Sequence[Any], data: bytes) -> tuple[str, str]:
    """Map libxml2 errors (``parser.error_log`` entries) to a skip reason and a detail line."""
    if not errors:
        return "malformed", "parser returned no document"
    first = errors[0]
    detail = f"line {first.line}, column {first.column}: {first.message.strip()}"
    types = {e.type_name for e in errors}
    messages = " ".join(e.message for e in errors)
    if "ERR_RESOURCE_LIMIT" in types:
        if "depth" in messages:
            return "too_deep", detail
        if "amplification" in messages or "entity" in messages.lower():
            return "entity_expansion", detail
        return "too_large", detail
    if types & {"ERR_INVALID_ENCODING", "ERR_UNSUPPORTED_ENCODING", "ERR_UNKNOWN_ENCODING"}:
        return "bad_encoding", detail
    if "ERR_DOCUMENT_EMPTY" in types:
        return "malformed", detail  # empty/whitespace inputs were caught earlier: text, not XML
    if "ERR_INVALID_CHAR" in types and "0x0 " in messages:
        return "binary", detail
    if "ERR_TAG_NOT_FINISHED" in types or _at_end(data, first.line, first.column):
        return "truncated", detail
    return "malformed", detail


def parse_document(
    data: bytes, *, max_depth: int = config.default("extract.max_depth"), allow_html: bool = False
) -> tuple[etree._Element, str]:
    """Parse article bytes into a root element; return (root, "xml" | "html") or raise SkipFile."""
    parser = xml_parser()
    try:
        root = etree.fromstring(data, parser)
        kind = "xml"
    except etree.XMLSyntaxError:
        reason, detail = classify_errors(list(parser.error_log), data)
        if not (allow_html and reason in ("truncated", "malformed")):
            raise SkipFile(reason, detail) from None
        try:
            hparser = _html_parser(data)
            root = etree.fromstring(data, hparser)
        except (etree.XMLSyntaxError, LookupError, ValueError) as exc:
            raise SkipFile(
                "bad_encoding" if isinstance(exc, LookupError) else "malformed", str(exc)
            ) from None
        if root is None:
            raise SkipFile("malformed", "HTML parser found no document") from None
        limited = [e for e in hparser.error_log if e.type_name == "ERR_RESOURCE_LIMIT"]
        if limited:
            raise SkipFile(*classify_errors(limited, data)) from None
        kind = "html"
    if root is None:
        raise SkipFile("malformed", "no root element")
    if max_depth < 256 and _deeper_than(max_depth)(root):
        raise SkipFile("too_deep", f"element nesting deeper than {max_depth}")
    return root, kind


@lru_cache(maxsize=8)
def _deeper_than(depth: int) -> etree.XPath:
    """XPath that is true when an element exists at nesting level depth + 1 (root = level 1).

    A chain of child steps is evaluated level by level inside libxml2: one pass, no recursion.
    """
    return etree.XPath("boolean(/*" + "/*" * depth + ")")
