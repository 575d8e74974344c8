"""Reading evaluation records from JSONL, JSON, CSV and Parquet files, with line-numbered errors.

This is one of the few modules that touch files. :func:`read_records` streams: a JSONL or CSV
file is read line by line (memory stays flat however long it is), a Parquet file in row batches.
A malformed record never stops reading: it becomes a :class:`Record` whose ``error`` names the
line, and the next record is read as usual. Only a file that cannot be read at all (missing,
unknown format, not a JSON array) raises :class:`~localjudge.errors.DataError`, and it does so
when :func:`read_records` is called, before the first record.
"""

from __future__ import annotations

import csv
import importlib
import json
import os
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from localjudge.data.items import ALIASES, FIELDS, plain
from localjudge.errors import DataError, UsageError

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

_BOM = b"\xef\xbb\xbf"
_PARQUET_BATCH_ROWS = 1024
#: environment variable that overrides :data:`MAX_RECORD_BYTES`
MAX_RECORD_ENV = "LOCALJUDGE_MAX_RECORD_BYTES"
#: a JSONL line or CSV line longer than this is a per-record error, read past in bounded
#: chunks (never held whole); a JSON array file may be this many times larger
MAX_RECORD_BYTES = 32 * 1024 * 1024
_JSON_FILE_RECORDS = 8
_SKIP_CHUNK = 1024 * 1024


def max_record_bytes() -> int:
    """The record size limit in force: ``$LOCALJUDGE_MAX_RECORD_BYTES`` or the default."""
    value = os.environ.get(MAX_RECORD_ENV, "").strip()
    try:
        return max(1024, int(value)) if value else MAX_RECORD_BYTES
    except ValueError:
        return MAX_RECORD_BYTES


def _too_long(number: int, size: int, limit: int) -> str:
    return (
        f"line {number}: the record is {_mib(size)}, over the limit of {_mib(limit)} "
        f"(set {MAX_RECORD_ENV} to raise it)"
    )


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size} bytes"


def _bounded_lines(fh: BinaryIO, limit: int) -> Iterator[tuple[bytes | None, int]]:
    """The file's lines as (line, size); a line over ``limit`` bytes is (None, its size), read
    past in chunks so that memory stays bounded by ``limit``."""
    while line := fh.readline(limit + 1):
        if len(line) <= limit or line.endswith(b"\n"):
            yield line, len(line)
            continue
        size = len(line)
        del line
        while chunk := fh.readline(_SKIP_CHUNK):
            size += len(chunk)
            if chunk.endswith(b"\n"):
                break
        yield None, size


@dataclass(frozen=True)
class Record:
    """One record read from a dataset file.

    ``index`` is the 0-based position among records (blank lines take none); ``line`` the 1-based
    line where the record starts in a JSONL or CSV file (``None`` for JSON arrays and Parquet).
    Exactly one of ``data`` and ``error`` is set.
    """

    index: int
    line: int | None
    data: Mapping[str, Any] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the record was read without error."""
        return self.error is None


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
    kind = detect_format(file, fmt)
    if not file.exists():
        raise DataError(
            f"dataset file not found: {str(file)!r}",
            hint="check the path (relative paths start from the current directory)",
        )
    if kind == "hf":
        return _read_hf_folder(file)
    if not file.is_file():
        raise DataError(f"dataset path is not a file: {str(file)!r}", hint="give a file path")
    _open_binary(file).close()  # fail now, not at the first record, when it cannot be opened
    if kind == "jsonl":
        return _read_jsonl(file)
    if kind == "json":
        return _read_json(file)
    if kind == "csv":
        return _read_csv(file, frozenset(list_fields))
    return _read_parquet(file)


# ---------------------------------------------------------------- JSONL


def _read_jsonl(file: Path) -> Iterator[Record]:
    limit = max_record_bytes()
    with _open_binary(file) as fh:
        index = 0
        for number, (chunk, size) in enumerate(_bounded_lines(fh, limit), start=1):
            if chunk is None:
                yield Record(
                    index=index, line=number, data=None, error=_too_long(number, size, limit)
                )
                index += 1
                continue
            raw = chunk[len(_BOM) :] if number == 1 and chunk.startswith(_BOM) else chunk
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
        error = f"line {number}: invalid JSON: {_json_message(exc)}"
        if last:
            error += " (the last line has no newline: the file may be truncated)"
        return Record(index=index, line=number, data=None, error=error)
    except (ValueError, RecursionError) as exc:  # huge integers, absurd nesting
        error = f"line {number}: unreadable JSON: {_limit_message(exc)}"
        return Record(index=index, line=number, data=None, error=error)
    if not isinstance(value, dict):
        error = f"line {number}: a record must be a JSON object, got {_type_name(value)}"
        return Record(index=index, line=number, data=None, error=error)
    return Record(index=index, line=number, data=value)


# ---------------------------------------------------------------- JSON


def _read_json(file: Path) -> Iterator[Record]:
    # A JSON document has to be parsed whole; this is the one format that is not streamed.
    limit = _JSON_FILE_RECORDS * max_record_bytes()
    if (size := file.stat().st_size) > limit:
        raise DataError(
            f"{file.name}: a JSON array of {_mib(size)} is over the limit of {_mib(limit)} "
            "(a JSON document is parsed whole)",
            hint=f"write one record per line to a .jsonl file (streamed), or raise "
            f"{MAX_RECORD_ENV}",
        )
    with _open_binary(file) as fh:
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
            f"{file.name}: unreadable JSON: {_limit_message(exc)}",
            hint="use JSON Lines (.jsonl) so one bad record does not stop a run",
        ) from exc
    if not isinstance(value, list):
        raise DataError(
            f"{file.name}: expected a JSON array of records, got {_json_kind(value)}",
            hint="wrap the records in [...], or write one JSON object per line to a .jsonl file",
        )
    return _json_records(value)


def _json_records(values: list[Any]) -> Iterator[Record]:
    for index, value in enumerate(values):
        if isinstance(value, dict):
            yield Record(index=index, line=None, data=value)
        else:
            error = f"item #{index}: a record must be a JSON object, got {_type_name(value)}"
            yield Record(index=index, line=None, data=None, error=error)


# ---------------------------------------------------------------- CSV


def _read_csv(file: Path, list_fields: frozenset[str]) -> Iterator[Record]:
    # surrogateescape keeps reading past invalid UTF-8; the row that holds it becomes an error
    limit = max_record_bytes()
    with _open_binary(file) as fh:
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
                yield Record(index=index, line=start, data=None, error=_too_long(start, *exc.args))
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

    def __init__(self, fh: BinaryIO, limit: int) -> None:
        self._lines = _bounded_lines(fh, limit)
        self._limit = limit
        self.count = 0

    def __iter__(self) -> _CsvLines:
        return self

    def __next__(self) -> str:
        line, size = next(self._lines)
        self.count += 1
        if line is None:
            raise _Oversized(size, self._limit)
        if self.count == 1 and line.startswith(_BOM):
            line = line[len(_BOM) :]
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
        return f"invalid JSON list: {_json_message(exc)}"
    except (ValueError, RecursionError) as exc:
        return f"unreadable JSON list: {_limit_message(exc)}"
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


def _read_parquet(file: Path) -> Iterator[Record]:
    pa = _pyarrow("Parquet files")
    pq: Any = importlib.import_module("pyarrow.parquet")
    try:
        parquet = pq.ParquetFile(str(file))
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"{file.name}: cannot read as Parquet: {exc}") from exc

    def batches() -> Iterator[Any]:
        try:
            yield from parquet.iter_batches(batch_size=_PARQUET_BATCH_ROWS)
        finally:
            close = getattr(parquet, "close", None)
            if callable(close):
                close()

    return _arrow_records(batches(), pa.ArrowException, "Parquet file")


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


def _read_hf_folder(folder: Path) -> Iterator[Record]:
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


def _open_binary(file: Path) -> BinaryIO:
    try:
        return file.open("rb")
    except OSError as exc:
        raise DataError(f"cannot read {str(file)!r}: {exc.strerror}") from exc


def _json_message(exc: json.JSONDecodeError) -> str:
    # some messages end in "starting at", ready for a position
    return f"{exc.msg.removesuffix(' at')} at column {exc.colno}"


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    return f"a {_type_name(value)}"


def _limit_message(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).split(";")[0]
