"""The statements of a reference answer, for context recall: verbatim spans, found without a model.

The judge never writes a statement. The reference is cut at sentence boundaries (and at
semicolons, which join independent clauses in every script that uses them), and the judge gives
one verdict per statement, so every statement is a contiguous span of the reference, in order,
without overlap or repetition, by construction.

Boundaries, for the scripts localjudge's examples cover (Latin, Cyrillic, Greek, CJK, Thai, Arabic,
Devanagari):

- after ``。！？｡．`` (CJK full stops and marks) and ``।`` / ``؟``, unless a closing quote
  or bracket follows and the sentence goes on (``「はい。」と言った。`` is one sentence);
- after ``.``, ``!``, ``?`` or ``…`` followed by whitespace, except a ``.`` that ends a known
  abbreviation (``Dr.``, ``e.g.``, ``approx.``), an initial (``J. K.``, ``U.S.``) or an ordinal
  day or century before its month or noun (``am 9. November``, ``15. března``, ``20. Jahrhundert``);
- closing quotes and brackets after a mark stay with its sentence;
- at every line break and at ``;`` / ``；``.

Pieces with no letter or digit (a lone dash) are dropped; a piece that repeats an earlier one
(same text up to whitespace and case) is kept once. A reference of more than
:data:`MAX_STATEMENTS` pieces has its shortest neighbouring pair joined (with the text between
them, so it stays a span) until it fits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the most statements one recall call judges (the schema's bound)
MAX_STATEMENTS = 16

_CLOSERS = "\"'”’»」』）)]】"
#: marks that end a sentence whatever follows them
_HARD = "。！？｡．।؟"
#: marks that end a sentence when whitespace follows
_SOFT = ".!?…"
#: words that a "." abbreviates rather than ends a sentence after (a word list reads best as text)
_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr sra jr st mt vs gen col lt sgt capt gov sen rep rev hon inc ltd co
    corp bros approx ca cf eg ie al jan feb mar apr jun jul aug sep sept oct nov dec mme mlle bzw
    usw zb str ed eds est dept univ""".split()  # noqa: SIM905
)
#: abbreviations that stand before a number (``No. 5``, ``vol. 2``)
_NUMBERED = frozenset("no nr vol pp fig figs art sec ch".split())  # noqa: SIM905
#: what follows a dotted ordinal (German, Nordic, Czech, Slovak, Croatian, Finnish dates): month
#: stems, so inflected forms match, and the century nouns
_AFTER_ORDINAL = re.compile(
    r"(?:jan|jän|feb|mär|mar|apr|mai|maj|jun|jul|aug|sep|okt|oct|nov|dez|dec|des"
    r"|led|úno|bře|dub|kvě|čer|srp|zář|říj|lis|pro|sij|vel|ožu|tra|svi|lip|kol|ruj|stu"
    r"|[a-zäöå]+kuu|jahrhundert|jh\b)",
    re.IGNORECASE,
)
_C = re.escape(_CLOSERS)
_BOUNDARY = re.compile(
    # a mark inside a quotation (a closer, then more of the sentence) ends nothing
    rf"(?P<hard>[{_HARD}]+(?![{_C}])|[{_HARD}]+[{_C}]+(?=\s|$))"
    rf"|(?P<soft>[{re.escape(_SOFT)}]+[{_C}]*)(?=\s|$)"
    r"|(?P<clause>[;；])"
    r"|(?P<line>\n)"
)
_WORD_BEFORE = re.compile(r"([\w.]+)$")
_INITIALS = re.compile(r"^(?:[^\W\d_]\.)*[^\W\d_]$")


@dataclass(frozen=True)
class Span:
    """A statement: ``text[start:end]`` of the reference."""

    start: int
    end: int


def split_statements(text: str, max_statements: int = MAX_STATEMENTS) -> list[str]:
    """The reference's statements, verbatim and in order (see the module's rules)."""
    return [text[s.start : s.end] for s in statement_spans(text, max_statements)]


def statement_spans(text: str, max_statements: int = MAX_STATEMENTS) -> list[Span]:
    """Where :func:`split_statements`' statements lie in ``text``."""
    if max_statements < 1:
        raise ValueError("max_statements must be at least 1")
    spans: list[Span] = []
    seen: set[str] = set()
    for start, end in _pieces(text):
        span = _strip(text, start, end)
        if span is None:
            continue
        key = " ".join(text[span.start : span.end].split()).casefold()
        if key not in seen:
            seen.add(key)
            spans.append(span)
    while len(spans) > max_statements:
        i = min(range(len(spans) - 1), key=lambda k: spans[k + 1].end - spans[k].start)
        spans[i : i + 2] = [Span(spans[i].start, spans[i + 1].end)]
    return spans


def _pieces(text: str) -> list[tuple[int, int]]:
    out, start = [], 0
    for m in _BOUNDARY.finditer(text):
        if m.lastgroup == "soft" and not _ends_sentence(text, m):
            continue
        out.append((start, m.end() if m.lastgroup in ("hard", "soft") else m.start()))
        start = m.end()
    out.append((start, len(text)))
    return out


def _ends_sentence(text: str, m: re.Match[str]) -> bool:
    if not m.group("soft").startswith("."):
        return True
    before = _WORD_BEFORE.search(text, 0, m.start())
    if before is not None:
        prior = before.group(1)
        word = prior.rstrip(".").casefold().replace(".", "")
        if word in _ABBREVIATIONS:
            return False
        if word in _NUMBERED and text[m.end() :].lstrip()[:1].isdigit():
            return False
        if _INITIALS.match(prior) and prior != "I":
            return False
        if prior.isdigit() and len(prior) <= 2 and _AFTER_ORDINAL.match(text[m.end() :].lstrip()):
            return False
    return True


def _strip(text: str, start: int, end: int) -> Span | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if not any(c.isalnum() for c in text[start:end]):
        return None
    return Span(start, end)
