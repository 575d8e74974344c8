r"""The table-like inputs: CSV files (line by line, list cells parsed), Parquet files (in row
batches) and Hugging Face ``save_to_disk`` folders (their Arrow files, read with pyarrow alone).

Readers for :func:`localjudge.data.readers.read_records`, which picks one by format; each yields
:class:`~localjudge.data.raw_records.Record`\ s, a malformed row becoming a record with an error.
"""

from __future__ import annotations

import csv
import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from localjudge.data.item import plain
from localjudge.data.raw_records import (
    BOM,
    ByteReader,
    Record,
    bounded_lines,
    json_message,
    limit_message,
    max_record_bytes,
    open_binary,
    too_long,
)
from localjudge.errors import DataError

__all__ = [
    "csv_records",
    "open_parquet",
    "parquet_records",
    "read_csv",
    "read_hf_folder",
    "read_parquet",
]

_PARQUET_BATCH_ROWS = 1024


# ---------------------------------------------------------------- CSV


def read_csv(file: Path, list_fields: frozenset[str]) -> Iterator[Record]:
    with open_binary(file) as fh:
        yield from csv_records(fh, list_fields)


def csv_records(fh: ByteReader, list_fields: frozenset[str]) -> Iterator[Record]:
    """The records of a CSV file read through ``fh`` from its start."""
    # surrogateescape keeps reading past invalid UTF-8; the row that holds it becomes an error
    limit = max_record_bytes()
    lines = _CsvLines(fh, limit)
    reader = csv.reader(lines)
    header: list[str] | None = None
    index = 0
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except _Oversized as exc:
            yield Record(index=index, line=start, data=None, error=too_long(start, *exc.args))
            index += 1
            start = lines.count + 1
            continue
        except csv.Error as exc:
            error = f"line {start}: invalid CSV: {exc}"
            yield Record(index=index, line=start, data=None, error=error)
            index += 1
            start = lines.count + 1
            continue
        number, start = start, lines.count + 1
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [name.strip() for name in row]
            continue
        yield _csv_record(row, header, list_fields, index=index, number=number)
        index += 1


class _Oversized(Exception):  # noqa: N818 (a signal between two readers, not an error type)
    """A CSV line over the record limit: (its size, the limit)."""


class _CsvLines:
    """The text lines ``csv.reader`` reads, decoded as ``utf-8-sig`` with surrogateescape (a
    row holding invalid UTF-8 becomes an error row), at most ``limit`` bytes each: a longer
    line raises :class:`_Oversized` and is read past in bounded chunks. ``count`` is the number
    of physical lines read so far."""

    def __init__(self, fh: ByteReader, limit: int) -> None:
        self._lines = bounded_lines(fh, limit)
        self._limit = limit
        self.count = 0

    def __iter__(self) -> _CsvLines:
        return self

    def __next__(self) -> str:
        line, size = next(self._lines)
        self.count += 1
        if line is None:
            raise _Oversized(size, self._limit)
        if self.count == 1 and line.startswith(BOM):
            line = line[len(BOM) :]
        return line.decode("utf-8", errors="surrogateescape")


def _csv_record(
    row: list[str], header: list[str], list_fields: frozenset[str], *, index: int, number: int
) -> Record:
    def fail(message: str) -> Record:
        return Record(index=index, line=number, data=None, error=f"line {number}: {message}")

    if len(row) > len(header):
        return fail(f"{len(row)} cells but the header has {len(header)} columns")
    data: dict[str, Any] = {}
    for name, cell in zip(header, row, strict=False):
        if not name or cell == "":
            continue
        if not _is_utf8(cell):
            return fail(f"invalid UTF-8 in field {name!r}")
        if name in list_fields:
            parsed = _parse_list_cell(cell)
            if isinstance(parsed, str):
                return fail(f"field {name!r}: {parsed}")
            data[name] = parsed
        else:
            data[name] = cell
    return Record(index=index, line=number, data=data)


def _parse_list_cell(cell: str) -> list[str] | str:
    """A list cell: a JSON array of strings, or one plain string (a one-element list).
    Returns the error message as a ``str`` when the cell is not valid."""
    if not cell.lstrip().startswith("["):
        return [cell]
    try:
        value = json.loads(cell)
    except json.JSONDecodeError as exc:
        return f"invalid JSON list: {json_message(exc)}"
    except (ValueError, RecursionError) as exc:
        return f"unreadable JSON list: {limit_message(exc)}"
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return "must be a JSON list of strings"
    return value


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# ---------------------------------------------------------------- Parquet


def _pyarrow(what: str) -> Any:
    try:
        return importlib.import_module("pyarrow")
    except ImportError as exc:
        raise DataError(
            f"reading {what} needs the optional dependency pyarrow",
            hint="pip install pyarrow (the 'parquet' extra of localjudge-rag)",
        ) from exc


def read_parquet(file: Path) -> Iterator[Record]:
    parquet = open_parquet(str(file), file.name)

    def batches() -> Iterator[Any]:
        try:
            yield from parquet.iter_batches(batch_size=_PARQUET_BATCH_ROWS)
        finally:
            close = getattr(parquet, "close", None)
            if callable(close):
                close()

    return _arrow_records(batches(), _pyarrow("Parquet files").ArrowException, "Parquet file")


def open_parquet(source: Any, name: str) -> Any:
    """``source`` (a path, or a seekable binary file object) opened as a Parquet file (its
    metadata read); a file that is not one is a :class:`~localjudge.errors.DataError`."""
    pa = _pyarrow("Parquet files")
    pq: Any = importlib.import_module("pyarrow.parquet")
    try:
        return pq.ParquetFile(source)
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"{name}: cannot read as Parquet: {exc}") from exc


def parquet_records(parquet: Any) -> Iterator[Record]:
    """The records of a Parquet file :func:`open_parquet` opened, in row batches."""
    batches = parquet.iter_batches(batch_size=_PARQUET_BATCH_ROWS)
    return _arrow_records(batches, _pyarrow("Parquet files").ArrowException, "Parquet file")


def _arrow_records(
    batches: Iterator[Any], arrow_error: type[Exception], what: str
) -> Iterator[Record]:
    """One record per row of Arrow record batches; null cells are absent fields."""
    index = 0
    try:
        for batch in batches:
            for row in batch.to_pylist():
                data = {str(k): plain(v) for k, v in row.items() if v is not None}
                yield Record(index=index, line=None, data=data)
                index += 1
    except (arrow_error, OSError) as exc:
        raise DataError(f"{what} unreadable after {index} records: {exc}") from exc


# ---------------------------------------------------------------- Hugging Face folders


def read_hf_folder(folder: Path) -> Iterator[Record]:
    """The rows of a ``Dataset.save_to_disk`` folder, read with pyarrow alone (its shards are
    Arrow IPC streams listed in ``state.json``): no ``datasets`` import, nothing fetched."""
    if not folder.is_dir():
        raise DataError(f"dataset folder not found: {str(folder)!r}", hint="check the path")
    splits_file = folder / "dataset_dict.json"
    if splits_file.is_file():
        try:
            splits = [str(s) for s in json.loads(splits_file.read_text("utf-8"))["splits"]]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise DataError(f"{folder}: unreadable dataset_dict.json: {exc}") from exc
        raise DataError(
            f"{str(folder)!r} holds a DatasetDict (splits: {', '.join(splits)}), not one split",
            hint=f"give one split's folder, e.g. {str(folder / splits[0]) if splits else ''}",
        )
    state = folder / "state.json"
    try:
        shards = [
            folder / str(f["filename"]) for f in json.loads(state.read_text("utf-8"))["_data_files"]
        ]
    except FileNotFoundError as exc:
        raise DataError(
            f"{str(folder)!r} is a folder, not a Hugging Face save_to_disk folder (no state.json)",
            hint="give a data file, or a folder written by Dataset.save_to_disk",
        ) from exc
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{folder}: unreadable state.json: {exc}") from exc
    missing = [s.name for s in shards if not s.is_file()]
    if missing:
        raise DataError(f"{folder}: state.json lists missing shard {missing[0]!r}")
    pa = _pyarrow("Hugging Face dataset folders")

    def batches() -> Iterator[Any]:
        for shard in shards:
            with pa.memory_map(str(shard)) as source:
                yield from pa.ipc.open_stream(source)

    return _arrow_records(batches(), pa.ArrowException, f"dataset folder {folder.name!r}")
