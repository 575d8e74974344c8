"""The judge-call cache: every call a judge made, kept in SQLite, answered again from there.

Owns :mod:`~localjudge.judge.cache.database` (:class:`Cache`: the SQLite file, its locking and
repair; where it lives by default), :mod:`~localjudge.judge.cache.rows` (what a call is keyed by,
its stored row, the schema and its checksums), :mod:`~localjudge.judge.cache.caching`
(:class:`CachingJudge`, the wrapper that puts a cache in front of any judge) and
:mod:`~localjudge.judge.cache.calllog` (the read-only call log behind ``localjudge cache``).

Offers: :class:`Cache`, :func:`open_cache`, :func:`resolve_cache_path`, :func:`default_cache_dir`,
:func:`default_cache_path`, :data:`CACHE_FILENAME`, :class:`CachingJudge`; and the call log's
:class:`CallFilter`, :class:`LoggedCall`, :func:`iter_calls`, :func:`count_calls`,
:func:`cache_stats`, :func:`parse_age`, :func:`export_calls` and :func:`write_calls`.
"""

from localjudge.judge.cache.caching import CachingJudge
from localjudge.judge.cache.calllog import (
    CallFilter,
    LoggedCall,
    cache_stats,
    count_calls,
    export_calls,
    iter_calls,
    parse_age,
    write_calls,
)
from localjudge.judge.cache.database import (
    CACHE_FILENAME,
    Cache,
    default_cache_dir,
    default_cache_path,
    open_cache,
    resolve_cache_path,
)

__all__ = [
    "CACHE_FILENAME",
    "Cache",
    "CachingJudge",
    "CallFilter",
    "LoggedCall",
    "cache_stats",
    "count_calls",
    "default_cache_dir",
    "default_cache_path",
    "export_calls",
    "iter_calls",
    "open_cache",
    "parse_age",
    "resolve_cache_path",
    "write_calls",
]
