"""Output schemas: exact worst-case sizes, unbounded schemas refused, strict parsing."""

from __future__ import annotations

import json
from typing import Annotated, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from localjudge.errors import ConstraintError
from localjudge.judge.schemas import (
    GUIDANCE,
    StrictModel,
    UnboundedSchemaError,
    bounded_list,
    json_schema,
    parse_output,
    text,
    worst_case_bytes,
    worst_case_tokens,
)
from localjudge.metrics.base import REASON_CHARS
from localjudge.metrics.position import position_schema
from localjudge.metrics.recall import MAX_STATEMENTS, recall_schema
from localjudge.metrics.relevance import MAX_MISSING, MISSING_CHARS, relevance_schema

WIDE = "\U0001f600"  # 4 bytes in UTF-8
ASCII_MAX = "~"  # 1 byte, allowed in ascii-only strings


def compact_size(value):
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def checked_size(schema, value):
    """The compact size of ``value`` after checking that it conforms to ``schema``."""
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    parse_output(schema, raw)
    return len(raw.encode("utf-8"))


# ---------------------------------------------------------------- worst case: the largest instance


def largest_recall(n):
    return {
        "statements": [
            {"index": i, "reason": ASCII_MAX * REASON_CHARS, "attributed": 1} for i in range(n)
        ]
    }


def largest_position(n):
    return {
        "verdicts": [
            {"index": i, "reason": ASCII_MAX * REASON_CHARS, "relevant": False} for i in range(n)
        ]
    }


def largest_relevance(n):
    return {
        "pieces": [
            {
                "index": i,
                "reason": ASCII_MAX * REASON_CHARS,
                "relevance": "medium",
                "used": False,
            }
            for i in range(n)
        ],
        "missing": [WIDE * MISSING_CHARS] * MAX_MISSING,
    }


@pytest.mark.parametrize(
    ("schema", "largest"),
    [
        (recall_schema(2), largest_recall(2)),
        (recall_schema(MAX_STATEMENTS), largest_recall(MAX_STATEMENTS)),
        (position_schema(3), largest_position(3)),
        (position_schema(1), largest_position(1)),
        (position_schema(12), largest_position(12)),  # two-digit indices
        (relevance_schema(2), largest_relevance(2)),
        (relevance_schema(11), largest_relevance(11)),
    ],
    ids=[
        "recall2",
        "recall16",
        "position3",
        "position1",
        "position12",
        "relevance2",
        "relevance11",
    ],
)
def test_worst_case_is_the_size_of_the_largest_instance(schema, largest):
    size = checked_size(schema, largest)
    assert worst_case_bytes(schema) == size
    assert worst_case_tokens(schema) == size + 1


def test_recall_worst_case_by_hand():
    # the judge writes no statement text: an index, a reason and 0/1 per statement
    verdict = len('{"index":0,"reason":"","attributed":1}') + REASON_CHARS
    expected = len('{"statements":[]}') + 2 * verdict + 1
    assert worst_case_bytes(recall_schema(2)) == expected == 334
    # 16 statements, six of them with two-digit indices, fit in far less than the 4,528
    # bytes of the 8 judge-written statements the schema used to allow
    assert worst_case_bytes(recall_schema(16)) == 16 * verdict + 6 + 15 + 17 == 2566


def test_position3_worst_case_by_hand():
    verdict = len('{"index":0,"reason":"","relevant":false}') + REASON_CHARS
    assert worst_case_bytes(position_schema(3)) == len('{"verdicts":[]}') + 3 * verdict + 2


def test_relevance2_worst_case_by_hand():
    piece = len('{"index":0,"reason":"","relevance":"medium","used":false}') + REASON_CHARS
    missing = len("[]") + 3 * (2 + 4 * MISSING_CHARS) + 2  # two commas
    expected = len('{"pieces":[],"missing":}') + 2 * piece + 1 + missing
    assert worst_case_bytes(relevance_schema(2)) == expected


class Inner(StrictModel):
    flag: bool
    n: Annotated[int, Field(ge=-100, le=5)]
    kind: Literal["a", "bbb"]


class Composite(StrictModel):
    name: text(3, ascii_only=True)  # type: ignore[valid-type]
    tags: bounded_list(text(2), min_items=0, max_items=2)  # type: ignore[valid-type]
    inner: Inner
    pair: tuple[Inner, Inner]


def test_worst_case_of_every_node_kind():
    inner = {"flag": False, "n": -100, "kind": "bbb"}
    largest = {"name": "~~~", "tags": [WIDE * 2, WIDE * 2], "inner": inner, "pair": [inner] * 2}
    assert worst_case_bytes(Composite) == checked_size(Composite, largest)
    smaller = {"name": "a", "tags": [], "inner": dict(inner, n=5), "pair": [inner, inner]}
    assert checked_size(Composite, smaller) < worst_case_bytes(Composite)


_ANY = st.characters(
    min_codepoint=0x20, blacklist_categories=("Cs",), blacklist_characters='"\\\x7f'
)
_ASCII = st.sampled_from([chr(c) for c in range(0x20, 0x7F) if chr(c) not in '"\\'])


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    n=st.integers(min_value=1, max_value=MAX_STATEMENTS),
)
def test_every_conforming_recall_output_fits_the_bound(data, n):
    statements = [
        {
            "index": i,
            "reason": data.draw(st.text(_ASCII, min_size=1, max_size=REASON_CHARS)),
            "attributed": data.draw(st.sampled_from([0, 1])),
        }
        for i in range(n)
    ]
    schema = recall_schema(n)
    assert checked_size(schema, {"statements": statements}) <= worst_case_bytes(schema)


# ---------------------------------------------------------------- unbounded schemas


class NoMaxString(StrictModel):
    label: str


class NoMaxList(StrictModel):
    items: list[text(5)]  # type: ignore[valid-type]


class ExtraAllowed(StrictModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    label: text(5)  # type: ignore[valid-type]


class DictField(StrictModel):
    scores: dict[str, Annotated[int, Field(ge=0, le=1)]]


class NoBoundsInt(StrictModel):
    n: int


class FloatField(StrictModel):
    x: Annotated[float, Field(ge=0, le=1)]


class NestedUnbounded(StrictModel):
    inner: NoMaxString


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        (NoMaxString, "NoMaxString.label"),
        (NoMaxList, "NoMaxList.items"),
        (ExtraAllowed, "ExtraAllowed"),
        (DictField, "DictField.scores"),
        (NoBoundsInt, "NoBoundsInt.n"),
        (FloatField, "FloatField.x"),
        (NestedUnbounded, "NestedUnbounded.inner.label"),
    ],
)
def test_unbounded_schemas_are_refused(schema, where):
    with pytest.raises(UnboundedSchemaError) as info:
        worst_case_bytes(schema)
    assert str(info.value).startswith(where)
    assert isinstance(info.value, ValueError)
    with pytest.raises(UnboundedSchemaError):
        worst_case_tokens(schema)


class PlainModel(BaseModel):
    """Not a StrictModel: pydantic's schema does not forbid extra properties, so the grammar
    allows any number of them."""

    label: text(10, ascii_only=True)  # type: ignore[valid-type]


def test_schema_that_allows_extra_properties_by_default_is_refused():
    with pytest.raises(UnboundedSchemaError):
        worst_case_bytes(PlainModel)


# ---------------------------------------------------------------- json_schema


@pytest.mark.parametrize(
    "schema", [recall_schema(2), position_schema(3), relevance_schema(2), Composite]
)
def test_json_schema_is_compact_and_closed(schema):
    js = json_schema(schema)
    assert js["x-guidance"] == {"whitespace_flexible": False}
    assert GUIDANCE == {"whitespace_flexible": False}
    assert js["additionalProperties"] is False
    objects = [js, *js.get("$defs", {}).values()]
    assert len(objects) >= 2
    for node in objects:
        assert node["type"] == "object"
        assert node["additionalProperties"] is False
        assert set(node["required"]) == set(node["properties"])
    # the grammar extension is ours: pydantic's own schema is left untouched
    assert "x-guidance" not in schema.model_json_schema()
    js["x-guidance"]["whitespace_flexible"] = True
    assert json_schema(schema)["x-guidance"] == {"whitespace_flexible": False}


def test_position_schema_fixes_the_count_and_the_indices():
    js = json_schema(position_schema(3))
    verdicts = js["properties"]["verdicts"]
    assert verdicts["minItems"] == verdicts["maxItems"] == 3
    consts = [
        js["$defs"][ref["$ref"].rsplit("/", 1)[-1]]["properties"]["index"]["const"]
        for ref in verdicts["prefixItems"]
    ]
    assert consts == [0, 1, 2]


def test_strings_exclude_what_json_would_escape():
    js = json_schema(recall_schema(1))
    statement = js["$defs"]["RecallVerdict0"]["properties"]
    assert set(statement) == {"index", "reason", "attributed"}  # no text of the judge's own
    assert statement["reason"]["maxLength"] == REASON_CHARS
    assert statement["reason"]["pattern"].startswith("^[ !#-")
    assert statement["attributed"]["enum"] == [0, 1]


# ---------------------------------------------------------------- parse_output


class Label(StrictModel):
    label: text(10, ascii_only=True)  # type: ignore[valid-type]
    note: text(5)  # type: ignore[valid-type]


def test_parse_output_returns_the_validated_value():
    value = parse_output(Label, '{"label":"ok","note":"数据"}')
    assert value == Label(label="ok", note="数据")


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        ('{"label":"ok","note":"x","extra":1}', "extra"),
        ('{"label":"ok"}', "note"),
        ('{"label":"ok","note":"x"} trailing', "<root>"),
        ('{"label":"ok","note":"x"}{}', "<root>"),
        ("Here you go: {}", "<root>"),
        ("", "<root>"),
        ('{"label":"say \\"hi\\"","note":"x"}', "label"),
        ('{"label":"a\\\\b","note":"x"}', "label"),
        ('{"label":"ok","note":"a\\"b"}', "note"),
        ('{"label":"ok","note":"a\\\\b"}', "note"),
        ('{"label":"ok","note":"a\\nb"}', "note"),
        ('{"label":"ok","note":"a\\u0000"}', "note"),
        ('{"label":"café","note":"x"}', "label"),
        ('{"label":"","note":"x"}', "label"),
        ('{"label":"' + "a" * 11 + '","note":"x"}', "label"),
        ('{"label":"ok","note":"' + WIDE * 6 + '"}', "note"),
        ('{"label":1,"note":"x"}', "label"),
    ],
)
def test_parse_output_rejects(raw, where):
    with pytest.raises(ConstraintError) as info:
        parse_output(Label, raw)
    assert info.value.message.startswith(f"judge output does not match schema Label at {where}:")
    assert "constrained decoding was not applied" in info.value.hint


@pytest.mark.parametrize(
    "raw",
    ['{ "label": "ok", "note": "x" }', '{"label":"ok",\n"note":"x"}', ' {"label":"ok","note":"x"}'],
)
def test_parse_output_rejects_non_compact_json(raw):
    with pytest.raises(ConstraintError):
        parse_output(Label, raw)


@pytest.mark.parametrize(
    "raw",
    [
        '{"verdicts":[{"index":0,"reason":"r","relevant":"yes"}]}',
        '{"verdicts":[{"index":0,"reason":"r","relevant":1.0}]}',
    ],
)
def test_parse_output_does_not_coerce(raw):
    with pytest.raises(ConstraintError):
        parse_output(position_schema(1), raw)


# ---------------------------------------------------------------- field helpers


def test_text_bounds_and_min_chars():
    class T(StrictModel):
        s: text(3, min_chars=2)  # type: ignore[valid-type]

    assert parse_output(T, '{"s":"ab"}') == T(s="ab")
    assert parse_output(T, '{"s":"' + WIDE * 3 + '"}').s == WIDE * 3
    for bad in ("a", "abcd"):
        with pytest.raises(ConstraintError):
            parse_output(T, json.dumps({"s": bad}))
    assert worst_case_bytes(T) == len('{"s":""}') + 4 * 3


def test_bounded_list_bounds():
    class L(StrictModel):
        xs: bounded_list(Literal["ab", "c"], min_items=1, max_items=2)  # type: ignore[valid-type]

    assert parse_output(L, '{"xs":["c"]}') == L(xs=["c"])
    for bad in ('{"xs":[]}', '{"xs":["c","c","c"]}'):
        with pytest.raises(ConstraintError):
            parse_output(L, bad)
    assert worst_case_bytes(L) == compact_size({"xs": ["ab", "ab"]})
