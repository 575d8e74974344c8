"""Console tables: plain text off a terminal, colour on one unless NO_COLOR."""

from __future__ import annotations

import re

import pytest

from localjudge.console import Column, TextTable, number, render

COLOUR = re.compile(r"\x1b\[[0-9;]*(3[0-7]|9[0-7]|38;[0-9;]+)m")
TABLE = TextTable(
    [Column("metric"), Column("mean", numeric=True)],
    [["recall", "0.500"], ["relevance", "1.000"]],
    styles=[["", "green"], ["", "red"]],
)


def test_off_a_terminal_the_table_is_plain_ascii(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    text = render([TABLE])
    assert text.isascii()
    assert "\x1b" not in text
    assert text.splitlines() == [
        "metric       mean",
        "-----------------",
        "recall      0.500",
        "relevance   1.000",
    ]


def test_on_a_terminal_cells_are_coloured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    text = render([TABLE], terminal=True)
    assert COLOUR.search(text), repr(text)
    assert "0.500" in text


def test_no_color_is_respected_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    text = render([TABLE], terminal=True)
    assert not COLOUR.search(text), repr(text)
    assert "relevance" in text


def test_tables_are_separated_by_a_blank_line() -> None:
    text = render([TABLE, TextTable([Column("x")], [["y"]], title="second")])
    assert "\n\nsecond\nx\n-\ny" in text


@pytest.mark.parametrize(
    ("value", "kwargs", "text"),
    [
        (0.5, {}, "0.500"),
        (2, {}, "2.000"),
        (0.12345, {"digits": 2}, "0.12"),
        (1536.4, {"digits": 0}, "1536"),
        (0.25, {"sign": True}, "+0.250"),
        (-0.25, {"sign": True}, "-0.250"),
        (0.0, {"sign": True}, "+0.000"),
        (None, {}, "-"),
        (None, {"missing": "–"}, "–"),
        (float("nan"), {}, "-"),
        (float("inf"), {}, "-"),
        (True, {}, "-"),
        ("0.5", {}, "-"),
    ],
)
def test_the_one_number_formatter(value: object, kwargs: dict[str, object], text: str) -> None:
    assert number(value, **kwargs) == text  # type: ignore[arg-type]
