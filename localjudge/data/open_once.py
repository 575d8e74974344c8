"""A data file opened once for a whole run: :class:`DataFile`.

A run reads its data more than once: the survey (how many records, which metrics apply) before
the judge loads, the records it judges, and the file's sha256 for the run's manifest. Each of
these used to open the file again. A :class:`DataFile` opens it once; every pass over its
records reads that one handle from the file's start, and the sha256 is taken from the bytes a
pass reads in order, so a run that reads the file once hashes it on the way (a pass cut short
by ``--limit`` is read on to the end when the sha256 is asked for). A JSON array is read and
parsed once, when the file is opened; a Parquet file reads its batches out of order, so its
sha256 is a read of its own, through the same handle. A Hugging Face folder is many files,
read with pyarrow as :func:`~localjudge.data.tables.read_hf_folder` reads them.

Passes run one at a time: a new pass ends the one before it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

from localjudge.canonical import file_sha256
from localjudge.data.raw_records import Record, open_binary
from localjudge.data.readers import (
    LIST_FIELDS,
    checked_format,
    json_array,
    json_records,
    jsonl_records,
)
from localjudge.data.tables import csv_records, open_parquet, parquet_records, read_hf_folder

__all__ = ["DataFile"]

#: bytes read at a time when the sha256 reads on to the end of a file
_BLOCK = 1 << 20


class DataFile:
    """The records and the sha256 of one data file, opened once (see the module's docstring).

    Opening checks what :func:`~localjudge.data.readers.read_records` checks when it is
    called (the path, the format; a JSON array is parsed, a Parquet file's metadata read) and
    raises the same :class:`~localjudge.errors.DataError`; use it as a context manager, or
    :meth:`close` it."""

    def __init__(
        self,
        path: str | Path,
        *,
        fmt: str | None = None,
        list_fields: Collection[str] = LIST_FIELDS,
    ) -> None:
        self.path = Path(path)
        #: ``jsonl``, ``json``, ``csv``, ``parquet`` or ``hf``
        self.format = checked_format(self.path, fmt)
        self._list_fields = frozenset(list_fields)
        self._handle: _Handle | None = None
        self._json: list[Any] | None = None
        self._parquet: Any = None
        self._folder_sha256: str | None = None
        if self.format == "hf":
            read_hf_folder(self.path)  # its checks, now; the rows are read by each pass
            return
        self._handle = _Handle(open_binary(self.path))
        try:
            if self.format == "json":
                self._handle.rewind()
                self._json = json_array(self._handle, self.path)
            elif self.format == "parquet":
                self._parquet = open_parquet(self._handle, self.path.name)
        except BaseException:
            self.close()
            raise

    def records(self) -> Iterator[Record]:
        """A pass over the file's records, from the first."""
        if self._handle is None:
            return read_hf_folder(self.path)
        if self._json is not None:
            return json_records(self._json)
        if self._parquet is not None:
            return parquet_records(self._parquet)
        self._handle.rewind()
        if self.format == "jsonl":
            return jsonl_records(self._handle)
        return csv_records(self._handle, self._list_fields)

    @property
    def sha256(self) -> str:
        """The file's sha256 (a folder's: :func:`~localjudge.canonical.file_sha256`'s)."""
        if self._handle is not None:
            return self._handle.sha256()
        if self._folder_sha256 is None:
            self._folder_sha256 = file_sha256(self.path)
        return self._folder_sha256

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()

    def __enter__(self) -> DataFile:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class _Handle:
    """The data file's one open handle, as the readers (and pyarrow) read it: the bytes a pass
    reads in order from the file's start feed the file's sha256; a seek elsewhere (Parquet's
    reads) leaves the sha256 to a read of its own."""

    def __init__(self, fh: BinaryIO) -> None:
        self._fh = fh
        self._position = 0
        #: the sha256 of the bytes before ``_position``, while the pass reads them in order
        self._digest: Any = None
        self._sha256: str | None = None

    def rewind(self) -> None:
        """Start a pass at the file's start (hashing it, until the sha256 is known)."""
        self.seek(0)
        self._digest = hashlib.sha256() if self._sha256 is None else None

    def read(self, size: int = -1, /) -> bytes:
        return self._took(self._fh.read(size))

    def readline(self, size: int = -1, /) -> bytes:
        return self._took(self._fh.readline(size))

    def seek(self, offset: int, whence: int = 0, /) -> int:
        position = self._fh.seek(offset, whence)
        if position != self._position:
            self._digest = None  # read out of order: this pass cannot hash the file
        self._position = position
        return position

    def tell(self) -> int:
        return self._position

    def sha256(self) -> str:
        """The file's sha256: the pass's bytes so far and the rest of the file, or, when no
        pass read it in order, the whole file read now."""
        if self._sha256 is None:
            if self._digest is None:
                self.rewind()
            while self._took(self._fh.read(_BLOCK)):
                pass  # the rest of the file, through the digest
            self._sha256 = self._digest.hexdigest()
            self._digest = None
        return self._sha256

    def _took(self, data: bytes) -> bytes:
        if self._digest is not None:
            self._digest.update(data)
        self._position += len(data)
        return data

    # what pyarrow asks of a file object besides read, seek and tell

    @property
    def closed(self) -> bool:
        return self._fh.closed

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def close(self) -> None:
        self._fh.close()
