"""What evaluate() accepts: a DataFrame's rows (not its column labels), list cells as numpy or
pyarrow arrays, missing cells as NaN, ragas' column_map=; and clear refusals of a mapping or a
path. Each gives the rows a plain list of dicts gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pipeline_rules import rule_reply

from localjudge import evaluate
from localjudge.testing import ScriptedJudge

RECORDS = [
    {
        "id": f"r{i}",
        "user_input": f"question {i}?",
        "retrieved_contexts": [f"yes fact {i}.", f"noise {i}"],
        "reference": f"yes fact {i}. unknown {i}.",
    }
    for i in range(4)
]


def rows(records, **kwargs):
    ev = evaluate(records, ["recall", "position"], ScriptedJudge(rule_reply), **kwargs)
    return [{k: v for k, v in r.items() if k != "seconds"} for r in ev.rows()]


def test_a_dataframe_gives_its_rows() -> None:
    assert rows(pd.DataFrame(RECORDS)) == rows(RECORDS)


def test_list_cells_as_numpy_and_pyarrow_arrays() -> None:
    as_numpy = [{**r, "retrieved_contexts": np.array(r["retrieved_contexts"])} for r in RECORDS]
    as_arrow = [{**r, "retrieved_contexts": pa.array(r["retrieved_contexts"])} for r in RECORDS]
    as_scalar = [
        {**r, "retrieved_contexts": pa.scalar(r["retrieved_contexts"], pa.list_(pa.string()))}
        for r in RECORDS
    ]
    expected = rows(RECORDS)
    assert rows(as_numpy) == expected
    assert rows(as_arrow) == expected
    assert rows(as_scalar) == expected


def test_an_arrow_backed_dataframe_as_parquet_reading_gives_it(tmp_path: Path) -> None:
    path = tmp_path / "d.parquet"
    pd.DataFrame(RECORDS).to_parquet(path)
    frame = pd.read_parquet(path)
    assert isinstance(frame.iloc[0]["retrieved_contexts"], np.ndarray)  # what users really get
    assert rows(frame) == rows(RECORDS)


def test_a_missing_cell_is_nan_in_a_dataframe_and_means_absent() -> None:
    frame = pd.DataFrame(
        [*RECORDS, {"id": "no-ref", "user_input": "q?", "retrieved_contexts": ["c"]}]
    )
    last = [r for r in rows(frame) if r["id"] == "no-ref"]
    recall = next(r for r in last if r["metric"] == "recall")
    assert recall["error"]["field"] == "reference"
    assert "missing" in recall["error"]["message"] or "required" in recall["error"]["message"]


def test_column_map_is_ragas_spelling_of_mapping() -> None:
    renamed = [{("question" if k == "user_input" else k): v for k, v in r.items()} for r in RECORDS]
    expected = rows(RECORDS)
    assert rows(renamed, column_map={"user_input": "question"}) == expected
    assert rows(renamed, mapping={"user_input": "question"}) == expected
    with pytest.raises(ValueError, match="not both"):
        rows(renamed, mapping={"user_input": "question"}, column_map={"user_input": "question"})


def test_a_mapping_or_a_path_is_refused_with_what_to_pass() -> None:
    with pytest.raises(TypeError, match=r"dataset\['test'\]"):
        evaluate({"test": RECORDS}, ["recall"], ScriptedJudge(rule_reply))
    with pytest.raises(TypeError, match="eval_file"):
        evaluate("data.jsonl", ["recall"], ScriptedJudge(rule_reply))
