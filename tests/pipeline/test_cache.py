"""The SQLite cache and the caching judge, driven by the scripted judge."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import platformdirs
import pytest

from localjudge.errors import ConstraintError, LocalJudgeError
from localjudge.judge.cache.caching import CachingJudge
from localjudge.judge.cache.database import Cache, default_cache_dir
from localjudge.judge.cache.rows import SCHEMA_VERSION, CachedCall, cache_key
from localjudge.judge.protocol import (
    GenerationStats,
    Judge,
    JudgeIdentity,
    SoftDecision,
    as_messages,
)
from localjudge.judge.schemas import StrictModel, text
from localjudge.testing import ScriptedJudge

ROOT = Path(__file__).resolve().parents[2]


class Verdict(StrictModel):
    label: text(10, ascii_only=True)  # type: ignore[valid-type]


class OtherVerdict(StrictModel):
    label: text(20, ascii_only=True)  # type: ignore[valid-type]


IDENTITY = JudgeIdentity(
    model="m", sha256="a" * 64, backend="llama.cpp 0.3.16", settings={"seed": 0, "n_ctx": 2048}
)
MESSAGES = [{"role": "system", "content": "judge"}, {"role": "user", "content": "is it?"}]
STATS = GenerationStats(
    prompt_tokens=12, evaluated_prompt_tokens=5, completion_tokens=7, seconds=0.25
)


# ---------------------------------------------------------------- default dir


def test_default_cache_dir_from_env(monkeypatch, tmp_path):
    monkeypatch.setenv("LOCALJUDGE_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"


def test_default_cache_dir_platform(monkeypatch):
    monkeypatch.delenv("LOCALJUDGE_CACHE_DIR", raising=False)
    assert default_cache_dir() == Path(platformdirs.user_cache_dir("localjudge"))


def test_default_cache_path_is_used(monkeypatch, tmp_path):
    monkeypatch.setenv("LOCALJUDGE_CACHE_DIR", str(tmp_path / "nested" / "dir"))
    with Cache() as cache:
        assert cache.path == tmp_path / "nested" / "dir" / "calls.sqlite3"
    assert cache.path.is_file()


# ---------------------------------------------------------------- keys


def test_key_format_and_stability():
    key = cache_key(IDENTITY, MESSAGES, Verdict)
    assert key.startswith("v1:")
    assert len(key) == 3 + 64
    assert key == cache_key(IDENTITY, [dict(m) for m in MESSAGES], Verdict)


def test_key_independent_of_dict_insertion_order():
    reordered_identity = JudgeIdentity(
        model="m", sha256="a" * 64, backend="llama.cpp 0.3.16", settings={"n_ctx": 2048, "seed": 0}
    )
    reordered_messages = [{"content": m["content"], "role": m["role"]} for m in MESSAGES]
    assert cache_key(reordered_identity, reordered_messages, Verdict) == cache_key(
        IDENTITY, MESSAGES, Verdict
    )


def test_key_changes_with_everything_that_changes_the_output():
    base = cache_key(IDENTITY, MESSAGES, Verdict)
    variants = [
        cache_key(IDENTITY, [*MESSAGES[:1], {"role": "user", "content": "is it!"}], Verdict),
        cache_key(IDENTITY, MESSAGES[1:], Verdict),
        cache_key(IDENTITY, MESSAGES, OtherVerdict),
        cache_key(IDENTITY, MESSAGES, Verdict, branch_chars=(3,)),
        cache_key(
            JudgeIdentity(model="m", sha256="b" * 64, backend=IDENTITY.backend, settings={}),
            MESSAGES,
            Verdict,
        ),
        cache_key(
            JudgeIdentity(
                model="m",
                sha256="a" * 64,
                backend="llama.cpp 0.3.16",
                settings={"seed": 1, "n_ctx": 2048},
            ),
            MESSAGES,
            Verdict,
        ),
        cache_key(
            JudgeIdentity(
                model="m", sha256="a" * 64, backend="llama.cpp 0.3.17", settings=IDENTITY.settings
            ),
            MESSAGES,
            Verdict,
        ),
    ]
    assert len({base, *variants}) == 1 + len(variants)


# ---------------------------------------------------------------- the store


def test_put_get_roundtrip_and_len(tmp_path):
    with Cache(tmp_path / "c.sqlite3") as cache:
        assert len(cache) == 0
        assert cache.get("v1:x") is None
        cache.put("v1:x", '{"label":"yes"}', STATS)
        hit = cache.get("v1:x")
        assert isinstance(hit, CachedCall)
        assert (hit.key, hit.raw, hit.stats) == ("v1:x", '{"label":"yes"}', STATS)
        assert hit.created_at is not None
        assert hit.created_at.endswith("+00:00")
        assert len(cache) == 1
        assert "v1:x" in cache
        assert "v1:y" not in cache


def test_put_existing_key_is_ignored(tmp_path):
    with Cache(tmp_path / "c.sqlite3") as cache:
        cache.put("k", "first", STATS)
        cache.put("k", "second", GenerationStats(1, 1, 1, 1.0))
        hit = cache.get("k")
        assert hit is not None
        assert (hit.raw, hit.stats) == ("first", STATS)
        assert len(cache) == 1


def test_persists_across_reopen_and_creates_parents(tmp_path):
    path = tmp_path / "a" / "b" / "c.sqlite3"
    with Cache(path) as cache:
        cache.put("k", "raw é 汤姆", STATS)
    with Cache(path) as cache:
        hit = cache.get("k")
        assert hit is not None
        assert (hit.raw, hit.stats) == ("raw é 汤姆", STATS)
        assert cache.schema_version == SCHEMA_VERSION == 5
        assert hit.decisions == ()  # a judge without soft verdicts stores none


def test_put_is_committed_at_once(tmp_path):
    path = tmp_path / "c.sqlite3"
    cache = Cache(path)
    cache.put("k", "raw", STATS)
    # another connection sees the row while the first is still open (nothing pending)
    other = sqlite3.connect(path)
    try:
        assert other.execute("SELECT raw FROM calls WHERE key = 'k'").fetchall() == [("raw",)]
    finally:
        other.close()
        cache.close()


def test_wal_mode_and_meta_table(tmp_path):
    path = tmp_path / "c.sqlite3"
    with Cache(path) as cache:
        assert cache.journal_mode == "wal"
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall() == [
            ("5",)
        ]
        columns = [row[1] for row in conn.execute("PRAGMA table_info(calls)")]
        assert columns == [
            "key",
            "raw",
            "prompt_tokens",
            "evaluated_prompt_tokens",
            "completion_tokens",
            "seconds",
            "created_at",
            "decisions",
            "checksum",
            "messages",
            "model",
            "model_sha256",
            "schema_name",
            "metric",
            "item_id",
            "hits",
            "last_hit_at",
            "protocol",
        ]
    finally:
        conn.close()


def test_a_version_1_cache_is_migrated_and_keeps_its_calls(tmp_path):
    path = tmp_path / "c.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE calls (key TEXT PRIMARY KEY, raw TEXT NOT NULL, prompt_tokens INT,
            evaluated_prompt_tokens INT, completion_tokens INT, seconds REAL, created_at TEXT);
        INSERT INTO calls VALUES ('old', '{}', 10, 5, 3, 0.5, '2026-01-01T00:00:00+00:00');
        """
    )
    conn.close()
    with Cache(path) as cache:
        assert cache.schema_version == SCHEMA_VERSION
        old = cache.get("old")
        assert old is not None
        assert (old.raw, old.stats.prompt_tokens, old.decisions) == ("{}", 10, ())
        probs = {"true": 0.75, "false": 0.25}
        cache.put("new", "{}", STATS, [SoftDecision("relevant", probs, "true")])
        assert cache.get("new").decisions == (SoftDecision("relevant", probs, "true"),)


def test_newer_schema_version_is_refused(tmp_path):
    path = tmp_path / "c.sqlite3"
    Cache(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(LocalJudgeError, match="schema version 99"):
        Cache(path)


def _filled(path, n=300):
    """A cache file of ``n`` calls, closed, with its WAL checkpointed into the file."""
    with Cache(path) as cache:
        for i in range(n):
            cache.put(f"k{i}", f'{{"i": {i}, "pad": "{"x" * 200}"}}', STATS)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path


def _damage(path, kind):
    data = path.read_bytes()
    if kind == "garbage":
        path.write_bytes(b"this is not sqlite" * 100)
    elif kind == "truncated":
        path.write_bytes(data[: len(data) // 2 + 100])
    elif kind == "overwritten pages":
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes(range(256)) * 16 + data[middle + 4096 :])
    elif kind == "overwritten header":
        path.write_bytes(b"\x00" * 100 + data[100:])


@pytest.mark.parametrize(
    "kind", ["garbage", "truncated", "overwritten pages", "overwritten header"]
)
def test_a_damaged_file_is_moved_aside_and_a_new_cache_starts(tmp_path, kind, capfd):
    path = _filled(tmp_path / "c.sqlite3")
    _damage(path, kind)
    before = path.read_bytes()
    with Cache(path) as cache:
        assert cache.set_aside is not None
        assert cache.set_aside.read_bytes() == before  # kept for inspection, unchanged
        assert len(cache) == 0
        cache.put("k", "raw", STATS)
        assert cache.get("k").raw == "raw"
    err = capfd.readouterr().err
    assert "is damaged" in err
    assert str(cache.set_aside) in err
    assert err.count("\n") == 1  # one line
    with Cache(path) as again:  # the new file is sound: nothing more is moved
        assert again.set_aside is None
        assert len(again) == 1


def test_a_sound_file_is_never_moved(tmp_path):
    path = _filled(tmp_path / "c.sqlite3", n=50)
    with Cache(path) as cache:
        assert cache.set_aside is None
        assert len(cache) == 50
    assert [p.name for p in tmp_path.iterdir() if "damaged" in p.name] == []


def test_a_foreign_sqlite_file_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "c.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(LocalJudgeError) as info:
        Cache(path)
    assert "not a localjudge cache" in info.value.message
    assert "invoices" in info.value.message
    assert "--no-cache" in info.value.hint
    assert path.read_bytes() == before
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["invoices"]
    conn.close()


@pytest.mark.parametrize("column", ["raw", "decisions", "key"])
def test_a_row_whose_content_changed_is_dropped_not_answered(tmp_path, column):
    path = tmp_path / "c.sqlite3"
    with Cache(path) as cache:
        cache.put("k", '{"verdict": 1}', STATS, [SoftDecision("v", {"1": 0.9, "0": 0.1}, "1")])
        cache.put("other", '{"verdict": 0}', STATS)
    conn = sqlite3.connect(path)
    if column == "key":  # a row that now answers for another call
        conn.execute("DELETE FROM calls WHERE key = 'other'")
        conn.execute("UPDATE calls SET key = 'other' WHERE key = 'k'")
    else:
        conn.execute(f"UPDATE calls SET {column} = replace({column}, '1', '0') WHERE key = 'k'")
    conn.commit()
    conn.close()
    with Cache(path) as cache:
        assert cache.get("k") is None
        assert cache.get("other") is None if column == "key" else cache.get("other") is not None
        assert cache.damaged_rows == 1
        cache.put("k", '{"verdict": 1}', STATS)  # the call judged again is stored again
        assert cache.get("k").raw == '{"verdict": 1}'


def test_closed_cache_refuses_use(tmp_path):
    cache = Cache(tmp_path / "c.sqlite3")
    cache.close()
    cache.close()  # idempotent
    with pytest.raises(LocalJudgeError, match="closed"):
        cache.get("k")


# ---------------------------------------------------------------- the caching judge


def test_second_call_is_a_hit(tmp_path):
    inner = ScriptedJudge([{"label": "yes"}])  # one reply: a second inner call would fail
    with Cache(tmp_path / "c.sqlite3") as cache:
        judge = CachingJudge(inner, cache)
        assert isinstance(judge, Judge)
        assert judge.identity == inner.identity
        first = judge.generate(MESSAGES, Verdict)
        second = judge.generate(MESSAGES, Verdict)
        assert len(inner.calls) == 1
        assert (judge.calls, judge.hits) == (1, 1)
        assert first.cached is False
        assert second.cached is True
        assert first.value == second.value == Verdict(label="yes")
        assert first.raw == second.raw == '{"label":"yes"}'
        assert second.stats == first.stats
        assert len(cache) == 1


def test_string_prompt_and_equivalent_messages_share_a_key(tmp_path):
    inner = ScriptedJudge([{"label": "yes"}])
    with Cache(tmp_path / "c.sqlite3") as cache:
        judge = CachingJudge(inner, cache)
        judge.generate("is it?", Verdict)
        hit = judge.generate([{"role": "user", "content": "is it?"}], Verdict)
        assert hit.cached
        assert len(inner.calls) == 1
        assert cache.keys() == [cache_key(inner.identity, as_messages("is it?"), Verdict)]


def test_different_prompt_schema_or_judge_miss(tmp_path):
    with Cache(tmp_path / "c.sqlite3") as cache:
        inner = ScriptedJudge([{"label": "a"}, {"label": "b"}, {"label": "c"}])
        judge = CachingJudge(inner, cache)
        assert judge.generate("one", Verdict).value.label == "a"
        assert judge.generate("two", Verdict).value.label == "b"
        assert judge.generate("one", OtherVerdict).value.label == "c"
        other = CachingJudge(ScriptedJudge([{"label": "d"}], model="other"), cache)
        assert other.generate("one", Verdict).value.label == "d"
        assert other.generate("one", Verdict).cached
        assert judge.generate("one", Verdict).value.label == "a"
        assert (judge.calls, judge.hits, other.calls, other.hits) == (3, 1, 1, 1)
        assert len(cache) == 4


def test_errors_are_not_cached(tmp_path):
    # the first scripted reply breaks the schema (too long), as an unconstrained model might
    inner = ScriptedJudge([{"label": "far too long a label"}, {"label": "ok"}])
    with Cache(tmp_path / "c.sqlite3") as cache:
        judge = CachingJudge(inner, cache)
        with pytest.raises(ConstraintError):
            judge.generate(MESSAGES, Verdict)
        assert len(cache) == 0
        fresh = judge.generate(MESSAGES, Verdict)
        assert (fresh.cached, fresh.value) == (False, Verdict(label="ok"))
        again = judge.generate(MESSAGES, Verdict)
        assert (again.cached, again.value) == (True, Verdict(label="ok"))
        assert len(cache) == 1
        assert len(inner.calls) == 1
        assert (judge.calls, judge.hits) == (1, 1)  # only completed calls count


def test_context_overflow_is_not_cached(tmp_path):
    inner = ScriptedJudge([{"label": "ok"}], n_ctx=5)
    with Cache(tmp_path / "c.sqlite3") as cache:
        judge = CachingJudge(inner, cache)
        with pytest.raises(LocalJudgeError, match="context window"):
            judge.generate("word " * 50, Verdict)
        assert len(cache) == 0


def test_hits_survive_reopen(tmp_path):
    path = tmp_path / "c.sqlite3"
    with Cache(path) as cache:
        original = CachingJudge(ScriptedJudge([{"label": "yes"}]), cache).generate(
            MESSAGES, Verdict
        )
    inner = ScriptedJudge([])  # no replies: any inner call would fail
    with Cache(path) as cache:
        replay = CachingJudge(inner, cache).generate(MESSAGES, Verdict)
    assert replay.cached
    assert (replay.value, replay.raw, replay.stats) == (
        original.value,
        original.raw,
        original.stats,
    )
    assert inner.calls == []


# ---------------------------------------------------------------- two processes at once

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from localjudge.judge.cache.database import Cache
    from localjudge.judge.protocol import GenerationStats

    path, name, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    (go.parent / f"ready-{name}").touch()
    while not go.exists():
        time.sleep(0.001)
    stats = GenerationStats(prompt_tokens=1, evaluated_prompt_tokens=1, completion_tokens=1,
                            seconds=0.5)
    keys = [f"own:{name}:{i}" for i in range(200)] + [f"shared:{i}" for i in range(50)]
    # interleave own and shared keys so both processes fight over the shared ones mid-run
    keys = [k for pair in zip(keys[:125], keys[125:]) for k in pair]
    with Cache(path) as cache:
        for key in keys:
            cache.put(key, "raw:" + key.split(":", 1)[1] if key.startswith("shared") else key,
                      stats)
    print("done", name)
    """
)


def test_two_processes_write_at_once(tmp_path):
    path = tmp_path / "shared.sqlite3"
    go = tmp_path / "go"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), name, str(go)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("p1", "p2")
    ]
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"ready-{name}").exists() for name in ("p1", "p2")):
        assert time.monotonic() < deadline, "writers did not start"
        assert all(p.poll() is None for p in procs), "a writer exited early"
        time.sleep(0.01)
    go.touch()  # both are imported and waiting: start writing at the same moment
    outputs = [p.communicate(timeout=120) for p in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert out.startswith("done")
        assert err == ""
    with Cache(path) as cache:
        assert len(cache) == 450
        keys = cache.keys()
        assert len(keys) == 450
        for key in keys:
            hit = cache.get(key)
            assert hit is not None
            expected = "raw:" + key.split(":", 1)[1] if key.startswith("shared") else key
            assert hit.raw == expected
            assert hit.stats == GenerationStats(1, 1, 1, 0.5)
        assert sum(k.startswith("shared:") for k in keys) == 50
