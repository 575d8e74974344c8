"""budgeted()'s restrictions for schemas we did not write: least list lengths and named
choices in the grammar's JSON schema, and the same restrictions checked on every output
(parse_output), so a fake judge cannot return what the grammar would never produce."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from localjudge.errors import ConstraintError
from localjudge.judge.schemas import budgeted, json_schema, parse_output


class Attribution(BaseModel):  # ragas' ContextRecallClassification
    statement: str
    reason: str
    attributed: int


class Classifications(BaseModel):
    classifications: list[Attribution]


class Labelled(BaseModel):
    label: str
    score: int = 0


def item_schema(js):
    return js["$defs"]["Attribution"]


def test_min_items_and_choices_reach_the_grammar_schema():
    js = json_schema(
        budgeted(Classifications, max_items=4, min_items=1, choices={"attributed": (0, 1)})
    )
    assert js["properties"]["classifications"]["minItems"] == 1
    assert js["properties"]["classifications"]["maxItems"] == 4
    assert "minLength" not in item_schema(js)["properties"]["statement"]
    assert item_schema(js)["properties"]["attributed"] == {"title": "Attributed", "enum": [0, 1]}
    strings = item_schema(json_schema(budgeted(Classifications, min_chars=1)))["properties"]
    assert strings["reason"]["minLength"] == strings["statement"]["minLength"] == 1
    plain = json_schema(budgeted(Classifications))
    assert "minItems" not in json.dumps(plain)
    assert "enum" not in json.dumps(plain)


def test_a_choice_applies_only_where_the_type_admits_it():
    js = json_schema(budgeted(Labelled, choices={"label": (0, 1), "score": ("a", "b")}))
    assert "enum" not in json.dumps(js)  # an int choice for a str field, and the reverse
    js = json_schema(budgeted(Labelled, choices={"label": ("yes", "no")}))
    assert js["properties"]["label"]["enum"] == ["yes", "no"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_items": -1}, "min_items"),
        ({"min_items": 3, "max_items": 2}, "above max_items"),
        ({"min_chars": 9, "max_chars": 2}, "above max_chars"),
        ({"min_chars": -1}, "min_chars"),
        ({"choices": {"attributed": ()}}, "non-empty"),
        ({"choices": {"attributed": (0, "1")}}, "ints or of strings"),
        ({"choices": {"attributed": (0.5,)}}, "ints or of strings"),
        ({"max_chars": 0}, "max_chars"),
    ],
)
def test_bad_restrictions_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        budgeted(Classifications, **kwargs)


RESTRICTED = budgeted(
    Classifications,
    max_items=2,
    max_chars=5,
    min_items=1,
    min_chars=1,
    choices={"attributed": (0, 1)},
)


def raw(*entries):
    return json.dumps(
        {
            "classifications": [
                dict(zip(("statement", "reason", "attributed"), e, strict=True)) for e in entries
            ]
        },
        separators=(",", ":"),
    )


def test_an_output_inside_the_restrictions_is_a_value():
    value = parse_output(RESTRICTED, raw(("ab", "cd", 1), ("ef", "g", 0)))
    assert [c.attributed for c in value.classifications] == [1, 0]


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        (raw(), "classifications", "0 items where 1 to 2"),
        (raw(*[("a", "b", 1)] * 3), "classifications", "3 items where 1 to 2"),
        (raw(("abcdef", "b", 1)), "classifications.0.statement", "6 characters where 1 to 5"),
        (raw(("a", "", 1)), "classifications.0.reason", "0 characters where 1 to 5"),
        (raw(("a", "b", 0), ("a", "b", 2)), "classifications.1.attributed", "2 is not one of"),
        (raw(("a", "b", 0))[:-1] + ',"more":1}', "<root>", "extra properties"),
    ],
)
def test_an_output_outside_them_is_a_constraint_error_naming_the_place(text, where, what):
    with pytest.raises(ConstraintError, match=f"at {where}: {what}"):
        parse_output(RESTRICTED, text)
