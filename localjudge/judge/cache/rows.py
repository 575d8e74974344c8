"""The judge-call cache's format: what a call is keyed by (:func:`cache_key`), what is stored and
logged with it, the SQLite schema and its migrations, the checksum of a row, and the SQL
filters over rows that ``localjudge cache`` and pruning share.

Pure data and functions (no open connection is kept): :mod:`localjudge.judge.cache.database`
writes and reads rows in this format, :mod:`localjudge.judge.cache.calllog` reads them without
changing the file.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from localjudge.canonical import canonical_json, compact_json, sha256_text
from localjudge.errors import CacheError
from localjudge.judge.protocol import (
    GenerationStats,
    JudgeIdentity,
    JudgeRequest,
    Reading,
    SoftDecision,
    as_messages,
    decode_soft,
)
from localjudge.judge.schemas import json_schema

#: the tag of the current key format (see :func:`cache_key`)
KEY_VERSION = "v1"
#: the version of the table layout this code reads and writes
SCHEMA_VERSION = 5


#: statements that bring a cache file from version ``n - 1`` to version ``n``
MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """
        CREATE TABLE IF NOT EXISTS calls (
            key TEXT PRIMARY KEY,
            raw TEXT NOT NULL,
            prompt_tokens INT,
            evaluated_prompt_tokens INT,
            completion_tokens INT,
            seconds REAL,
            created_at TEXT
        )
        """,
    ),
    # the soft verdicts of a call (JSON; null for calls stored before version 2)
    2: ("ALTER TABLE calls ADD COLUMN decisions TEXT",),
    # sha256 of the row's key, raw output and decisions (null for calls stored before version 3)
    3: ("ALTER TABLE calls ADD COLUMN checksum TEXT",),
    # the call log: what the judge saw and who asked (null for calls stored before version 4);
    # each message text once, keyed by its sha256; how often the cache answered the call
    4: (
        "CREATE TABLE IF NOT EXISTS prompts (sha256 TEXT PRIMARY KEY, text TEXT NOT NULL)",
        "ALTER TABLE calls ADD COLUMN messages TEXT",
        "ALTER TABLE calls ADD COLUMN model TEXT",
        "ALTER TABLE calls ADD COLUMN model_sha256 TEXT",
        "ALTER TABLE calls ADD COLUMN schema_name TEXT",
        "ALTER TABLE calls ADD COLUMN metric TEXT",
        "ALTER TABLE calls ADD COLUMN item_id TEXT",
        "ALTER TABLE calls ADD COLUMN hits INT NOT NULL DEFAULT 0",
        "ALTER TABLE calls ADD COLUMN last_hit_at TEXT",
        "CREATE INDEX IF NOT EXISTS calls_created_at ON calls (created_at)",
    ),
    # the protocol the call's asks were laid out by, {"name", "fingerprint"} as JSON (null for
    # calls stored before version 5, and for calls no metric of localjudge laid out)
    5: ("ALTER TABLE calls ADD COLUMN protocol TEXT",),
}
#: the tag of checksums that cover the protocol too (``c2:``: the call log and stats of version
#: 4; untagged: version 3's key and output)
CHECKSUM_TAG = "c3:"
_CHECKSUM_V4 = "c2:"


def stored_schema_version(conn: sqlite3.Connection, path: Path) -> int | None:
    """The schema version of the localjudge cache open on ``conn`` (None: a file with no tables
    yet). An SQLite file of other tables, or of a newer schema than this localjudge knows, is a
    :class:`CacheError`; the file is left as it is."""
    tables = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
    row = (
        conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if "meta" in tables
        else None
    )
    if row is None:
        if tables:
            raise CacheError(
                f"{str(path)!r} is an SQLite file but not a localjudge cache (tables: "
                f"{', '.join(sorted(tables)[:5])}); localjudge leaves it as it is",
                hint="give --cache another path, or run with --no-cache",
            )
        return None
    version = int(row[0])
    if version > SCHEMA_VERSION:
        raise CacheError(
            f"cache {str(path)!r} has schema version {version}, newer than this localjudge "
            f"understands ({SCHEMA_VERSION})",
            hint="upgrade localjudge, or use another cache file",
        )
    return version


def cache_key(
    identity: JudgeIdentity,
    messages: list[dict[str, str]],
    schema: type[BaseModel],
    shared_chars: int = 0,
    read_chars: tuple[int, int] | None = None,
    *,
    branch_chars: tuple[int, ...] = (),
) -> str:
    """The cache key of one judge call: ``"v1:"`` + the sha256 of canonical JSON (sorted keys,
    compact separators) of the judge identity, the messages, the schema's JSON schema and,
    when the request marks them, where its shared part ends and its branch points (they change
    tokenization) and the span it reads (it changes the output)."""
    payload: dict[str, Any] = {
        "identity": identity.as_dict(),
        "messages": messages,
        "schema": json_schema(schema),
    }
    if shared_chars:
        payload["shared_chars"] = shared_chars
    if read_chars is not None:
        payload["read_chars"] = list(read_chars)
    if branch_chars:
        payload["branch_chars"] = list(branch_chars)
    return f"{KEY_VERSION}:{sha256_text(canonical_json(payload))}"


@dataclass(frozen=True)
class CachedCall:
    """One stored judge call."""

    key: str
    raw: str
    stats: GenerationStats
    #: when it was stored, ISO 8601 in UTC
    created_at: str | None
    #: the call's soft verdicts (empty for judges that have none, and for old entries)
    decisions: tuple[SoftDecision, ...] = ()
    #: the reading of the span the call read (None: none)
    reading: Reading | None = None


@dataclass(frozen=True)
class CallLog:
    """What a stored call records for auditing beside its output: the messages the judge saw,
    the judge and the schema, and the metric and item that asked (None when not known)."""

    messages: list[dict[str, str]]
    model: str
    model_sha256: str
    schema_name: str
    metric: str | None = None
    item_id: str | None = None
    #: the protocol the asks were laid out by, ``{"fingerprint", "name"}`` as canonical JSON
    protocol: str | None = None

    @classmethod
    def of(cls, request: JudgeRequest, identity: JudgeIdentity) -> CallLog:
        """The log entry of ``request`` made to the judge with ``identity``."""
        origin = request.origin
        made = origin.protocol if origin is not None else None
        return cls(
            messages=as_messages(request.messages),
            model=identity.model,
            model_sha256=identity.sha256,
            schema_name=request.schema.__name__,
            metric=origin.metric if origin is not None else None,
            item_id=origin.item_id if origin is not None else None,
            protocol=None if made is None else canonical_json(dict(zip(_NAMES, made, strict=True))),
        )


_NAMES = ("name", "fingerprint")


def soft_from_json(text: str | None) -> tuple[tuple[SoftDecision, ...], Reading | None]:
    """A stored call's soft verdicts and reading
    (:func:`~localjudge.judge.protocol.encode_soft`)."""
    return decode_soft(json.loads(text)) if text else ((), None)


#: the columns of a stored call that its checksum covers, in checksum order
_CHECKED = (
    "key",
    "raw",
    "decisions",
    "messages",
    "model",
    "model_sha256",
    "schema_name",
    "metric",
    "item_id",
    "prompt_tokens",
    "evaluated_prompt_tokens",
    "completion_tokens",
    "seconds",
    "created_at",
    "protocol",
)
#: the columns a reader of one call selects (``hits`` and ``last_hit_at`` are counters, unchecked)
ROW_COLUMNS = (*_CHECKED, "checksum")
SELECT_ROW = f"SELECT {', '.join(ROW_COLUMNS)} FROM calls WHERE key = ?"  # noqa: S608 (constants)


def row_checksum(row: Mapping[str, Any]) -> str:
    """The checksum of a stored call: tagged, over every column of :data:`_CHECKED`."""
    return CHECKSUM_TAG + sha256_text(compact_json([row[c] for c in _CHECKED]))


def checksum_ok(row: Mapping[str, Any]) -> bool | None:
    """Whether a stored call matches its checksum (a tagged one covers the call log and stats,
    ``c3:`` the protocol too, one of schema version 3 its key, output and decisions); None for
    a row stored before checksums."""
    check = row["checksum"]
    if check is None:
        return None
    if str(check).startswith(CHECKSUM_TAG):
        return bool(check == row_checksum(row))
    if str(check).startswith(_CHECKSUM_V4):  # version 4's: every column but the protocol
        body = compact_json([row[c] for c in _CHECKED[:-1]])
        return bool(check == _CHECKSUM_V4 + sha256_text(body))
    return bool(check == sha256_text(compact_json([row["key"], row["raw"], row["decisions"]])))


def filter_sql(
    *,
    before: datetime | None = None,
    model: str | None = None,
    metric: str | None = None,
    item: str | None = None,
) -> tuple[str, tuple[Any, ...]]:
    """A WHERE condition on stored calls (``"1"`` when nothing is asked) and its parameters:
    stored before ``before``, made by ``model`` (see :func:`model_params`), for ``metric``, about
    the item with id ``item``."""
    clauses: list[str] = []
    params: list[Any] = []
    if before is not None:
        clauses.append("created_at < ?")
        params.append(before.astimezone(timezone.utc).isoformat(timespec="seconds"))
    if model is not None:
        clauses.append(f"({MODEL_MATCH})")
        params += model_params(model)
    for column, value in (("metric", metric), ("item_id", item)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    return " AND ".join(clauses) or "1", tuple(params)


#: the SQL condition that a call was made by a model given as alias or sha256 (prefix)
MODEL_MATCH = "model = ? OR (? AND model_sha256 LIKE ? || '%')"


def model_params(model: str) -> tuple[Any, ...]:
    """The parameters of :data:`MODEL_MATCH` for ``model``: an alias, or a sha256 or a prefix of
    at least 8 hex digits of it."""
    text = model.strip().lower()
    is_sha = len(text) >= 8 and all(c in "0123456789abcdef" for c in text)
    return (model, is_sha, text)
