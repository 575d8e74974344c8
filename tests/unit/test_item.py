"""The input record: names, aliases, mapping, ids and per-field checks."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from localjudge.data.item import ALIASES, FIELDS, Item, make_item
from localjudge.errors import InvalidItemError


def test_fields_and_aliases():
    assert FIELDS == ("user_input", "retrieved_contexts", "reference", "response")
    assert dict(ALIASES) == {
        "input": "user_input",
        "output": "response",
        "context": "retrieved_contexts",
    }


def test_ragas_names_are_kept():
    rec = {
        "id": "x1",
        "user_input": "q",
        "retrieved_contexts": ["a", "b"],
        "reference": "r",
        "response": "s",
        "extra": "ignored",
    }
    item = make_item(rec, index=4)
    assert item == Item(
        id="x1",
        index=4,
        values={
            "user_input": "q",
            "retrieved_contexts": ["a", "b"],
            "reference": "r",
            "response": "s",
        },
    )


def test_mastra_aliases():
    item = make_item({"input": "q", "context": ["a"], "output": "s"}, index=0)
    assert dict(item.values) == {"user_input": "q", "retrieved_contexts": ["a"], "response": "s"}


def test_mapping_renames_fields_and_id():
    rec = {"qid": "Q-9", "question": "q", "docs": ["a"], "gold": "r", "answer": "s", "id": "no"}
    mapping = {
        "id": "qid",
        "user_input": "question",
        "retrieved_contexts": "docs",
        "reference": "gold",
        "response": "answer",
    }
    item = make_item(rec, index=2, mapping=mapping)
    assert item.id == "Q-9"
    assert dict(item.values) == {
        "user_input": "q",
        "retrieved_contexts": ["a"],
        "reference": "r",
        "response": "s",
    }


def test_mapped_field_ignores_the_unmapped_ragas_name():
    item = make_item(
        {"question": "mapped", "user_input": "other"}, index=0, mapping={"user_input": "question"}
    )
    assert item.values["user_input"] == "mapped"


def test_mapping_with_an_alias_present_is_a_conflict():
    with pytest.raises(InvalidItemError) as info:
        make_item({"question": "a", "input": "b"}, index=0, mapping={"user_input": "question"})
    assert info.value.field == "user_input"
    assert "'question' and 'input'" in info.value.message


@pytest.mark.parametrize(
    ("record", "field", "names"),
    [
        ({"input": "a", "user_input": "b"}, "user_input", "'user_input' and 'input'"),
        (
            {"context": ["a"], "retrieved_contexts": ["b"]},
            "retrieved_contexts",
            "'retrieved_contexts' and 'context'",
        ),
        ({"output": "a", "response": "b"}, "response", "'response' and 'output'"),
    ],
)
def test_alias_and_ragas_name_together_conflict(record, field, names):
    with pytest.raises(InvalidItemError) as info:
        make_item(dict(record, id="z"), index=3)
    err = info.value
    assert err.field == field
    assert err.item_id == "z"
    assert err.message == f"item z: fields {names} both give '{field}'; keep one"


def test_a_null_alias_is_no_conflict():
    item = make_item({"input": None, "user_input": "b"}, index=0)
    assert item.values["user_input"] == "b"


@pytest.mark.parametrize("record", [["a"], "text", 3, None, ("t",)])
def test_a_record_must_be_an_object(record):
    with pytest.raises(InvalidItemError) as info:
        make_item(record, index=5)
    err = info.value
    assert err.item_id == "#5"
    assert err.field is None
    got = "null" if record is None else type(record).__name__
    assert err.message == f"item #5: a record must be a JSON object, got {got}"


def test_a_pydantic_model_is_a_record():
    class Row(BaseModel):
        id: str
        input: str
        context: list[str]

    item = make_item(Row(id="m", input="q", context=["c"]), index=0)
    assert item.id == "m"
    assert dict(item.values) == {"user_input": "q", "retrieved_contexts": ["c"]}


@pytest.mark.parametrize(
    ("raw_id", "expected"),
    [
        ("abc", "abc"),
        (17, "17"),
        (0, "0"),
        ("", "#6"),
        (None, "#6"),
        (True, "#6"),
        (1.5, "#6"),
        (["x"], "#6"),
    ],
)
def test_id_or_its_index_fallback(raw_id, expected):
    assert make_item({"id": raw_id, "user_input": "q"}, index=6).id == expected


def test_no_id_falls_back_to_the_index():
    item = make_item({"user_input": "q"}, index=11)
    assert (item.id, item.index) == ("#11", 11)


# ---------------------------------------------------------------- field checks


def item(**values):
    return make_item({"id": "it", **values}, index=0)


def check(exc_info, field, message):
    err = exc_info.value
    assert err.field == field
    assert err.item_id == "it"
    assert err.kind == "invalid_item"
    assert err.message == f"item it: {message}"


def test_text_returns_the_value():
    assert item(user_input="  q  ").text("user_input") == "  q  "


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "required field 'reference' is missing"),
        ("", "field 'reference' is empty"),
        (" \t\n", "field 'reference' is empty"),
        (3, "field 'reference' must be a string, got int"),
        (["a"], "field 'reference' must be a string, got list"),
        ({"a": 1}, "field 'reference' must be a string, got dict"),
        (False, "field 'reference' must be a string, got bool"),
    ],
)
def test_text_errors_name_the_field(value, message):
    it = item(reference=value) if value is not None else item()
    with pytest.raises(InvalidItemError) as info:
        it.text("reference")
    check(info, "reference", message)


@pytest.mark.parametrize(
    ("value", "expected"), [(None, None), ("", None), ("  ", None), ("ans", "ans")]
)
def test_optional_text(value, expected):
    assert item(response=value).optional_text("response") == expected


@pytest.mark.parametrize(("value", "got"), [(5, "int"), (["a"], "list")])
def test_optional_text_wrong_type(value, got):
    with pytest.raises(InvalidItemError) as info:
        item(response=value).optional_text("response")
    check(info, "response", f"field 'response' must be a string, got {got}")


def test_contexts_returns_a_list_in_order():
    assert item(retrieved_contexts=("b", "a")).contexts() == ["b", "a"]
    assert item(context=["x", "y", "z"]).contexts() == ["x", "y", "z"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "required field 'retrieved_contexts' is missing"),
        ([], "field 'retrieved_contexts' is empty"),
        ("one string", "field 'retrieved_contexts' must be a list of strings, got str"),
        ({"0": "a"}, "field 'retrieved_contexts' must be a list of strings, got dict"),
        (7, "field 'retrieved_contexts' must be a list of strings, got int"),
        (["a", None], "field 'retrieved_contexts[1]' must be a string, got null"),
        (["a", "b", ["c"]], "field 'retrieved_contexts[2]' must be a string, got list"),
    ],
)
def test_contexts_errors_name_the_field(value, message):
    it = item(retrieved_contexts=value) if value is not None else item()
    with pytest.raises(InvalidItemError) as info:
        it.contexts()
    check(info, "retrieved_contexts", message)


def test_contexts_allow_empty():
    assert item(retrieved_contexts=[]).contexts(allow_empty=True) == []
    assert item().contexts(allow_empty=True) == []
    with pytest.raises(InvalidItemError):
        item(retrieved_contexts="s").contexts(allow_empty=True)


def test_has():
    it = item(user_input="q", reference="", retrieved_contexts=[])
    assert it.has("user_input")
    assert not it.has("reference")
    assert not it.has("retrieved_contexts")
    assert not it.has("response")
