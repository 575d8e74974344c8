"""Reading records: every format, line-numbered errors, and the --map option."""

from __future__ import annotations

import csv
import hashlib
import json
import sys
import tracemalloc

import pyarrow as pa  # in [dev]: a missing pyarrow fails these tests, never skips them
import pyarrow.parquet as pq
import pytest

from localjudge.canonical import file_sha256
from localjudge.data.raw_records import Record
from localjudge.data.readers import (
    detect_format,
    parse_mapping,
    read_records,
)
from localjudge.errors import DataError, UsageError


def write(tmp_path, name, content):
    path = tmp_path / name
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def ok(index, line, data):
    return Record(index=index, line=line, data=data, error=None)


def bad(index, line, error):
    return Record(index=index, line=line, data=None, error=error)


# ---------------------------------------------------------------- JSONL


def test_jsonl_reads_objects_in_order(tmp_path):
    path = write(tmp_path, "d.jsonl", '{"id": "a", "n": 1}\n{"id": "b", "n": 2}\n')
    assert list(read_records(path)) == [
        ok(0, 1, {"id": "a", "n": 1}),
        ok(1, 2, {"id": "b", "n": 2}),
    ]


def test_ndjson_extension_and_str_path(tmp_path):
    path = write(tmp_path, "d.NDJSON", '{"a": 1}\n')
    assert list(read_records(str(path))) == [ok(0, 1, {"a": 1})]


def test_jsonl_strips_bom_on_first_line(tmp_path):
    path = write(tmp_path, "d.jsonl", b'\xef\xbb\xbf{"a": 1}\n{"a": 2}\n')
    assert list(read_records(path)) == [ok(0, 1, {"a": 1}), ok(1, 2, {"a": 2})]


def test_jsonl_bom_on_later_line_is_an_error(tmp_path):
    path = write(tmp_path, "d.jsonl", b'{"a": 1}\n\xef\xbb\xbf{"a": 2}\n')
    records = list(read_records(path))
    assert records[0] == ok(0, 1, {"a": 1})
    assert records[1] == bad(
        1, 2, "line 2: invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) at column 1"
    )


def test_jsonl_crlf_line_endings(tmp_path):
    path = write(tmp_path, "d.jsonl", b'{"a": "x"}\r\n{"a": "y"}\r\n')
    assert list(read_records(path)) == [ok(0, 1, {"a": "x"}), ok(1, 2, {"a": "y"})]


def test_jsonl_blank_lines_take_no_index(tmp_path):
    path = write(tmp_path, "d.jsonl", '\n{"a": 1}\n   \n\t\r\n\n{"a": 2}\n\n')
    assert list(read_records(path)) == [ok(0, 2, {"a": 1}), ok(1, 6, {"a": 2})]


def test_jsonl_invalid_utf8_line_is_an_error_and_reading_goes_on(tmp_path):
    path = write(tmp_path, "d.jsonl", b'{"a": 1}\n{"a": "\xff"}\n{"a": 3}\n')
    assert list(read_records(path)) == [
        ok(0, 1, {"a": 1}),
        bad(1, 2, "line 2: invalid UTF-8 (byte 0xff at byte offset 7)"),
        ok(2, 3, {"a": 3}),
    ]


def test_jsonl_malformed_middle_line_keeps_neighbours(tmp_path):
    content = '{"a": 1}\n{"a": 2 "b": 3}\n{"a": 3}\n'
    path = write(tmp_path, "d.jsonl", content)
    assert list(read_records(path)) == [
        ok(0, 1, {"a": 1}),
        bad(1, 2, "line 2: invalid JSON: Expecting ',' delimiter at column 9"),
        ok(2, 3, {"a": 3}),
    ]


def test_jsonl_truncated_last_line(tmp_path):
    path = write(tmp_path, "d.jsonl", '{"a": 1}\n{"a": "unfinish')
    assert list(read_records(path)) == [
        ok(0, 1, {"a": 1}),
        bad(
            1,
            2,
            "line 2: invalid JSON: Unterminated string starting at column 7 "
            "(the last line has no newline: the file may be truncated)",
        ),
    ]


def test_jsonl_valid_last_line_without_newline(tmp_path):
    path = write(tmp_path, "d.jsonl", '{"a": 1}\n{"a": 2}')
    assert list(read_records(path)) == [ok(0, 1, {"a": 1}), ok(1, 2, {"a": 2})]


def test_jsonl_non_object_lines(tmp_path):
    path = write(tmp_path, "d.jsonl", '[1, 2]\n"text"\nnull\n{"a": 1}\n')
    assert list(read_records(path)) == [
        bad(0, 1, "line 1: a record must be a JSON object, got list"),
        bad(1, 2, "line 2: a record must be a JSON object, got str"),
        bad(2, 3, "line 3: a record must be a JSON object, got null"),
        ok(3, 4, {"a": 1}),
    ]


def test_jsonl_keeps_unicode(tmp_path):
    record = {"retrieved_contexts": ["巴黎是法国的首都。"], "reference": "埃菲尔铁塔位于巴黎。"}
    path = write(tmp_path, "d.jsonl", json.dumps(record, ensure_ascii=False) + "\n")
    assert list(read_records(path)) == [ok(0, 1, record)]


def test_jsonl_is_streamed(tmp_path):
    path = tmp_path / "big.jsonl"
    line = json.dumps({"user_input": "q" * 100, "retrieved_contexts": ["c" * 100]}) + "\n"
    with path.open("w", encoding="utf-8") as fh:
        fh.writelines(line for _ in range(100_000))
    records = read_records(path)
    first = next(records)  # reading starts without loading the file
    assert first.line == 1
    tracemalloc.start()
    try:
        count = 1 + sum(1 for _ in records)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 100_000
    assert path.stat().st_size > 20_000_000
    assert peak < 2_000_000


def test_reading_is_lazy_but_errors_are_eager(tmp_path):
    with pytest.raises(DataError, match="not found"):
        read_records(tmp_path / "missing.jsonl")  # raised before any iteration


# ---------------------------------------------------------------- JSON


def test_json_array(tmp_path):
    path = write(tmp_path, "d.json", '[{"a": 1}, {"a": 2}]')
    assert list(read_records(path)) == [ok(0, None, {"a": 1}), ok(1, None, {"a": 2})]


def test_json_array_with_bom(tmp_path):
    path = write(tmp_path, "d.json", b'\xef\xbb\xbf[{"a": 1}]')
    assert list(read_records(path)) == [ok(0, None, {"a": 1})]


def test_json_non_object_elements_are_error_records(tmp_path):
    path = write(tmp_path, "d.json", '[{"a": 1}, [1], "x", 3, {"a": 2}]')
    assert list(read_records(path)) == [
        ok(0, None, {"a": 1}),
        bad(1, None, "item #1: a record must be a JSON object, got list"),
        bad(2, None, "item #2: a record must be a JSON object, got str"),
        bad(3, None, "item #3: a record must be a JSON object, got int"),
        ok(4, None, {"a": 2}),
    ]


def test_json_not_a_list_is_fatal(tmp_path):
    path = write(tmp_path, "d.json", '{"data": [{"a": 1}]}')
    with pytest.raises(DataError) as info:
        read_records(path)
    assert info.value.message == "d.json: expected a JSON array of records, got an object"
    assert ".jsonl" in info.value.hint


def test_json_invalid_is_fatal_with_position(tmp_path):
    path = write(tmp_path, "d.json", '[{"a": 1},\n {"a": }]')
    with pytest.raises(DataError) as info:
        read_records(path)
    assert info.value.message == "d.json: invalid JSON at line 2, column 8: Expecting value"


def test_json_invalid_utf8_is_fatal(tmp_path):
    path = write(tmp_path, "d.json", b'[{"a": "\xff"}]')
    with pytest.raises(DataError, match="invalid UTF-8 at byte offset 8"):
        read_records(path)


# ---------------------------------------------------------------- CSV


def test_csv_basic_with_bom_and_empty_cells(tmp_path):
    content = "\ufeffid,user_input,reference,response\r\na,What?,Paris.,\r\nb,,Rome.,Rome\r\n"
    path = write(tmp_path, "d.csv", content)
    assert list(read_records(path)) == [
        ok(0, 2, {"id": "a", "user_input": "What?", "reference": "Paris."}),
        ok(1, 3, {"id": "b", "reference": "Rome.", "response": "Rome"}),
    ]


def test_csv_list_fields(tmp_path):
    contexts = json.dumps(["巴黎是法国的首都。", 'with "quotes", and commas'], ensure_ascii=False)
    cell = '"' + contexts.replace('"', '""') + '"'
    content = (
        "user_input,retrieved_contexts,context,reference\n"
        f"q1,{cell},,r1\n"
        'q2,,"[""x""]",r2\n'
        "q3,one plain passage,,[not a list field]\n"
    )
    path = write(tmp_path, "d.csv", content)
    assert list(read_records(path)) == [
        ok(
            0,
            2,
            {
                "user_input": "q1",
                "retrieved_contexts": ["巴黎是法国的首都。", 'with "quotes", and commas'],
                "reference": "r1",
            },
        ),
        ok(1, 3, {"user_input": "q2", "context": ["x"], "reference": "r2"}),
        ok(
            2,
            4,
            {
                "user_input": "q3",
                "retrieved_contexts": ["one plain passage"],
                "reference": "[not a list field]",
            },
        ),
    ]


def test_csv_invalid_list_cell_is_that_rows_error(tmp_path):
    content = 'user_input,retrieved_contexts\nq1,"[""a"""\nq2,"[1, 2]"\nq3,"[""ok""]"\n'
    path = write(tmp_path, "d.csv", content)
    assert list(read_records(path)) == [
        bad(
            0,
            2,
            "line 2: field 'retrieved_contexts': invalid JSON list: "
            "Expecting ',' delimiter at column 5",
        ),
        bad(1, 3, "line 3: field 'retrieved_contexts': must be a JSON list of strings"),
        ok(2, 4, {"user_input": "q3", "retrieved_contexts": ["ok"]}),
    ]


def test_csv_extra_list_fields(tmp_path):
    path = write(tmp_path, "d.csv", 'question,ctx\nq,"[""a"", ""b""]"\n')
    assert list(read_records(path, list_fields={"ctx"})) == [
        ok(0, 2, {"question": "q", "ctx": ["a", "b"]}),
    ]


def test_csv_line_numbers_with_multiline_cells_and_blank_lines(tmp_path):
    content = 'id,reference\n\na,"two\nlines"\n\n  \nb,x\n'
    path = write(tmp_path, "d.csv", content)
    assert list(read_records(path)) == [
        ok(0, 3, {"id": "a", "reference": "two\nlines"}),
        ok(1, 7, {"id": "b", "reference": "x"}),
    ]


def test_csv_too_many_cells_and_invalid_utf8(tmp_path):
    content = b"id,reference\na,x,extra\nb,\xff\xfe\nc,y\n"
    path = write(tmp_path, "d.csv", content)
    assert list(read_records(path)) == [
        bad(0, 2, "line 2: 3 cells but the header has 2 columns"),
        bad(1, 3, "line 3: invalid UTF-8 in field 'reference'"),
        ok(2, 4, {"id": "c", "reference": "y"}),
    ]


def test_csv_short_row_leaves_fields_absent(tmp_path):
    path = write(tmp_path, "d.csv", "id,reference,response\na\n")
    assert list(read_records(path)) == [ok(0, 2, {"id": "a"})]


def test_csv_oversized_cell_is_that_rows_error(tmp_path):
    content = "id,reference\na," + "x" * (csv.field_size_limit() + 1) + "\nb,y\n"
    path = write(tmp_path, "d.csv", content)
    records = list(read_records(path))
    assert records[0].index == 0
    assert records[0].line == 2
    assert records[0].error is not None
    assert records[0].error.startswith("line 2: invalid CSV: field larger than field limit")
    assert records[1] == ok(1, 3, {"id": "b", "reference": "y"})


def test_empty_files_have_no_records(tmp_path):
    for name in ("e.jsonl", "e.csv"):
        assert list(read_records(write(tmp_path, name, ""))) == []
    assert list(read_records(write(tmp_path, "e.json", "[]"))) == []


# ---------------------------------------------------------------- Parquet


def test_parquet_without_pyarrow_says_what_to_install(tmp_path, monkeypatch):
    path = write(tmp_path, "d.parquet", b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(DataError) as info:
        read_records(path)
    assert info.value.hint == "pip install pyarrow (the 'parquet' extra of localjudge-rag)"


def test_parquet_rows_in_batches(tmp_path):
    rows = [
        {
            "id": f"r{i}",
            "user_input": f"q{i}",
            "retrieved_contexts": [f"c{i}", "d"],
            "reference": None if i == 1 else "ref",
        }
        for i in range(2500)
    ]
    path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=700)
    records = list(read_records(path))
    assert len(records) == 2500
    assert records[0] == ok(
        0,
        None,
        {"id": "r0", "user_input": "q0", "retrieved_contexts": ["c0", "d"], "reference": "ref"},
    )
    assert records[1] == ok(
        1, None, {"id": "r1", "user_input": "q1", "retrieved_contexts": ["c1", "d"]}
    )
    assert [r.index for r in records] == list(range(2500))
    assert all(type(r.data["retrieved_contexts"]) is list for r in records)


def test_parquet_corrupt_file_is_fatal(tmp_path):
    path = write(tmp_path, "d.parquet", b"not parquet at all")
    with pytest.raises(DataError, match="cannot read as Parquet"):
        read_records(path)


# ---------------------------------------------------------------- formats and files


def test_unknown_extension(tmp_path):
    path = write(tmp_path, "d.txt", '{"a": 1}\n')
    with pytest.raises(DataError) as info:
        read_records(path)
    assert info.value.message == f"cannot tell the format of {str(path)!r} (extension '.txt')"
    assert "--format" in info.value.hint


def test_fmt_overrides_extension(tmp_path):
    path = write(tmp_path, "d.txt", '{"a": 1}\n')
    assert list(read_records(path, fmt="jsonl")) == [ok(0, 1, {"a": 1})]
    assert detect_format("x.bin", "NDJSON") == "jsonl"
    assert detect_format("x.CSV") == "csv"


def test_unknown_fmt_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="unknown dataset format 'xml'"):
        read_records(write(tmp_path, "d.jsonl", ""), fmt="xml")


def test_missing_file(tmp_path):
    path = tmp_path / "nope.jsonl"
    with pytest.raises(DataError) as info:
        read_records(path)
    assert info.value.message == f"dataset file not found: {str(path)!r}"
    assert info.value.hint
    assert info.value.exit_code == 3


def test_directory_is_not_a_file(tmp_path):
    folder = tmp_path / "d.jsonl"
    folder.mkdir()
    with pytest.raises(DataError, match="not a file"):
        read_records(folder, fmt="jsonl")
    with pytest.raises(DataError, match="not a Hugging Face save_to_disk folder"):
        read_records(folder)  # a folder is read as one, and this one is not


def test_file_sha256(tmp_path):
    content = b"x" * (3 << 20) + b"tail"
    path = write(tmp_path, "blob.bin", content)
    assert file_sha256(path) == hashlib.sha256(content).hexdigest()
    assert file_sha256(str(write(tmp_path, "empty", b""))) == hashlib.sha256(b"").hexdigest()


# ---------------------------------------------------------------- --map


def test_parse_mapping():
    assert parse_mapping(["user_input=question", " retrieved_contexts = docs ", "id=qid"]) == {
        "user_input": "question",
        "retrieved_contexts": "docs",
        "id": "qid",
    }
    assert parse_mapping([]) == {}
    assert parse_mapping(["reference=a=b"]) == {"reference": "a=b"}
    assert parse_mapping(["response=answer", "response=answer"]) == {"response": "answer"}


@pytest.mark.parametrize("pair", ["user_input", "=question", "user_input=", "user_input = "])
def test_parse_mapping_malformed(pair):
    with pytest.raises(UsageError) as info:
        parse_mapping([pair])
    assert info.value.message == f"--map expects FIELD=COLUMN, got {pair!r}"
    assert info.value.exit_code == 2


def test_parse_mapping_unknown_field():
    with pytest.raises(UsageError) as info:
        parse_mapping(["question=user_input"])
    assert info.value.message == "--map question=user_input: unknown field 'question'"
    assert info.value.hint == (
        "FIELD must be one of: user_input, retrieved_contexts, reference, response, id"
    )


def test_parse_mapping_alias_suggests_the_field_name():
    with pytest.raises(UsageError) as info:
        parse_mapping(["context=docs"])
    assert info.value.hint.startswith("use the field name 'retrieved_contexts'; ")


def test_parse_mapping_conflict():
    with pytest.raises(UsageError, match="twice"):
        parse_mapping(["response=a", "response=b"])


# ---------------------------------------------------------------- oversized records


@pytest.mark.parametrize("name", ["d.jsonl", "d.csv"])
def test_a_line_over_the_record_limit_is_that_lines_error(tmp_path, monkeypatch, name):
    monkeypatch.setenv("LOCALJUDGE_MAX_RECORD_BYTES", "4096")
    big = "x" * 50_000
    if name.endswith(".jsonl"):
        content = f'{{"reference": "a"}}\n{{"reference": "{big}"}}\n{{"reference": "c"}}\n'
        first = 1
    else:
        content = f"reference\na\n{big}\nc\n"
        first = 2
    records = list(read_records(write(tmp_path, name, content)))
    assert [r.index for r in records] == [0, 1, 2]
    assert records[0].data == {"reference": "a"}
    assert records[2].data == {"reference": "c"}
    assert records[2].line == first + 2
    error = records[1].error
    assert error is not None
    assert error.startswith(f"line {first + 1}: the record is ")
    assert "over the limit of 4096 bytes" in error
    assert "LOCALJUDGE_MAX_RECORD_BYTES" in error


def test_a_line_just_under_the_limit_is_read(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALJUDGE_MAX_RECORD_BYTES", "4096")
    line = '{"reference": "' + "y" * (4096 - 18) + '"}\n'
    assert len(line.encode()) == 4096
    [record] = read_records(write(tmp_path, "d.jsonl", line))
    assert record.ok


def test_a_json_array_over_the_file_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALJUDGE_MAX_RECORD_BYTES", "1024")
    path = write(tmp_path, "d.json", json.dumps([{"reference": "z" * 100}] * 100))
    with pytest.raises(DataError, match="over the limit"):
        list(read_records(path))
