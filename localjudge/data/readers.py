"""Reading a data file of any format: :func:`read_records` picks the reader by format (JSONL and
JSON are read here, CSV, Parquet and Hugging Face folders in :mod:`localjudge.data.tables`), with
line-numbered errors.

This is one of the few modules that touch files (with :mod:`localjudge.data.tables`, which
reads CSV, Parquet and Hugging Face folders for it). :func:`read_records` streams: a JSONL or CSV
file is read line by line (memory stays flat however long it is), a Parquet file in row batches.
A malformed record never stops reading: it becomes a :class:`Record` whose ``error`` names the
line, and the next record is read as usual. Only a file that cannot be read at all (missing,
unknown format, not a JSON array) raises :class:`~localjudge.errors.DataError`, and it does so
when :func:`read_records` is called, before the first record.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from localjudge.data.item import ALIASES, FIELDS
from localjudge.data.raw_records import (
    BOM,
    MAX_RECORD_ENV,
    ByteReader,
    Record,
    bounded_lines,
    json_kind,
    json_message,
    limit_message,
    max_record_bytes,
    mib,
    open_binary,
    too_long,
    type_name,
)
from localjudge.data.tables import read_csv, read_hf_folder, read_parquet
from localjudge.errors import DataError, UsageError

__all__ = [
    "EXTENSIONS",
    "FORMATS",
    "LIST_FIELDS",
    "MAPPABLE_FIELDS",
    "checked_format",
    "detect_format",
    "json_array",
    "json_records",
    "jsonl_records",
    "list_fields",
    "parse_mapping",
    "read_records",
]

#: file extensions and the format each one means
EXTENSIONS: Mapping[str, str] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".csv": "csv",
    ".parquet": "parquet",
}
#: values accepted by ``fmt`` (``ndjson`` is another name for ``jsonl``)
FORMATS: Mapping[str, str] = {
    "jsonl": "jsonl",
    "ndjson": "jsonl",
    "json": "json",
    "csv": "csv",
    "parquet": "parquet",
    "hf": "hf",
}
#: CSV columns whose cells hold a list of strings (the field and its Mastra alias)
LIST_FIELDS: frozenset[str] = frozenset({"retrieved_contexts", "context"})
#: the fields a ``--map`` option may rename
MAPPABLE_FIELDS: tuple[str, ...] = (*FIELDS, "id")
#: a JSON array file may be this many times larger than a record
_JSON_FILE_RECORDS = 8


def detect_format(path: str | Path, fmt: str | None = None) -> str:
    """The format of ``path``: ``fmt`` when given, otherwise from the file extension.

    Returns one of ``"jsonl"``, ``"json"``, ``"csv"``, ``"parquet"``, or ``"hf"`` for a directory
    (a Hugging Face ``Dataset.save_to_disk`` folder). An unknown ``fmt`` raises
    :class:`~localjudge.errors.UsageError`, an unknown extension
    :class:`~localjudge.errors.DataError`.
    """
    if fmt is not None:
        key = fmt.strip().lower().lstrip(".")
        if key not in FORMATS:
            raise UsageError(
                f"unknown dataset format {fmt!r}",
                hint=f"use one of: {', '.join(FORMATS)}",
            )
        return FORMATS[key]
    if Path(path).is_dir():
        return "hf"  # a Hugging Face save_to_disk folder
    suffix = Path(path).suffix.lower()
    if suffix not in EXTENSIONS:
        shown = f"extension {suffix!r}" if suffix else "no extension"
        raise DataError(
            f"cannot tell the format of {str(path)!r} ({shown})",
            hint=(
                f"name the file with one of {', '.join(EXTENSIONS)} "
                "or pass the format explicitly (--format jsonl|json|csv|parquet)"
            ),
        )
    return EXTENSIONS[suffix]


def read_records(
    path: str | Path,
    *,
    fmt: str | None = None,
    list_fields: Collection[str] = LIST_FIELDS,
) -> Iterator[Record]:
    """Stream the records of a dataset file, in file order.

    The format comes from the extension (``.jsonl``/``.ndjson``, ``.json``, ``.csv``,
    ``.parquet``) unless ``fmt`` names it; a directory is a Hugging Face ``save_to_disk`` folder
    (one split: a ``DatasetDict`` folder is refused with the split folders to give instead).
    ``list_fields`` are the CSV columns whose cells hold a list of strings (add the column a
    ``--map retrieved_contexts=...`` option points to).

    Raises :class:`~localjudge.errors.DataError` right away (not on first iteration) when the
    file is missing or cannot be read as that format at all; a malformed record is yielded as a
    :class:`Record` with ``error`` set instead.
    """
    file = Path(path)
    kind = checked_format(file, fmt)
    if kind == "hf":
        return read_hf_folder(file)
    open_binary(file).close()  # fail now, not at the first record, when it cannot be opened
    if kind == "jsonl":
        return _read_jsonl(file)
    if kind == "json":
        with open_binary(file) as fh:
            return json_records(json_array(fh, file))
    if kind == "csv":
        return read_csv(file, frozenset(list_fields))
    return read_parquet(file)


def checked_format(file: Path, fmt: str | None = None) -> str:
    """:func:`detect_format`, for a dataset that is there: a missing path, or a path that is not
    a file where the format wants one, is a :class:`~localjudge.errors.DataError`."""
    kind = detect_format(file, fmt)
    if not file.exists():
        raise DataError(
            f"dataset file not found: {str(file)!r}",
            hint="check the path (relative paths start from the current directory)",
        )
    if kind != "hf" and not file.is_file():
        raise DataError(f"dataset path is not a file: {str(file)!r}", hint="give a file path")
    return kind


def list_fields(mapping: Mapping[str, str]) -> frozenset[str]:
    """The CSV columns a run reads as lists: :data:`LIST_FIELDS`, and the column a ``--map
    retrieved_contexts=...`` option points to."""
    extra = {mapping["retrieved_contexts"]} if "retrieved_contexts" in mapping else set()
    return LIST_FIELDS | extra


# ---------------------------------------------------------------- JSONL


def _read_jsonl(file: Path) -> Iterator[Record]:
    with open_binary(file) as fh:
        yield from jsonl_records(fh)


def jsonl_records(fh: ByteReader) -> Iterator[Record]:
    """The records of a JSONL file read through ``fh`` from its start."""
    limit = max_record_bytes()
    index = 0
    for number, (chunk, size) in enumerate(bounded_lines(fh, limit), start=1):
        if chunk is None:
            yield Record(index=index, line=number, data=None, error=too_long(number, size, limit))
            index += 1
            continue
        raw = chunk[len(BOM) :] if number == 1 and chunk.startswith(BOM) else chunk
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            error = (
                f"line {number}: invalid UTF-8 (byte 0x{raw[exc.start]:02x} "
                f"at byte offset {exc.start})"
            )
            yield Record(index=index, line=number, data=None, error=error)
            index += 1
            continue
        if not text.strip():
            continue
        yield _parse_json_line(text, index=index, number=number, last=not raw.endswith(b"\n"))
        index += 1


def _parse_json_line(text: str, *, index: int, number: int, last: bool) -> Record:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        error = f"line {number}: invalid JSON: {json_message(exc)}"
        if last:
            error += " (the last line has no newline: the file may be truncated)"
        return Record(index=index, line=number, data=None, error=error)
    except (ValueError, RecursionError) as exc:  # huge integers, absurd nesting
        error = f"line {number}: unreadable JSON: {limit_message(exc)}"
        return Record(index=index, line=number, data=None, error=error)
    if not isinstance(value, dict):
        error = f"line {number}: a record must be a JSON object, got {type_name(value)}"
        return Record(index=index, line=number, data=None, error=error)
    return Record(index=index, line=number, data=value)


# ---------------------------------------------------------------- JSON


def json_array(fh: ByteReader, file: Path) -> list[Any]:
    """The JSON array of records in ``file``, read whole through ``fh`` from its start (a JSON
    document has to be parsed whole; this is the one format that is not streamed). A file that
    is not one, or is over the limit, is a :class:`~localjudge.errors.DataError`."""
    limit = _JSON_FILE_RECORDS * max_record_bytes()
    if (size := file.stat().st_size) > limit:
        raise DataError(
            f"{file.name}: a JSON array of {mib(size)} is over the limit of {mib(limit)} "
            "(a JSON document is parsed whole)",
            hint=f"write one record per line to a .jsonl file (streamed), or raise "
            f"{MAX_RECORD_ENV}",
        )
    blob = fh.read()
    try:
        text = blob.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{file.name}: invalid UTF-8 at byte offset {exc.start}",
            hint="save the file as UTF-8",
        ) from exc
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{file.name}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",
            hint="fix the JSON, or use JSON Lines (.jsonl) so one bad record does not stop a run",
        ) from exc
    except (ValueError, RecursionError) as exc:
        raise DataError(
            f"{file.name}: unreadable JSON: {limit_message(exc)}",
            hint="use JSON Lines (.jsonl) so one bad record does not stop a run",
        ) from exc
    if not isinstance(value, list):
        raise DataError(
            f"{file.name}: expected a JSON array of records, got {json_kind(value)}",
            hint="wrap the records in [...], or write one JSON object per line to a .jsonl file",
        )
    return value


def json_records(values: list[Any]) -> Iterator[Record]:
    """The records of a JSON array (:func:`json_array`)."""
    for index, value in enumerate(values):
        if isinstance(value, dict):
            yield Record(index=index, line=None, data=value)
        else:
            error = f"item #{index}: a record must be a JSON object, got {type_name(value)}"
            yield Record(index=index, line=None, data=None, error=error)


# ---------------------------------------------------------------- helpers


def parse_mapping(pairs: Iterable[str]) -> dict[str, str]:
    """Parse ``--map FIELD=COLUMN`` options into ``{field: column}``.

    ``FIELD`` must be one of ``user_input``, ``retrieved_contexts``, ``reference``, ``response``,
    ``id``. Raises :class:`~localjudge.errors.UsageError` on a malformed pair, an unknown field,
    or one field mapped twice to different columns.
    """
    mapping: dict[str, str] = {}
    expected = ", ".join(MAPPABLE_FIELDS)
    for pair in pairs:
        ours, sep, theirs = pair.partition("=")
        ours, theirs = ours.strip(), theirs.strip()
        if not sep or not ours or not theirs:
            raise UsageError(
                f"--map expects FIELD=COLUMN, got {pair!r}",
                hint="for example --map user_input=question",
            )
        if ours not in MAPPABLE_FIELDS:
            hint = f"FIELD must be one of: {expected}"
            if ours in ALIASES:
                hint = f"use the field name {ALIASES[ours]!r}; {hint}"
            raise UsageError(f"--map {pair}: unknown field {ours!r}", hint=hint)
        if mapping.get(ours, theirs) != theirs:
            raise UsageError(
                f"--map gives field {ours!r} twice ({mapping[ours]!r} and {theirs!r})",
                hint="keep one --map per field",
            )
        mapping[ours] = theirs
    return mapping
