"""The judge-call cache's SQLite database: the one file of stored judge calls (the wrapper that puts
it in front of any judge is :mod:`localjudge.judge.cache.caching`; keys, rows, schema and checksums
are :mod:`localjudge.judge.cache.rows`'s).

A call is keyed by what determines its output and nothing else (``cache_key``): the judge's
identity (model sha256, backend versions, decoding settings), the rendered messages and the output
schema. Only successful calls are stored; an error is an exception and leaves nothing behind.

The store is one SQLite file in WAL mode with a busy timeout, so several processes can read and
write it at once; each write commits immediately, so a killed run keeps every finished call.

The cache is derived data, so damage costs judge time, never verdicts:

- a file that is not a database, or one SQLite finds malformed (truncated, overwritten bytes:
  ``PRAGMA quick_check`` on opening), is moved aside to ``<name>.damaged-<UTC time>`` (kept for
  inspection, with its ``-wal``/``-shm``) and a new cache starts, with one line on stderr;
- an SQLite file that is not a localjudge cache, or one of a newer schema, is refused with a
  hint: it may be somebody's data, so it is left as it is;
- each row carries a checksum of its key and content; a row whose checksum or output does not
  match is dropped and the call is judged again, never answered from the damaged row.

Each call is also an entry of an audit log (schema version 5): the messages the judge saw, the
model's alias and sha256, the output schema's name, the metric and item that asked and the
protocol its asks were laid out by (from the request's
:class:`~localjudge.judge.protocol.CallOrigin`), tokens, time and when it was stored, plus how
often the cache answered it since. Message texts live once each in a ``prompts`` table keyed by
their sha256 (a metric's instructions are shared by all its calls); a row lists its messages as
``[[role, sha256], ...]``. A row's checksum covers its key, output, messages list, log fields and
stats; a prompt is checked against its own sha256. :mod:`localjudge.judge.cache.calllog` reads the
log.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import platformdirs

from localjudge.canonical import compact_json, sha256_text
from localjudge.errors import CacheError, DiskFullError, LocalJudgeError
from localjudge.judge.cache.rows import (
    MIGRATIONS,
    ROW_COLUMNS,
    SCHEMA_VERSION,
    SELECT_ROW,
    CachedCall,
    CallLog,
    checksum_ok,
    filter_sql,
    row_checksum,
    soft_from_json,
    stored_schema_version,
)
from localjudge.judge.protocol import (
    GenerationStats,
    Reading,
    SoftDecision,
    encode_soft,
)

#: environment variable that overrides the cache directory
CACHE_DIR_ENV = "LOCALJUDGE_CACHE_DIR"
#: file name of the cache inside the cache directory
CACHE_FILENAME = "calls.sqlite3"
#: seconds SQLite waits for another writer's lock before reporting "database is locked"
BUSY_TIMEOUT_S = 30.0

#: SQLite's words for a file it cannot read as a database (as opposed to a busy or full one)
_DAMAGE_WORDS = ("not a database", "malformed", "file is encrypted", "corrupt")
_LOCK_RETRIES = 5

T = TypeVar("T")


def default_cache_dir() -> Path:
    """``$LOCALJUDGE_CACHE_DIR`` when set, otherwise the platform's user cache directory."""
    override = os.environ.get(CACHE_DIR_ENV, "").strip()
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_cache_dir("localjudge"))


def default_cache_path() -> Path:
    """The cache file used when none is given: ``calls.sqlite3`` in :func:`default_cache_dir`."""
    return default_cache_dir() / CACHE_FILENAME


class Cache:
    """An SQLite file of judge calls, safe to share between processes.

    Opening creates the file and its parent directories when needed and applies any pending
    migrations. Use it as a context manager or call :meth:`close`.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        #: where a damaged file found on opening was moved (None: the file was sound)
        self.set_aside: Path | None = None
        #: rows dropped because their checksum or output did not match (judged again)
        self.damaged_rows = 0
        try:
            self._open()
        except CacheDamagedError as exc:
            self.close()
            self.set_aside = _set_aside(self.path)
            print(
                f"localjudge: cache {str(self.path)!r} is damaged ({exc.message}); moved it to "
                f"{str(self.set_aside)!r} and started a new cache",
                file=sys.stderr,
                flush=True,
            )
            self._open()

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # usable from any thread (an async adapter runs judge calls in worker threads);
            # self._lock makes every operation whole, one thread at a time
            self._conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise _cache_error(self.path, exc) from exc
        try:
            self._run(self._check)  # before anything writes to the file
            self.journal_mode = self._run(self._configure)
            self._run(self._migrate)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------ setup

    def _configure(self) -> str:
        conn = self._connection()
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
        conn.execute("PRAGMA synchronous = NORMAL")
        return mode

    def _check(self) -> None:
        """Refuse an SQLite file that is not a localjudge cache; raise
        :class:`CacheDamagedError` for one SQLite cannot read whole."""
        conn = self._connection()
        problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            detail = " ".join("; ".join(problems[:3]).split())
            raise CacheDamagedError(f"SQLite's check: {detail[:200]}")
        stored_schema_version(conn, self.path)

    def _migrate(self) -> None:
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            current = stored_schema_version(conn, self.path) or 0
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    conn.execute(statement)
            if current != SCHEMA_VERSION:
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _run(self, operation: Callable[[], T]) -> T:
        """Run an SQLite operation, retrying a few times when another process holds the lock
        past the busy timeout (or SQLite reports busy without waiting, as it can while a WAL
        file is recovered). Any other SQLite failure becomes a
        :class:`~localjudge.errors.CacheError`."""
        for attempt in range(_LOCK_RETRIES):
            try:
                with self._lock:
                    return operation()
            except sqlite3.OperationalError as exc:  # noqa: PERF203 (retrying is the point)
                message = str(exc).lower()
                if "disk is full" in message or ("disk i/o error" in message and _full(self.path)):
                    raise DiskFullError(f"the cache {str(self.path)!r}") from exc
                if attempt < _LOCK_RETRIES - 1 and ("locked" in message or "busy" in message):
                    time.sleep(0.05 * 2**attempt * (1 + random.random()))  # noqa: S311 (jitter)
                    continue
                raise _cache_error(self.path, exc) from exc
            except sqlite3.DatabaseError as exc:
                if any(word in str(exc).lower() for word in _DAMAGE_WORDS):
                    raise CacheDamagedError(str(exc)) from exc
                raise _cache_error(self.path, exc) from exc
            except sqlite3.Error as exc:
                raise _cache_error(self.path, exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Execute one statement (its own transaction in autocommit mode) and fetch all rows."""
        return self._run(lambda: self._connection().execute(sql, params).fetchall())

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise CacheError(f"cache {str(self.path)!r} is closed")
        return self._conn

    # ------------------------------------------------------------ access

    @property
    def schema_version(self) -> int:
        """The table-layout version recorded in the file."""
        rows = self._query("SELECT value FROM meta WHERE key = 'schema_version'")
        return int(rows[0][0])

    def get(self, key: str) -> CachedCall | None:
        """The stored call for ``key``, or ``None``."""
        rows = self._query(SELECT_ROW, (key,))
        if not rows:
            return None
        row = dict(zip(ROW_COLUMNS, rows[0], strict=True))
        if checksum_ok(row) is False:
            self.discard(key)
            return None
        stats = GenerationStats(
            prompt_tokens=int(row["prompt_tokens"]),
            evaluated_prompt_tokens=int(row["evaluated_prompt_tokens"]),
            completion_tokens=int(row["completion_tokens"]),
            seconds=float(row["seconds"]),
        )
        decisions, reading = soft_from_json(row["decisions"])
        return CachedCall(
            key=key,
            raw=str(row["raw"]),
            stats=stats,
            created_at=row["created_at"],
            decisions=decisions,
            reading=reading,
        )

    def put(
        self,
        key: str,
        raw: str,
        stats: GenerationStats,
        decisions: Sequence[SoftDecision] = (),
        log: CallLog | None = None,
        *,
        reading: Reading | None = None,
    ) -> None:
        """Store a call (with its call-log entry, when given), committed before this returns. A
        key already stored is left as it is."""
        prompts = [(sha256_text(m["content"]), m["content"]) for m in (log.messages if log else [])]
        row: dict[str, Any] = {
            "key": key,
            "raw": raw,
            # as SQLite gives them back, so that the checksum of what is read matches
            "prompt_tokens": int(stats.prompt_tokens),
            "evaluated_prompt_tokens": int(stats.evaluated_prompt_tokens),
            "completion_tokens": int(stats.completion_tokens),
            "seconds": float(stats.seconds),
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "decisions": compact_json(encode_soft(decisions, reading)),
            "messages": compact_json(
                [[m["role"], sha] for m, (sha, _) in zip(log.messages, prompts, strict=True)]
            )
            if log is not None
            else None,
            "model": log.model if log else None,
            "model_sha256": log.model_sha256 if log else None,
            "schema_name": log.schema_name if log else None,
            "metric": log.metric if log else None,
            "item_id": log.item_id if log else None,
            "protocol": log.protocol if log else None,
        }
        row["checksum"] = row_checksum(row)
        names = ", ".join(row)
        marks = ", ".join("?" * len(row))

        def store() -> None:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT OR IGNORE INTO prompts (sha256, text) VALUES (?, ?)", prompts
                )
                conn.execute(
                    f"INSERT OR IGNORE INTO calls ({names}) VALUES ({marks})",  # noqa: S608 (constant column names)
                    tuple(row.values()),
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

        self._run(store)

    def record_hit(self, key: str) -> None:
        """Count one answer from the cache for ``key`` (``hits``, ``last_hit_at``). Best effort:
        a cache that cannot be written to (a full disk) still answers, uncounted."""
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        with contextlib.suppress(LocalJudgeError):
            self._query(
                "UPDATE calls SET hits = hits + 1, last_hit_at = ? WHERE key = ?", (now, key)
            )

    def prune(self, *, older_than: datetime | None = None, model: str | None = None) -> int:
        """Delete the calls stored before ``older_than`` and/or made by ``model`` (its alias, or
        its sha256 or a prefix of at least 8 hex digits), and the prompts no call refers to any
        more; how many calls went. Calls stored before schema version 4 have no model."""
        if older_than is None and model is None:
            raise LocalJudgeError(
                "prune needs --older-than or --model", hint="to delete every call, use clear"
            )
        where, params = filter_sql(before=older_than, model=model)
        return self._delete(f"DELETE FROM calls WHERE {where}", params)  # noqa: S608 (constant SQL)

    def clear(self) -> int:
        """Delete every call and prompt; how many calls went."""
        return self._delete("DELETE FROM calls", ())

    def _delete(self, sql: str, params: tuple[Any, ...]) -> int:
        def delete() -> int:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                n = conn.execute(sql, params).rowcount
                conn.execute(
                    "DELETE FROM prompts WHERE sha256 NOT IN (SELECT json_extract(m.value, '$[1]')"
                    " FROM calls, json_each(calls.messages) AS m WHERE calls.messages IS NOT NULL)"
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return int(n)

        return self._run(delete)

    def vacuum(self) -> None:
        """Give the space of deleted rows back to the file system."""
        self._query("VACUUM")
        self._query("PRAGMA wal_checkpoint(TRUNCATE)")

    def discard(self, key: str) -> None:
        """Drop a damaged row, so that the call is judged and stored again."""
        self.damaged_rows += 1
        self._query("DELETE FROM calls WHERE key = ?", (key,))

    def keys(self) -> list[str]:
        """Every stored key, sorted."""
        return [str(row[0]) for row in self._query("SELECT key FROM calls ORDER BY key")]

    def __len__(self) -> int:
        return int(self._query("SELECT COUNT(*) FROM calls")[0][0])

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def close(self) -> None:
        """Close the file; calling it again does nothing."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Cache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Cache({str(self.path)!r})"


def resolve_cache_path(cache: str | os.PathLike[str] | None) -> Path:
    """The cache file ``cache`` names: a file, or a directory to hold it (default: the user
    cache directory, or ``$LOCALJUDGE_CACHE_DIR``), as ``--cache`` reads it."""
    path = Path(cache) if cache is not None else default_cache_dir()
    if path.is_dir() or path.suffix not in (".sqlite", ".sqlite3", ".db"):
        path = path / CACHE_FILENAME
    return path


def open_cache(cache: str | os.PathLike[str] | None) -> Cache:
    """The SQLite cache at ``cache``: a file, or a directory to hold it (default: the user cache
    directory, or ``$LOCALJUDGE_CACHE_DIR``)."""
    return Cache(resolve_cache_path(cache))


class CacheDamagedError(CacheError):
    """SQLite cannot read the cache file whole. Found on opening, the file is moved aside;
    later (damaged under a running process) it stops the run with this error."""

    def __init__(self, detail: str) -> None:
        super().__init__(
            f"cache file is damaged: {detail}",
            hint="run again (a damaged cache found on opening is moved aside), or use --no-cache",
        )


def _full(path: Path) -> bool:
    """Whether the file system of ``path`` has (almost) no space left."""
    try:
        return shutil.disk_usage(path.parent).free < 64 * 1024
    except OSError:
        return False


def _set_aside(path: Path) -> Path:
    """Rename a damaged cache file (and its WAL and shared-memory files) out of the way."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        source = path.with_name(path.name + suffix)
        if source.exists():
            source.replace(target.with_name(target.name + suffix))
    return target


def _cache_error(path: Path, exc: BaseException) -> CacheError:
    return CacheError(
        f"cache {str(path)!r}: {exc}",
        hint="run with --no-cache, give --cache another path, or delete the file",
    )
