"""The reference's statements: verbatim spans, in order, never repeated, for every script."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from localjudge.metrics.statements import MAX_STATEMENTS, _pieces, split_statements, statement_spans


@pytest.mark.parametrize(
    ("text", "statements"),
    [
        # SPEC's worked example: two sentences
        ("埃菲尔铁塔位于巴黎。他的名字叫汤姆。", ["埃菲尔铁塔位于巴黎。", "他的名字叫汤姆。"]),
        (
            "Paris is the capital of France. It has two million inhabitants.",
            ["Paris is the capital of France.", "It has two million inhabitants."],
        ),
        (
            "富士山は日本一高い山です。標高は3776メートルです。",
            ["富士山は日本一高い山です。", "標高は3776メートルです。"],
        ),
        # a quotation inside a sentence does not end it
        ("「はい。」と言った。次に行く。", ["「はい。」と言った。", "次に行く。"]),
        ("他说：“好。”然后走了。", ["他说：“好。”然后走了。"]),
        ('He said "no." Then he left.', ['He said "no."', "Then he left."]),
        ("Il a dit « oui ». Puis il est parti.", ["Il a dit « oui ».", "Puis il est parti."]),
        # abbreviations, initials and decimals are not boundaries
        (
            "Dr. Smith met J. K. Rowling in the U.S. in 2001. It rained.",
            ["Dr. Smith met J. K. Rowling in the U.S. in 2001.", "It rained."],
        ),
        (
            "It costs approx. 3.5 euros, e.g. in Rome. Fine.",
            ["It costs approx. 3.5 euros, e.g. in Rome.", "Fine."],
        ),
        ("So am I. Then we left!", ["So am I.", "Then we left!"]),
        # dotted ordinals before a month or century; a number that ends a sentence still ends it
        (
            "Die Berliner Mauer fiel am 9. November 1989.",
            ["Die Berliner Mauer fiel am 9. November 1989."],
        ),
        ("Im 20. Jahrhundert. Danach.", ["Im 20. Jahrhundert.", "Danach."]),
        ("Narodil se 15. března 1990.", ["Narodil se 15. března 1990."]),
        ("She was 25. Then she left.", ["She was 25.", "Then she left."]),
        # lowercase starts, question and exclamation marks
        ("yes fact 1. unknown 1.", ["yes fact 1.", "unknown 1."]),
        ("¿Dónde está? Está en Madrid!", ["¿Dónde está?", "Está en Madrid!"]),
        ("Где Москва? В России.", ["Где Москва?", "В России."]),
        ("हिमालय ऊँचा है। गंगा लंबी है।", ["हिमालय ऊँचा है।", "गंगा लंबी है।"]),
        # semicolons and line breaks separate clauses
        ("It is old; it is big", ["It is old", "it is big"]),
        ("数据；更多数据", ["数据", "更多数据"]),
        ("- first point\n- second point", ["- first point", "- second point"]),
        # no sentence mark at all
        ("The sky is blue", ["The sky is blue"]),
        # repeats are judged once; pieces without a letter or digit are no statement
        ("It is old. It is old.  it IS old.", ["It is old."]),
        ("Fine. -- . Good.", ["Fine.", "Good."]),
        ("...", []),
        ("", []),
    ],
)
def test_split_statements(text, statements):
    assert split_statements(text) == statements


def test_a_long_reference_is_joined_into_spans_that_cover_it():
    sentences = [f"Sentence {i} is here." for i in range(40)]
    text = " ".join(sentences)
    got = split_statements(text, max_statements=MAX_STATEMENTS)
    assert len(got) == MAX_STATEMENTS
    assert " ".join(got) == text
    # joined evenly by length: no statement holds more than twice the sentences of another
    counts = [g.count("Sentence") for g in got]
    assert max(counts) <= 2 * min(counts)


def test_max_statements_must_be_positive():
    with pytest.raises(ValueError, match="max_statements"):
        split_statements("a", max_statements=0)


_ALPHABET = st.sampled_from(
    list("abc XYZ 123") + list(".!?;。！？…\n\"'」』）“”«»") + ["Dr.", "e.g.", " U.S. ", "数", "は"]
)


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(_ALPHABET, max_size=60),
    limit=st.integers(min_value=1, max_value=20),
)
def test_statements_are_ordered_disjoint_verbatim_spans(parts, limit):
    text = "".join(parts)
    spans = statement_spans(text, max_statements=limit)
    statements = split_statements(text, max_statements=limit)
    assert statements == [text[s.start : s.end] for s in spans]
    assert len(statements) <= limit
    for a, b in itertools.pairwise(spans):
        assert a.end <= b.start  # in order, no overlap
    for statement in statements:
        assert statement == statement.strip()
        assert any(c.isalnum() for c in statement)
        assert statement in text
    if limit >= len(text):  # nothing joined: no two statements are the same text
        normal = [" ".join(s.split()).casefold() for s in statements]
        assert len(set(normal)) == len(normal)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_ALPHABET, max_size=60), limit=st.integers(min_value=1, max_value=20))
@example(parts=["a", ";", "a", "。", "a"], limit=1)  # the repeated "a" is inside a joined one
def test_every_letter_and_digit_is_judged(parts, limit):
    """Each letter or digit lies in a statement, or in a piece that repeats a piece that does
    (a repeat is dropped before statements are joined up to the limit, so what it repeats may
    now be part of a longer statement)."""
    text = "".join(parts)
    spans = statement_spans(text, max_statements=limit)

    def inside(start: int, end: int) -> bool:
        piece = text[start:end]
        return any(s.start <= start and end <= s.end for s in spans) or any(
            s.start <= start + (len(piece) - len(piece.lstrip()))
            and s.end >= end - (len(piece) - len(piece.rstrip()))
            for s in spans
        )

    def key(start: int, end: int) -> str:
        return " ".join(text[start:end].split()).casefold()

    pieces = _pieces(text)
    judged = {key(a, b) for a, b in pieces if inside(a, b)}
    for start, end in pieces:
        if any(c.isalnum() for c in text[start:end]) and not inside(start, end):
            assert key(start, end) in judged
