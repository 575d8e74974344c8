"""DataFile: a data file opened once; every pass over its records and its sha256 read that one
handle, and the records are those read_records gives, in every format."""

from __future__ import annotations

import csv
import hashlib
import json
from itertools import islice
from pathlib import Path

import pytest

from localjudge.data.open_once import DataFile
from localjudge.data.readers import read_records
from localjudge.errors import DataError

RECORDS = [
    {"id": str(i), "user_input": f"q{i}? " + "x" * (i % 7), "retrieved_contexts": ["a", "b"]}
    for i in range(2500)  # several reads of the handle's buffer
]


def write(folder: Path, fmt: str) -> Path:
    path = folder / f"data.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), "utf-8")
    elif fmt == "json":
        path.write_text(json.dumps(RECORDS), "utf-8")
    elif fmt == "csv":
        with path.open("w", newline="", encoding="utf-8") as f:
            out = csv.writer(f)
            out.writerow(["id", "user_input", "retrieved_contexts"])
            for r in RECORDS:
                out.writerow([r["id"], r["user_input"], json.dumps(r["retrieved_contexts"])])
    else:
        pa = pytest.importorskip("pyarrow")
        pq = pytest.importorskip("pyarrow.parquet")
        pq.write_table(pa.Table.from_pylist(RECORDS), path)
    return path


FORMATS = ["jsonl", "json", "csv", "parquet"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(
    "passes",
    [
        ["all", "sha"],  # the pass hashes the file on the way
        ["15", "sha", "all"],  # a pass cut short: the rest is read for the hash
        ["sha", "all", "sha"],  # no pass yet: a read of its own
        ["15", "40", "sha", "all"],  # a new pass starts at the first record again
    ],
)
def test_every_pass_and_the_sha256_read_one_handle(tmp_path, opened, fmt, passes) -> None:
    path = write(tmp_path, fmt)
    expected = list(read_records(path))
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    opened.clear()
    with DataFile(path) as source:
        for step in passes:
            if step == "sha":
                assert source.sha256 == sha256
            elif step == "all":
                assert list(source.records()) == expected
            else:
                n = int(step)
                assert list(islice(source.records(), n)) == expected[:n]
    assert opened[str(path.resolve())] == 1


def test_a_folder_is_read_as_read_records_reads_it(tmp_path) -> None:
    pa = pytest.importorskip("pyarrow")
    folder = tmp_path / "split"
    folder.mkdir()
    table = pa.Table.from_pylist(RECORDS[:10])
    shard = str(folder / "data-00000-of-00001.arrow")
    with pa.OSFile(shard, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as stream:
        stream.write_table(table)
    files = [{"filename": "data-00000-of-00001.arrow"}]
    (folder / "state.json").write_text(json.dumps({"_data_files": files}), "utf-8")
    with DataFile(folder) as source:
        assert source.format == "hf"
        assert list(source.records()) == list(read_records(folder))
        assert len(source.sha256) == 64


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("missing.jsonl", None, "dataset file not found"),
        ("broken.json", "[{", "invalid JSON"),
        ("object.json", "{}", "expected a JSON array"),
        ("data.txt", "", "cannot tell the format"),
    ],
)
def test_a_file_that_cannot_be_read_is_refused_when_opened(tmp_path, name, text, message) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text, "utf-8")
    with pytest.raises(DataError, match=message):
        DataFile(path)
