"""The judge-call log kept in the cache, read without changing the file (``localjudge cache``).

Every call the cache stores is a log entry (:mod:`localjudge.judge.cache.database`, schema version
5): the messages the judge saw, its raw output, the model's alias and sha256, the schema, the metric
and item that asked and the protocol of its asks, tokens, time, when it was stored and how often the
cache answered it since. This
module lists, counts and exports those entries through a read-only SQLite connection, so browsing
never migrates, creates or writes a cache file; a file of an older schema is read as it is (its
calls simply lack the fields it did not record). Deleting is the cache's own business
(:meth:`~localjudge.judge.cache.database.Cache.prune`,
:meth:`~localjudge.judge.cache.database.Cache.clear`).
"""

from __future__ import annotations

import csv
import json
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from localjudge.canonical import compact_json, sha256_text
from localjudge.errors import CacheError, DiskFullError, UsageError, is_disk_full
from localjudge.judge.cache.database import BUSY_TIMEOUT_S
from localjudge.judge.cache.rows import checksum_ok, filter_sql, stored_schema_version

__all__ = [
    "EXPORT_FIELDS",
    "EXPORT_FORMATS",
    "CacheStats",
    "CallFilter",
    "Count",
    "LoggedCall",
    "cache_stats",
    "count_calls",
    "export_calls",
    "export_format",
    "iter_calls",
    "parse_age",
    "write_calls",
]

#: the file formats of :func:`export_calls`, by file extension
EXPORT_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}
#: the fields of an exported call, in order
EXPORT_FIELDS = (
    "key",
    "created_at",
    "model",
    "model_sha256",
    "metric",
    "item_id",
    "protocol",
    "schema",
    "messages",
    "raw_output",
    "decisions",
    "prompt_tokens",
    "evaluated_prompt_tokens",
    "completion_tokens",
    "seconds",
    "hits",
    "last_hit_at",
    "intact",
)
#: the columns read from ``calls`` (with their value in files of a schema that lacks them)
_COLUMNS = {
    "key": None,
    "raw": None,
    "decisions": "NULL",
    "messages": "NULL",
    "model": "NULL",
    "model_sha256": "NULL",
    "schema_name": "NULL",
    "metric": "NULL",
    "item_id": "NULL",
    "protocol": "NULL",
    "prompt_tokens": None,
    "evaluated_prompt_tokens": None,
    "completion_tokens": None,
    "seconds": None,
    "created_at": None,
    "checksum": "NULL",
    "hits": "0",
    "last_hit_at": "NULL",
}
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


@dataclass(frozen=True)
class CallFilter:
    """Which stored calls to read: by model (alias, or sha256 or a prefix of at least 8 hex
    digits), metric, item id, and stored before a time; None matches everything."""

    model: str | None = None
    metric: str | None = None
    item: str | None = None
    before: datetime | None = None

    def sql(self) -> tuple[str, tuple[Any, ...]]:
        return filter_sql(before=self.before, model=self.model, metric=self.metric, item=self.item)


@dataclass(frozen=True)
class LoggedCall:
    """One stored judge call as the log shows it. Fields a cache of an older schema did not
    record are None (``messages``, ``model``, ``metric``, ...)."""

    key: str
    created_at: str | None
    model: str | None
    model_sha256: str | None
    metric: str | None
    item_id: str | None
    #: the protocol the call's asks were laid out by, ``{"name", "fingerprint"}``
    protocol: dict[str, str] | None
    schema: str | None
    #: the messages the judge saw, ``{"role", "content"}``; a content is None when its text is
    #: missing from the ``prompts`` table or does not match its sha256
    messages: list[dict[str, str | None]] | None
    raw_output: str
    #: the soft verdicts, ``[key, {value: probability}, chosen]`` each (None: not recorded)
    decisions: list[Any] | None
    prompt_tokens: int | None
    evaluated_prompt_tokens: int | None
    completion_tokens: int | None
    seconds: float | None
    hits: int
    last_hit_at: str | None
    #: whether the row matches its checksum and every message text its sha256 (None: the row
    #: predates checksums)
    intact: bool | None

    def as_dict(self) -> dict[str, Any]:
        """The call as an export row (:data:`EXPORT_FIELDS`, in order)."""
        return asdict(self)


@dataclass(frozen=True)
class Count:
    """Calls (and cache hits) of one model or metric."""

    name: str | None
    calls: int
    hits: int
    #: the model's sha256 (per-model counts only)
    sha256: str | None = None


@dataclass(frozen=True)
class CacheStats:
    """What a cache file holds."""

    path: Path
    exists: bool
    schema_version: int | None = None
    #: bytes on disk: the file and its ``-wal`` and ``-shm`` files
    size_bytes: int = 0
    calls: int = 0
    #: distinct message texts stored, and their UTF-8 bytes
    prompts: int = 0
    prompt_bytes: int = 0
    #: answers from the cache counted since schema version 4
    hits: int = 0
    oldest: str | None = None
    newest: str | None = None
    by_model: list[Count] = field(default_factory=list)
    by_metric: list[Count] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["path"] = str(self.path)
        return out


def parse_age(text: str) -> timedelta:
    """An age such as ``30d``, ``12h``, ``90m``, ``45s`` or ``2w``."""
    m = _AGE.match(text)
    if m is None:
        raise UsageError(
            f"{text!r} is not an age",
            hint="give a number and a unit: s, m (minutes), h, d or w, e.g. --older-than 30d",
        )
    return timedelta(**{_UNITS[m.group(2)]: float(m.group(1))})


def export_format(dest: str | Path, fmt: str | None = None) -> str:
    """``jsonl`` or ``csv``: ``fmt`` when given, else from the extension of ``dest``."""
    if fmt is not None:
        if fmt not in EXPORT_FORMATS.values():
            raise UsageError(f"unknown export format {fmt!r}; expected jsonl or csv")
        return fmt
    found = EXPORT_FORMATS.get(Path(dest).suffix.lower())
    if found is None:
        raise UsageError(
            f"cannot tell the export format of {str(dest)!r} from its extension",
            hint="name it .jsonl or .csv, or give --format jsonl|csv",
        )
    return found


# --------------------------------------------------------------------------- reading


@contextmanager
def _read_only(path: Path) -> Iterator[_Reader | None]:
    """A read-only view of the cache at ``path`` (None when there is no file)."""
    if not path.is_file():
        yield None
        return
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S
        )
    except sqlite3.Error as exc:
        raise _read_error(path, exc) from exc
    try:
        yield _Reader(path, conn)
    except sqlite3.Error as exc:
        raise _read_error(path, exc) from exc
    finally:
        conn.close()


class _Reader:
    """Queries on one open, read-only cache file."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self.conn = conn
        version = stored_schema_version(conn, path)
        tables = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
        if version is None or "calls" not in tables:
            raise CacheError(
                f"{str(path)!r} is not a localjudge cache", hint="give --cache another path"
            )
        self.version = version
        self.has_prompts = "prompts" in tables
        present = {str(r[1]) for r in conn.execute("PRAGMA table_info(calls)")}
        exprs = [
            name if name in present or default is None else f"{default} AS {name}"
            for name, default in _COLUMNS.items()
        ]
        #: every call with every column this module reads, whatever the file's schema
        self.calls = f"(SELECT rowid AS seq, {', '.join(exprs)} FROM calls)"  # noqa: S608 (constants)
        self._texts: dict[str, str | None] = {}

    def select(self, where: CallFilter, *, newest_first: bool, limit: int | None) -> Iterator[Any]:
        condition, params = where.sql()
        order = "DESC" if newest_first else "ASC"
        sql = (
            f"SELECT * FROM {self.calls} WHERE {condition} ORDER BY created_at {order}, seq {order}"  # noqa: S608 (constants)
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        cursor = self.conn.execute(sql, params)
        names = [d[0] for d in cursor.description]
        for values in cursor:
            yield dict(zip(names, values, strict=True))

    def text(self, sha: str) -> str | None:
        """The message text stored under ``sha`` (None: missing, or not matching its hash)."""
        if sha not in self._texts:
            if len(self._texts) > 512:  # instructions repeat, item data does not: stay small
                self._texts.clear()
            row = (
                self.conn.execute("SELECT text FROM prompts WHERE sha256 = ?", (sha,)).fetchone()
                if self.has_prompts
                else None
            )
            text = str(row[0]) if row is not None else None
            self._texts[sha] = text if text is not None and sha256_text(text) == sha else None
        return self._texts[sha]

    def logged(self, row: dict[str, Any]) -> LoggedCall:
        intact = checksum_ok(row)
        messages: list[dict[str, str | None]] | None = None
        if row["messages"] is not None:
            messages = []
            for role, sha in json.loads(row["messages"]):
                content = self.text(sha)
                messages.append({"role": role, "content": content})
                if content is None:
                    intact = False
        return LoggedCall(
            key=row["key"],
            created_at=row["created_at"],
            model=row["model"],
            model_sha256=row["model_sha256"],
            metric=row["metric"],
            item_id=row["item_id"],
            protocol=json.loads(row["protocol"]) if row["protocol"] else None,
            schema=row["schema_name"],
            messages=messages,
            raw_output=row["raw"],
            decisions=json.loads(row["decisions"]) if row["decisions"] else None,
            prompt_tokens=row["prompt_tokens"],
            evaluated_prompt_tokens=row["evaluated_prompt_tokens"],
            completion_tokens=row["completion_tokens"],
            seconds=row["seconds"],
            hits=int(row["hits"] or 0),
            last_hit_at=row["last_hit_at"],
            intact=intact,
        )


def iter_calls(
    path: Path,
    where: CallFilter | None = None,
    *,
    newest_first: bool = True,
    limit: int | None = None,
) -> Iterator[LoggedCall]:
    """The stored calls of the cache file ``path`` that ``where`` matches, newest first (or
    oldest first), at most ``limit``; nothing when there is no file. Streams: memory does not
    grow with the cache."""
    with _read_only(path) as reader:
        if reader is None:
            return
        for row in reader.select(where or CallFilter(), newest_first=newest_first, limit=limit):
            yield reader.logged(row)


def count_calls(path: Path, where: CallFilter | None = None) -> int:
    """How many stored calls ``where`` matches."""
    with _read_only(path) as reader:
        if reader is None:
            return 0
        condition, params = (where or CallFilter()).sql()
        sql = f"SELECT COUNT(*) FROM {reader.calls} WHERE {condition}"  # noqa: S608 (constants)
        return int(reader.conn.execute(sql, params).fetchone()[0])


def cache_stats(path: Path) -> CacheStats:
    """Rows, size on disk, and calls and hits per model and per metric of the cache ``path``."""
    size = sum(
        p.stat().st_size
        for suffix in ("", "-wal", "-shm")
        if (p := path.with_name(path.name + suffix)).is_file()
    )
    with _read_only(path) as reader:
        if reader is None:
            return CacheStats(path=path, exists=False)
        conn, calls = reader.conn, reader.calls
        # every f-string below puts only this module's constant SQL together (S608)
        n, hits, oldest, newest = conn.execute(
            f"SELECT COUNT(*), SUM(hits), MIN(created_at), MAX(created_at) FROM {calls}"  # noqa: S608
        ).fetchone()
        prompts, prompt_bytes = (
            conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(text AS BLOB))), 0) FROM prompts"
            ).fetchone()
            if reader.has_prompts
            else (0, 0)
        )
        by_model = [
            Count(name=m, sha256=sha, calls=int(c), hits=int(h))
            for m, sha, c, h in conn.execute(
                f"SELECT model, model_sha256, COUNT(*), SUM(hits) FROM {calls}"  # noqa: S608
                " GROUP BY model, model_sha256 ORDER BY COUNT(*) DESC, model"
            )
        ]
        by_metric = [
            Count(name=m, calls=int(c), hits=int(h))
            for m, c, h in conn.execute(
                f"SELECT metric, COUNT(*), SUM(hits) FROM {calls}"  # noqa: S608
                " GROUP BY metric ORDER BY COUNT(*) DESC, metric"
            )
        ]
        return CacheStats(
            path=path,
            exists=True,
            schema_version=reader.version,
            size_bytes=size,
            calls=int(n),
            prompts=int(prompts),
            prompt_bytes=int(prompt_bytes),
            hits=int(hits or 0),
            oldest=oldest,
            newest=newest,
            by_model=by_model,
            by_metric=by_metric,
        )


# --------------------------------------------------------------------------- export


def write_calls(calls: Iterator[LoggedCall], out: TextIO, fmt: str) -> int:
    """Write ``calls`` to ``out`` as JSONL (one object per line) or CSV (a header, then one row
    per call; ``messages`` and ``decisions`` as JSON text, None as an empty cell); how many."""
    n = 0
    if fmt == "jsonl":
        for call in calls:
            out.write(compact_json(call.as_dict()) + "\n")
            n += 1
        return n
    writer = csv.writer(out)
    writer.writerow(EXPORT_FIELDS)
    for call in calls:
        row = call.as_dict()
        writer.writerow([_cell(row[name]) for name in EXPORT_FIELDS])
        n += 1
    return n


def export_calls(
    path: Path, dest: Path, *, fmt: str | None = None, where: CallFilter | None = None
) -> int:
    """Write the calls of the cache ``path`` that ``where`` matches to ``dest``, oldest first
    (JSONL or CSV, by ``fmt`` or the extension); the file appears whole or not at all. How many
    calls it holds."""
    kind = export_format(dest, fmt)
    tmp = dest.with_name(dest.name + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8", newline="") as out:
            n = write_calls(iter_calls(path, where, newest_first=False), out, kind)
        tmp.replace(dest)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if is_disk_full(exc):
            raise DiskFullError(str(dest)) from exc
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return n


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return compact_json(value)
    return value


def _read_error(path: Path, exc: BaseException) -> CacheError:
    return CacheError(
        f"cannot read the cache {str(path)!r}: {exc}",
        hint="run `localjudge doctor`; a damaged cache is moved aside by the next eval",
    )
