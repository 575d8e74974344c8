"""The typed run options: frozen, checked as they are built (the message names the field), and
built from keyword arguments by name only."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from localjudge.errors import UsageError
from localjudge.metrics import MetricSettings
from localjudge.run.options import BenchOptions, EvalOptions, Hooks, ScoringOptions


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("limit", 0, "at least 1"),
        ("limit", 2.5, "at least 1"),
        ("chunk_size", 0, "at least 1"),
        ("max_failure_rate", 1.5, "from 0 to 1"),
        ("max_failure_rate", -0.1, "from 0 to 1"),
        ("fmt", "xml", "one of jsonl, json, csv, parquet, hf"),
        ("mapping", {"user_input": 3}, "field names to columns"),
        ("fail_under", {"recall": "high"}, "metrics to numbers"),
        ("cutoffs", {"recall.supported": 0.4}, "localjudge.Cutoffs"),
    ],
)
def test_a_bad_value_is_refused_naming_its_field(field, value, expected):
    with pytest.raises(UsageError) as refused:
        EvalOptions(**{field: value})
    assert refused.value.message.startswith(f"EvalOptions.{field}: expected ")
    assert expected in refused.value.message
    assert repr(value) in refused.value.message


def test_options_are_frozen_and_their_mappings_copied():
    mapping = {"user_input": "question"}
    options = EvalOptions(mapping=mapping, labels="l.jsonl")  # type: ignore[arg-type]
    mapping["user_input"] = "other"
    assert options.mapping == {"user_input": "question"}
    assert options.labels == Path("l.jsonl")
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.limit = 3  # type: ignore[misc]


def test_none_is_the_old_keyword_spelling_of_empty():
    options = EvalOptions(mapping=None, fail_under=None, settings=None)  # type: ignore[arg-type]
    assert (options.mapping, options.fail_under, options.settings) == ({}, {}, {})
    assert BenchOptions(metric_settings=None).metric_settings == MetricSettings()  # type: ignore[arg-type]


def test_keywords_replace_fields_and_hooks_are_taken_apart():
    base = EvalOptions(limit=5, truncate=True)
    seen = print
    options, hooks = EvalOptions.given(base, {"limit": 2, "on_result": seen})
    assert options == EvalOptions(limit=2, truncate=True)
    assert hooks == Hooks(on_result=seen)
    assert EvalOptions.given(None, {}) == (EvalOptions(), Hooks())
    with pytest.raises(TypeError, match=r"unexpected option.*labels.*ScoringOptions"):
        ScoringOptions.given(None, {"labels": "x"})


def test_the_checks_that_need_the_metrics():
    with pytest.raises(UsageError, match="--fail-under names metrics that are not run: position"):
        EvalOptions(fail_under={"position": 0.5}).check(["recall"])
    with pytest.raises(UsageError, match="--isotonic needs --labels"):
        EvalOptions(isotonic=True).check(["recall"])
    EvalOptions(fail_under={"recall": 0.5}, isotonic=True, labels=Path("x")).check(["recall"])


def test_a_bench_judge_runs_eval_with_the_options_they_share():
    class Ray:
        chunk_size = 1024

    bench = BenchOptions(limit=4, truncate=True, overwrite=True, ray=Ray())
    run = bench.eval_options(only={"recall": (0, 1)}, settings={"seed": 1})
    assert run == EvalOptions(
        limit=4,
        truncate=True,
        overwrite=True,
        only={"recall": (0, 1)},
        settings={"seed": 1},
        chunk_size=1024,
    )
    assert BenchOptions().eval_options(only={}, settings={}).chunk_size == 16
    with pytest.raises(UsageError, match=r"BenchOptions\.limit"):
        BenchOptions(limit=0)
