"""What evaluate() accepts: a DataFrame's rows (not its column labels), list cells as numpy or
pyarrow arrays, missing cells as NaN, ragas' column_map=; and clear refusals of a mapping or a
path; Hugging Face splits and save_to_disk folders; dotted paths into nested fields. Each gives
the rows a plain list of dicts gives."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from pipeline_rules import rule_reply

from localjudge import eval_file, evaluate
from localjudge.canonical import file_sha256
from localjudge.data.readers import read_records
from localjudge.errors import DataError
from localjudge.run.settings import build_metrics
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


# ---------------------------------------------------------------- Hugging Face datasets


def test_a_hugging_face_dataset_split_gives_its_rows() -> None:
    split = datasets.Dataset.from_list(RECORDS)
    assert rows(split) == rows(RECORDS)
    assert rows(datasets.DatasetDict({"test": split})["test"]) == rows(RECORDS)
    with pytest.raises(TypeError, match=r"dataset\['test'\]"):
        rows(datasets.DatasetDict({"test": split}))


def test_a_save_to_disk_folder_reads_like_the_same_records_in_a_file(tmp_path: Path) -> None:
    with_gap = [*RECORDS, {"id": "no-ref", "user_input": "q?", "retrieved_contexts": ["c"]}]
    folder = tmp_path / "ds"
    datasets.Dataset.from_list(with_gap).save_to_disk(str(folder))
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in with_gap), "utf-8")
    from_folder = [r.data for r in read_records(folder)]
    assert from_folder == [r.data for r in read_records(jsonl)]  # null cells are absent
    assert rows(read_records(folder)) == rows(with_gap)


def test_a_datasetdict_folder_names_its_split_folders(tmp_path: Path) -> None:
    split = datasets.Dataset.from_list(RECORDS)
    datasets.DatasetDict({"train": split, "test": split}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(DataError, match="splits: train, test") as caught:
        read_records(tmp_path / "dd")
    assert str(tmp_path / "dd" / "train") in (caught.value.hint or "")
    assert len(list(read_records(tmp_path / "dd" / "test"))) == len(RECORDS)
    (tmp_path / "plain").mkdir()
    with pytest.raises(DataError, match=r"no state\.json"):
        read_records(tmp_path / "plain")


def test_eval_scores_a_save_to_disk_folder_and_hashes_its_files(tmp_path: Path) -> None:
    folder = tmp_path / "ds"
    datasets.Dataset.from_list(RECORDS).save_to_disk(str(folder))
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), "utf-8")
    metrics = build_metrics(["recall"])
    judge = ScriptedJudge(rule_reply)
    eval_file(folder, tmp_path / "a", judge=judge, metrics=metrics)
    eval_file(jsonl, tmp_path / "b", judge=judge, metrics=metrics)
    lines = [(tmp_path / d / "results.jsonl").read_text("utf-8").splitlines() for d in "ab"]
    strip = [
        [{k: v for k, v in json.loads(x).items() if k != "seconds"} for x in ls] for ls in lines
    ]
    assert strip[0] == strip[1]
    summary = json.loads((tmp_path / "a" / "summary.json").read_text("utf-8"))
    before = summary["run"]["data_sha256"]
    assert before == file_sha256(folder)
    (folder / "dataset_info.json").write_text("{}", "utf-8")
    assert file_sha256(folder) != before  # any file of the folder changes the data's hash


# ---------------------------------------------------------------- nested fields


def test_dotted_paths_map_nested_fields() -> None:
    nested = [
        {
            "id": r["id"],
            "query": {"text": r["user_input"]},
            "docs": [{"text": c, "score": 1.0} for c in r["retrieved_contexts"]],
            "gold": {"answer": r["reference"]},
        }
        for r in RECORDS
    ]
    paths = {
        "user_input": "query.text",
        "retrieved_contexts": "docs[].text",
        "reference": "gold.answer",
    }
    assert rows(nested, mapping=paths) == rows(RECORDS)
    broken = [{**nested[0], "docs": [{"text": "a"}, {"body": "b"}]}]
    [recall] = [r for r in rows(broken, mapping=paths) if r["metric"] == "recall"]
    assert recall["error"]["field"] == "retrieved_contexts"
    assert "docs[].text" in recall["error"]["message"]
