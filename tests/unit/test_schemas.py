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
from localjudge.metrics.asks import REASON_CHARS, reason_schema
from localjudge.metrics.instructions import GRADE, MAX_MISSING, RELEVANT, SUPPORTED, USED
from localjudge.metrics.relevance import MISSING_CHARS, missing_schema

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

# one decision per call: each schema is one key; a reason and the missing list are calls of
# their own


@pytest.mark.parametrize(
    ("schema", "largest"),
    [
        (SUPPORTED.schema(), {"supported": "yes"}),
        (RELEVANT.schema(), {"relevant": "yes"}),
        (USED.schema(), {"repeats": "yes"}),
        (GRADE.schema(), {"grade": 3}),
        (reason_schema(), {"reason": ASCII_MAX * REASON_CHARS}),
        (missing_schema(), {"missing": [WIDE * MISSING_CHARS] * MAX_MISSING}),
    ],
    ids=["supported", "relevant", "used", "grade", "reason", "missing"],
)
def test_worst_case_is_the_size_of_the_largest_instance(schema, largest):
    size = checked_size(schema, largest)
    assert worst_case_bytes(schema) == size
    assert worst_case_tokens(schema) == size + 1


def test_decision_worst_cases_by_hand():
    # the judge writes one short value per call: no index, no reason, no statement text
    assert worst_case_bytes(SUPPORTED.schema()) == len('{"supported":"yes"}') == 19
    assert worst_case_bytes(RELEVANT.schema()) == len('{"relevant":"yes"}')
    assert worst_case_bytes(GRADE.schema()) == len('{"grade":0}') == 11


def test_reason_worst_case_by_hand():
    assert worst_case_bytes(reason_schema()) == len('{"reason":""}') + REASON_CHARS == 133


def test_missing_worst_case_by_hand():
    missing = len("[]") + 3 * (2 + 4 * MISSING_CHARS) + 2  # two commas
    assert worst_case_bytes(missing_schema()) == len('{"missing":}') + missing


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
    reason=st.text(_ASCII, min_size=1, max_size=REASON_CHARS),
    missing=st.lists(
        st.text(_ANY, min_size=1, max_size=MISSING_CHARS), min_size=0, max_size=MAX_MISSING
    ),
)
def test_every_conforming_reason_and_missing_output_fits_the_bound(reason, missing):
    assert checked_size(reason_schema(), {"reason": reason}) <= worst_case_bytes(reason_schema())
    schema = missing_schema()
    assert checked_size(schema, {"missing": missing}) <= worst_case_bytes(schema)


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
    "schema", [SUPPORTED.schema(), GRADE.schema(), reason_schema(), missing_schema(), Composite]
)
def test_json_schema_is_compact_and_closed(schema):
    js = json_schema(schema)
    assert js["x-guidance"] == {"whitespace_flexible": False}
    assert GUIDANCE == {"whitespace_flexible": False}
    assert js["additionalProperties"] is False
    objects = [js, *js.get("$defs", {}).values()]
    assert len(objects) >= (2 if schema is Composite else 1)
    for node in objects:
        assert node["type"] == "object"
        assert node["additionalProperties"] is False
        assert set(node["required"]) == set(node["properties"])
    # the grammar extension is ours: pydantic's own schema is left untouched
    assert "x-guidance" not in schema.model_json_schema()
    js["x-guidance"]["whitespace_flexible"] = True
    assert json_schema(schema)["x-guidance"] == {"whitespace_flexible": False}


@pytest.mark.parametrize(
    ("decision", "enum"),
    [
        (SUPPORTED, ["yes", "no"]),
        (RELEVANT, ["yes", "no"]),
        (USED, ["yes", "no"]),
        (GRADE, [0, 1, 2, 3]),
    ],
)
def test_a_decision_schema_has_its_one_key_and_its_values(decision, enum):
    js = json_schema(decision.schema())
    assert list(js["properties"]) == [decision.key] == js["required"]
    assert js["properties"][decision.key]["enum"] == enum
    assert "$defs" not in js
    assert decision.schema() is decision.schema()  # one model per kind, reused


def test_strings_exclude_what_json_would_escape():
    js = json_schema(reason_schema())
    assert set(js["properties"]) == {"reason"}
    assert js["properties"]["reason"]["maxLength"] == REASON_CHARS
    assert js["properties"]["reason"]["pattern"].startswith("^[ !#-")
    item = json_schema(missing_schema())["properties"]["missing"]["items"]
    assert item["maxLength"] == MISSING_CHARS
    assert item["pattern"].startswith('^[^"')


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
    ("schema", "raw"),
    [
        (RELEVANT.schema(), '{"relevant":true}'),
        (RELEVANT.schema(), '{"relevant":"Yes"}'),
        (RELEVANT.schema(), '{"relevant":1}'),
        (GRADE.schema(), '{"grade":"2"}'),
        (GRADE.schema(), '{"grade":2.0}'),
        (GRADE.schema(), '{"grade":4}'),
    ],
)
def test_parse_output_does_not_coerce(schema, raw):
    with pytest.raises(ConstraintError):
        parse_output(schema, raw)


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
