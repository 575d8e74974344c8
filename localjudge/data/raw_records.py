"""A raw record, as read from a data file (:class:`Record`: its fields or the error that made it
unreadable), and what every reader shares: the record size limit and
its messages, bounded line reading, JSON error wording.

Below the readers (:mod:`localjudge.data.readers` for JSONL and JSON,
:mod:`localjudge.data.tables` for CSV, Parquet and Hugging Face folders).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from localjudge.errors import DataError

__all__ = [
    "BOM",
    "MAX_RECORD_BYTES",
    "MAX_RECORD_ENV",
    "ByteReader",
    "Record",
    "bounded_lines",
    "json_kind",
    "json_message",
    "limit_message",
    "max_record_bytes",
    "mib",
    "open_binary",
    "too_long",
    "type_name",
]


BOM = b"\xef\xbb\xbf"
#: environment variable that overrides :data:`MAX_RECORD_BYTES`
MAX_RECORD_ENV = "LOCALJUDGE_MAX_RECORD_BYTES"
#: a JSONL line or CSV line longer than this is a per-record error, read past in bounded
#: chunks (never held whole); a JSON array file may be this many times larger
MAX_RECORD_BYTES = 32 * 1024 * 1024
_SKIP_CHUNK = 1024 * 1024


def max_record_bytes() -> int:
    """The record size limit in force: ``$LOCALJUDGE_MAX_RECORD_BYTES`` or the default."""
    value = os.environ.get(MAX_RECORD_ENV, "").strip()
    try:
        return max(1024, int(value)) if value else MAX_RECORD_BYTES
    except ValueError:
        return MAX_RECORD_BYTES


def too_long(number: int, size: int, limit: int) -> str:
    return (
        f"line {number}: the record is {mib(size)}, over the limit of {mib(limit)} "
        f"(set {MAX_RECORD_ENV} to raise it)"
    )


def mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size} bytes"


class ByteReader(Protocol):
    """What the readers read a file through: an open binary file, or a run's one handle on its
    data file (:class:`~localjudge.data.open_once.DataFile`)."""

    def read(self, size: int = -1, /) -> bytes: ...

    def readline(self, size: int = -1, /) -> bytes: ...


def bounded_lines(fh: ByteReader, limit: int) -> Iterator[tuple[bytes | None, int]]:
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


def open_binary(file: Path) -> BinaryIO:
    try:
        return file.open("rb")
    except OSError as exc:
        raise DataError(f"cannot read {str(file)!r}: {exc.strerror}") from exc


def json_message(exc: json.JSONDecodeError) -> str:
    # some messages end in "starting at", ready for a position
    return f"{exc.msg.removesuffix(' at')} at column {exc.colno}"


def type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    return f"a {type_name(value)}"


def limit_message(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return str(exc).split(";")[0]
