"""The pure pieces of the call log: ages, export formats, model matching."""

from __future__ import annotations

from datetime import timedelta

import pytest

from localjudge.errors import UsageError
from localjudge.judge.cache.calllog import export_format, parse_age
from localjudge.judge.cache.rows import model_params


@pytest.mark.parametrize(
    ("text", "age"),
    [("30d", timedelta(days=30)), ("12h", timedelta(hours=12)), ("90m", timedelta(minutes=90)),
     ("45s", timedelta(seconds=45)), ("2w", timedelta(weeks=2)), (" 1.5d ", timedelta(hours=36)),
     ("0s", timedelta(0))],
)  # fmt: skip
def test_ages(text, age):
    assert parse_age(text) == age


@pytest.mark.parametrize("text", ["", "30", "d", "30 days", "-1d", "3y", "1e3s"])
def test_what_is_not_an_age(text):
    with pytest.raises(UsageError, match="not an age") as info:
        parse_age(text)
    assert "30d" in info.value.hint


@pytest.mark.parametrize(
    ("dest", "fmt", "found"),
    [("a.jsonl", None, "jsonl"), ("a.NDJSON", None, "jsonl"), ("x/a.csv", None, "csv"),
     ("a.txt", "csv", "csv"), ("a.csv", "jsonl", "jsonl"), ("-", "jsonl", "jsonl")],
)  # fmt: skip
def test_export_format(dest, fmt, found):
    assert export_format(dest, fmt) == found


@pytest.mark.parametrize(("dest", "fmt"), [("a.txt", None), ("a", None), ("a.csv", "xml")])
def test_export_format_refused(dest, fmt):
    with pytest.raises(UsageError):
        export_format(dest, fmt)


@pytest.mark.parametrize(
    ("given", "as_sha"),
    [("smollm2-135m", False), ("ABCDEF12", True), ("abcdef1", False), ("a" * 64, True),
     ("deadbeefz", False)],
)  # fmt: skip
def test_a_model_is_an_alias_or_a_sha_prefix(given, as_sha):
    alias, is_sha, prefix = model_params(given)
    assert alias == given
    assert is_sha is as_sha
    assert prefix == given.lower()
