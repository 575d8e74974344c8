"""The cache as an auditable call log (schema 4): what an eval run records per call, the upgrade of
a version 3 file, the checksum over the new fields, ``localjudge cache ...`` and
``eval --raw-output``; driven by the scripted judge on temporary cache files."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pipeline_rules import rule_records, rule_reply

from localjudge.canonical import compact_json, sha256_text
from localjudge.cli import main
from localjudge.judge.cache.caching import CachingJudge
from localjudge.judge.cache.calllog import EXPORT_FIELDS, CallFilter, cache_stats, iter_calls
from localjudge.judge.cache.database import Cache, open_cache
from localjudge.judge.cache.rows import SCHEMA_VERSION, cache_key
from localjudge.judge.protocol import JudgeRequest
from localjudge.metrics import ContextPosition, ContextRecall, Metric
from localjudge.metrics.instructions import NO_PASSAGE, PASSAGE_SYSTEM, RECALL_SYSTEM
from localjudge.metrics.protocols import current_protocol
from localjudge.metrics.statements import split_statements
from localjudge.run.evaluate.file_run import eval_file
from localjudge.testing import ScriptedJudge, prompt_data

RECORDS = rule_records(3)
METRICS = ("recall", "position")


#: the runs here ask for reasons (off by default), so that the log holds every kind of call: the
#: decisions and the reason calls
REASONS = True


def metrics() -> list[Metric]:
    return [ContextRecall(reasons=REASONS), ContextPosition(reasons=REASONS)]


def calls_of(record: dict[str, Any], metric: str) -> int:
    """The judge calls one item makes for ``metric``: one decision per reference statement
    (recall) or per piece (position), then, with REASONS on, one reason per decision; position
    first asks the item's baseline call (no passage, no reason)."""
    if metric == "recall":
        return (1 + REASONS) * len(split_statements(record["reference"]))
    return 1 + (1 + REASONS) * len(record["retrieved_contexts"])


#: calls per metric over all RECORDS, per item over METRICS, and in all
PER_METRIC = {m: sum(calls_of(r, m) for r in RECORDS) for m in METRICS}
PER_ITEM = {r["id"]: sum(calls_of(r, m) for m in METRICS) for r in RECORDS}
N_CALLS = sum(PER_METRIC.values())


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCALJUDGE_CACHE_DIR", raising=False)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), "utf-8")
    return path


def run_eval(data: Path, cache: Path, *, model: str = "judge-a", out: str = "out") -> ScriptedJudge:
    """One eval of RECORDS x METRICS through a caching scripted judge; the scripted judge (its
    calls) is returned and the cache closed."""
    scripted = ScriptedJudge(rule_reply, model=model)
    judge = CachingJudge(scripted, open_cache(cache))
    try:
        eval_file(data, data.parent / out, judge=judge, metrics=metrics())
    finally:
        judge.cache.close()
    return scripted


def cli(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)


def raw_rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def execute(path: Path, sql: str, params: tuple[Any, ...] = ()) -> None:
    conn = sqlite3.connect(path)
    try:
        conn.execute(sql, params)
        conn.commit()
    finally:
        conn.close()


# ---------------------------------------------------------------- what a run records


def test_an_eval_run_logs_every_call_with_what_the_judge_saw(data, tmp_path):
    cache = tmp_path / "c.sqlite3"
    scripted = run_eval(data, cache)
    calls = list(iter_calls(cache, newest_first=False))
    assert len(calls) == len(scripted.calls) == N_CALLS
    assert sorted((c.metric, c.item_id) for c in calls) == sorted(
        (m, r["id"]) for m in METRICS for r in RECORDS for _ in range(calls_of(r, m))
    )
    by_prompt = {compact_json(c.messages): c for c in calls}
    for made in scripted.calls:  # each call the judge really made, exactly as it saw it
        logged = by_prompt[compact_json(made.messages)]
        assert logged.raw_output == made.raw
        assert logged.schema == made.schema.__name__
        assert logged.model == "judge-a"
        assert logged.model_sha256 == "0" * 64
        assert logged.prompt_tokens == sum(len(m["content"].split()) for m in made.messages)
        assert logged.completion_tokens == len(made.raw)
        assert logged.seconds is not None
        assert logged.seconds >= 0
        assert logged.created_at is not None
        assert logged.created_at.endswith("+00:00")
        assert (logged.hits, logged.intact) == (0, True)
        assert logged.protocol == current_protocol().as_json()  # what laid its asks out
        assert logged.key == cache_key(
            scripted.identity, made.messages, made.schema, made.shared_chars, made.read_chars
        )  # the key did not change
    # the instructions (one text per kind of call) are stored once, each call's data once
    distinct = {m["content"] for made in scripted.calls for m in made.messages}
    assert raw_rows(cache, "SELECT COUNT(*) FROM prompts") == [(len(distinct),)]
    assert {made.messages[0]["content"] for made in scripted.calls} == {
        RECALL_SYSTEM,
        PASSAGE_SYSTEM,
    }
    assert len(distinct) == 2 + len(calls)


def test_a_cached_rerun_hits_every_call_and_counts_the_hits(data, tmp_path):
    cache = tmp_path / "c.sqlite3"
    run_eval(data, cache)
    # the same judge as the first run, with no replies: any real call would fail
    judge = CachingJudge(ScriptedJudge([], model="judge-a"), open_cache(cache))
    with judge.cache:
        eval_file(data, tmp_path / "again", judge=judge, metrics=metrics())
    assert (judge.calls, judge.hits) == (0, N_CALLS)
    calls = list(iter_calls(cache))
    assert [c.hits for c in calls] == [1] * N_CALLS
    assert all(c.last_hit_at is not None and c.intact for c in calls)
    assert cache_stats(cache).hits == N_CALLS


def test_a_call_made_outside_a_run_has_no_metric_or_item(tmp_path):
    request = _request(ContextRecall())
    judge = CachingJudge(ScriptedJudge(rule_reply), open_cache(tmp_path / "c.sqlite3"))
    with judge.cache:
        judge.generate(request.messages, request.schema)
    [call] = iter_calls(tmp_path / "c.sqlite3")
    assert (call.metric, call.item_id, call.schema) == (None, None, request.schema.__name__)
    assert call.protocol is None  # no run of localjudge's metrics asked it
    assert call.messages == [dict(m) for m in request.messages]


def _item() -> Any:
    from localjudge.data.item import make_item  # noqa: PLC0415

    return make_item(RECORDS[0], index=0)


def _request(metric: Any) -> JudgeRequest:
    """The request of the first call ``metric`` makes for RECORDS[0]."""
    asks = metric.build(_item())
    assert isinstance(asks, list)
    return asks[0].request


# ---------------------------------------------------------------- version 3 and 4 files

#: the columns of a call at schema version 4 that its (``c2:``) checksum covers, in order
V4_CHECKED = ("key", "raw", "decisions", "messages", "model", "model_sha256", "schema_name",
              "metric", "item_id", "prompt_tokens", "evaluated_prompt_tokens",
              "completion_tokens", "seconds", "created_at")  # fmt: skip


def test_a_version_4_cache_is_upgraded_its_calls_intact_and_new_ones_name_the_protocol(
    data, tmp_path
):
    path = tmp_path / "c.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
        INSERT INTO meta VALUES ('schema_version', '4');
        CREATE TABLE prompts (sha256 TEXT PRIMARY KEY, text TEXT NOT NULL);
        CREATE TABLE calls (key TEXT PRIMARY KEY, raw TEXT NOT NULL, prompt_tokens INT,
            evaluated_prompt_tokens INT, completion_tokens INT, seconds REAL, created_at TEXT,
            decisions TEXT, checksum TEXT, messages TEXT, model TEXT, model_sha256 TEXT,
            schema_name TEXT, metric TEXT, item_id TEXT, hits INT NOT NULL DEFAULT 0,
            last_hit_at TEXT);
        """
    )
    row = dict.fromkeys(V4_CHECKED)
    row.update(key="old", raw="{}", decisions="[]", model="judge-a", model_sha256="0" * 64,
               prompt_tokens=10, evaluated_prompt_tokens=5, completion_tokens=3, seconds=0.5,
               created_at="2026-01-01T00:00:00+00:00")  # fmt: skip
    row["checksum"] = "c2:" + sha256_text(compact_json([row[c] for c in V4_CHECKED]))
    conn.execute(
        f"INSERT INTO calls ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
        tuple(row.values()),
    )
    conn.commit()
    conn.close()
    [old] = iter_calls(path)  # read as it is
    assert (old.intact, old.protocol) == (True, None)
    run_eval(data, path)  # opening migrates
    calls = {c.key: c for c in iter_calls(path)}
    assert cache_stats(path).schema_version == SCHEMA_VERSION == 5
    assert (calls["old"].intact, calls["old"].protocol) == (True, None)
    with Cache(path) as cache:
        assert cache.get("old") is not None  # version 4's checksum still holds
    new = [c for k, c in calls.items() if k != "old"]
    assert len(new) == N_CALLS
    assert all(c.intact and c.protocol == current_protocol().as_json() for c in new)


def _version_3_file(path: Path, key: str, raw: str) -> None:
    """A cache file as localjudge wrote it at schema version 3, with one call."""
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        PRAGMA journal_mode = WAL;
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
        INSERT INTO meta VALUES ('schema_version', '3');
        CREATE TABLE calls (key TEXT PRIMARY KEY, raw TEXT NOT NULL, prompt_tokens INT,
            evaluated_prompt_tokens INT, completion_tokens INT, seconds REAL, created_at TEXT,
            decisions TEXT, checksum TEXT);
        """
    )
    decisions = "[]"
    conn.execute(
        "INSERT INTO calls VALUES (?, ?, 10, 5, 3, 0.5, '2025-01-01T00:00:00+00:00', ?, ?)",
        (key, raw, decisions, sha256_text(compact_json([key, raw, decisions]))),
    )
    conn.commit()
    conn.close()


def test_a_version_3_cache_is_read_as_it_is_then_upgraded_in_place_and_still_hits(tmp_path):
    path = tmp_path / "c.sqlite3"
    request = _request(ContextRecall())
    scripted = ScriptedJudge([rule_reply])  # one reply: for the one call not cached
    raw = compact_json(rule_reply(list(request.messages), request.schema))
    key = cache_key(scripted.identity, list(request.messages), request.schema)
    _version_3_file(path, key, raw)
    before = path.read_bytes()

    # browsing reads it without upgrading it
    [old] = iter_calls(path)
    assert (old.key, old.raw_output, old.prompt_tokens, old.intact) == (key, raw, 10, True)
    assert (old.messages, old.model, old.metric, old.hits) == (None, None, None, 0)
    assert cache_stats(path).schema_version == 3
    assert path.read_bytes() == before

    judge = CachingJudge(scripted, Cache(path))  # opening migrates
    with judge.cache:
        assert judge.cache.schema_version == SCHEMA_VERSION == 5
        value = judge.generate(request.messages, request.schema)  # answered by the old row
        assert (value.raw, value.cached, judge.hits) == (raw, True, 1)
        other = _request(ContextPosition())
        judge.generate(other.messages, other.schema)
    calls = {c.key: c for c in iter_calls(path)}
    assert calls[key].hits == 1
    assert calls[key].messages is None  # what version 3 did not record stays unknown
    [new] = [c for k, c in calls.items() if k != key]
    assert (new.schema, new.intact, new.messages is not None) == (other.schema.__name__, True, True)


# ---------------------------------------------------------------- checksums


@pytest.mark.parametrize(
    ("column", "value"),
    [("metric", "'relevance'"), ("item_id", "'r9'"), ("model", "'other'"),
     ("messages", "replace(messages, 'system', 'user')"), ("completion_tokens", "1"),
     ("protocol", "replace(protocol, '\"1\"', '\"2\"')")],
)  # fmt: skip
def test_a_changed_log_field_drops_the_row_and_the_call_is_judged_again(
    data, tmp_path, column, value
):
    cache = tmp_path / "c.sqlite3"
    run_eval(data, cache)
    [(key,), *_] = raw_rows(
        cache, "SELECT key FROM calls WHERE item_id = 'r1' AND metric = 'recall' ORDER BY key"
    )
    execute(cache, f"UPDATE calls SET {column} = {value} WHERE key = ?", (key,))
    assert {c.key: c.intact for c in iter_calls(cache)}[key] is False
    assert sum(c.intact is True for c in iter_calls(cache)) == N_CALLS - 1
    with Cache(cache) as opened:
        assert opened.get(key) is None
        assert opened.damaged_rows == 1


def test_a_changed_prompt_text_is_shown_as_missing_not_as_what_the_judge_saw(data, tmp_path):
    cache = tmp_path / "c.sqlite3"
    run_eval(data, cache)
    # every call about r1 shows its passage 'yes fact 1.' (as a CONTEXT, a PASSAGE or in the
    # EXPECTED ANSWER) but its baseline call, which shows no passage and only the QUESTION; no
    # other item's call does
    execute(cache, "UPDATE prompts SET text = text || ' (edited)' WHERE text LIKE '%yes fact 1.%'")
    calls = list(iter_calls(cache))
    mine = [c for c in calls if c.item_id == "r1"]
    # position's only graded call is the baseline
    [base] = [c for c in mine if (c.metric, c.schema) == ("position", "GradeDecision")]
    assert base.intact is True
    assert base.messages is not None
    assert prompt_data(base.messages)["PASSAGE"] == NO_PASSAGE
    damaged = [c for c in mine if c is not base]
    assert len(damaged) == PER_ITEM["r1"] - 1
    for c in damaged:
        assert c.intact is False
        assert c.messages is not None
        assert c.messages[-1]["content"] is None
        assert c.messages[0]["content"] is not None  # the shared instructions are intact
    assert all(c.intact for c in calls if c.item_id != "r1")


# ---------------------------------------------------------------- localjudge cache: reading


def test_cache_path_follows_the_option_and_the_environment(tmp_path, monkeypatch):
    assert cli("cache", "path", "--cache", str(tmp_path / "x.sqlite3")).stdout == (
        f"{tmp_path / 'x.sqlite3'}\n"
    )
    (tmp_path / "dir").mkdir()
    assert cli("cache", "path", "--cache", str(tmp_path / "dir")).stdout == (
        f"{tmp_path / 'dir' / 'calls.sqlite3'}\n"
    )
    monkeypatch.setenv("LOCALJUDGE_CACHE_DIR", str(tmp_path / "env"))
    assert cli("cache", "path").stdout == f"{tmp_path / 'env' / 'calls.sqlite3'}\n"
    assert not (tmp_path / "env").exists()  # naming the file creates nothing


def test_read_only_commands_leave_the_file_as_it_is(data, tmp_path):
    cache = tmp_path / "c.sqlite3"
    run_eval(data, cache)
    before = (cache.read_bytes(), cache.stat().st_mtime_ns)
    for args in (
        ["path"],
        ["stats"],
        ["stats", "--json"],
        ["ls"],
        ["ls", "--metric", "recall", "--limit", "1"],
        ["export", str(tmp_path / "x.jsonl")],
        ["export", "-", "--format", "csv"],
        ["prune", "--older-than", "0s", "--dry-run"],
    ):
        result = cli("cache", *args, "--cache", str(cache))
        assert result.exit_code == 0, (args, result.output)
    assert (cache.read_bytes(), cache.stat().st_mtime_ns) == before
    assert len(list(iter_calls(cache))) == N_CALLS


def test_reading_a_missing_cache_creates_nothing(tmp_path):
    cache = tmp_path / "none" / "c.sqlite3"
    assert "no cache file" in cli("cache", "stats", "--cache", str(cache)).stdout
    assert cli("cache", "ls", "--cache", str(cache)).stdout == ""
    assert "exported 0 calls" in cli("cache", "export", "e.csv", "--cache", str(cache)).stdout
    assert not (tmp_path / "none").exists()


def test_stats_counts_per_model_and_metric(data, tmp_path):
    cache = tmp_path / "c.sqlite3"
    run_eval(data, cache, model="judge-a")
    run_eval(data, cache, model="judge-b", out="out-b")
    stats = json.loads(cli("cache", "stats", "--json", "--cache", str(cache)).stdout)
    # the alias is part of the identity, so judge-b's calls are new calls
    assert stats["calls"] == 2 * N_CALLS
    assert {m["name"]: m["calls"] for m in stats["by_model"]} == {
        "judge-a": N_CALLS,
        "judge-b": N_CALLS,
    }
    assert {m["name"]: m["calls"] for m in stats["by_metric"]} == {
        m: 2 * n for m, n in PER_METRIC.items()
    }
    assert stats["size_bytes"] >= cache.stat().st_size > 0
    assert stats["schema_version"] == 5
    text = cli("cache", "stats", "--cache", str(cache)).stdout
    assert f"calls: {2 * N_CALLS}, cache hits: 0" in text
    assert "judge-a 000000000000" in text


def test_ls_lists_newest_first_with_filters_and_limit(data, tmp_path):
    cache = tmp_path / "c.sqlite3"
    run_eval(data, cache)
    # give the calls distinct times, r2's the newest
    for i in range(3):
        execute(cache, "UPDATE calls SET created_at = ? WHERE item_id = ?",
                (f"2026-01-0{i + 1}T00:00:00+00:00", f"r{i}"))  # fmt: skip
    lines = cli("cache", "ls", "--cache", str(cache), "--limit", "100").stdout.splitlines()
    assert lines[0].split()[:4] == ["stored", "model", "metric", "item"]
    assert [line.split()[3] for line in lines[1:]] == [
        r for r in ("r2", "r1", "r0") for _ in range(PER_ITEM[r])
    ]
    default = cli("cache", "ls", "--cache", str(cache)).stdout.splitlines()
    assert len(default) == 1 + min(20, N_CALLS)  # 20 calls unless --limit says otherwise
    one = cli("cache", "ls", "--cache", str(cache), "--metric", "position", "--item", "r1")
    rows = one.stdout.splitlines()[1:]
    assert len(rows) == calls_of(RECORDS[1], "position")
    for row in rows:
        assert row.split()[:4] == ["2026-01-02T00:00:00+00:00", "judge-a", "position", "r1"]
    # the baseline call, a decision per piece and a reason per decision; the relevant piece's
    # decision shown
    assert sorted(row.split()[4] for row in rows) == ["GradeDecision", "Reason", "Reason",
                                                      "RelevantDecision",
                                                      "RelevantDecision"]  # fmt: skip
    assert sum(row.endswith('{"relevant":"yes"}') for row in rows) == 1
    limited = cli("cache", "ls", "--cache", str(cache), "--limit", "2").stdout.splitlines()
    assert [line.split()[3] for line in limited[1:]] == ["r2", "r2"]
    assert cli("cache", "ls", "--cache", str(cache), "--model", "nobody").stdout == ""
    by_sha = cli("cache", "ls", "--cache", str(cache), "--model", "00000000", "--limit", "50")
    assert len(by_sha.stdout.splitlines()) == 1 + N_CALLS


def test_export_jsonl_and_csv_round_trip(data, tmp_path):
    cache = tmp_path / "c.sqlite3"
    scripted = run_eval(data, cache)
    made = {compact_json(c.messages): c.raw for c in scripted.calls}

    exported = cli("cache", "export", "calls.jsonl", "--cache", str(cache)).stdout
    assert f"exported {N_CALLS} calls" in exported
    rows = [json.loads(line) for line in Path("calls.jsonl").read_text("utf-8").splitlines()]
    assert [list(r) for r in rows] == [list(EXPORT_FIELDS)] * N_CALLS
    assert {compact_json(r["messages"]): r["raw_output"] for r in rows} == made
    assert all(r["intact"] is True for r in rows)

    exported = cli("cache", "export", "calls.csv", "--cache", str(cache)).stdout
    assert f"exported {N_CALLS} calls" in exported
    with Path("calls.csv").open(encoding="utf-8", newline="") as f:
        table = list(csv.DictReader(f))
    assert [list(r) for r in table] == [list(EXPORT_FIELDS)] * N_CALLS
    for json_row, csv_row in zip(rows, table, strict=True):
        assert json.loads(csv_row["messages"]) == json_row["messages"]
        assert csv_row["raw_output"] == json_row["raw_output"]
        assert int(csv_row["prompt_tokens"]) == json_row["prompt_tokens"]
        assert float(csv_row["seconds"]) == json_row["seconds"]
        assert (csv_row["key"], csv_row["item_id"]) == (json_row["key"], json_row["item_id"])
        assert csv_row["last_hit_at"] == ""  # None

    only = cli(
        "cache", "export", "r0.txt", "--format", "jsonl", "--item", "r0", "--cache", str(cache)
    )
    assert f"exported {PER_ITEM['r0']} calls" in only.stdout
    assert {json.loads(x)["item_id"] for x in Path("r0.txt").read_text("utf-8").splitlines()} == {
        "r0"
    }
    out = cli(
        "cache", "export", "-", "--format", "csv", "--metric", "recall", "--cache", str(cache)
    )
    assert len(list(csv.DictReader(io.StringIO(out.stdout)))) == PER_METRIC["recall"]


def test_export_needs_a_format_it_can_tell(tmp_path):
    result = CliRunner().invoke(main, ["cache", "export", "calls.txt"])
    assert result.exit_code == 2
    assert "--format" in result.stderr
    assert not Path("calls.txt").exists()
    result = CliRunner().invoke(main, ["cache", "export", "-"])
    assert result.exit_code == 2
    assert "--format" in result.stderr


def test_reading_a_foreign_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "mine.sqlite3"
    execute(path, "CREATE TABLE invoices (id INTEGER)")
    result = CliRunner().invoke(main, ["cache", "ls", "--cache", str(path)])
    assert result.exit_code == 7  # a cache error, as eval gives for the same file
    assert "not a localjudge cache" in result.stderr


# ---------------------------------------------------------------- localjudge cache: deleting


def _two_judges(data: Path, cache: Path) -> None:
    run_eval(data, cache, model="judge-a")
    run_eval(data, cache, model="judge-b", out="out-b")


def test_prune_by_age_deletes_only_older_calls_and_their_unshared_prompts(data, tmp_path):
    cache = tmp_path / "c.sqlite3"
    run_eval(data, cache)
    execute(cache, "UPDATE calls SET created_at = '2000-01-01T00:00:00+00:00' WHERE item_id = 'r0'")
    prompts_before = raw_rows(cache, "SELECT COUNT(*) FROM prompts")[0][0]

    dry = cli("cache", "prune", "--older-than", "30d", "--dry-run", "--cache", str(cache))
    r0 = PER_ITEM["r0"]
    assert dry.stdout.startswith(f"would delete {r0} calls")
    result = cli("cache", "prune", "--older-than", "30d", "--cache", str(cache))
    assert result.exit_code == 0
    assert result.stdout.startswith(f"deleted {r0} calls")
    assert f"({N_CALLS - r0} left)" in result.stdout
    left = list(iter_calls(cache))
    assert sorted(c.item_id for c in left) == ["r1"] * PER_ITEM["r1"] + ["r2"] * PER_ITEM["r2"]
    assert all(c.intact for c in left)  # the shared instructions are kept
    # r0's item prompts (one per call) are gone, the instructions stay
    assert raw_rows(cache, "SELECT COUNT(*) FROM prompts") == [(prompts_before - r0,)]
    again = cli("cache", "prune", "--older-than", "30d", "--cache", str(cache))
    assert again.stdout.startswith("deleted 0 calls")


def test_prune_by_model_alias_or_sha(data, tmp_path):
    cache = tmp_path / "c.sqlite3"
    _two_judges(data, cache)
    result = cli("cache", "prune", "--model", "judge-b", "--cache", str(cache))
    assert result.stdout.startswith(f"deleted {N_CALLS} calls")
    assert {c.model for c in iter_calls(cache)} == {"judge-a"}
    assert cli("cache", "prune", "--model", "0000000", "--cache", str(cache)).stdout.startswith(
        "deleted 0 calls"  # 7 hex digits are too few for a sha prefix: an alias, none such
    )
    result = cli("cache", "prune", "--model", "0" * 12, "--cache", str(cache))
    assert result.stdout.startswith(f"deleted {N_CALLS} calls")
    assert raw_rows(cache, "SELECT COUNT(*) FROM prompts") == [(0,)]


def test_prune_needs_a_filter_and_a_valid_age(tmp_path):
    result = CliRunner().invoke(main, ["cache", "prune", "--cache", str(tmp_path / "c.sqlite3")])
    assert result.exit_code == 2
    assert "--older-than" in result.stderr
    result = CliRunner().invoke(main, ["cache", "prune", "--older-than", "soon"])
    assert result.exit_code == 2
    assert "not an age" in result.stderr


def test_clear_asks_first_unless_yes(data, tmp_path):
    cache = tmp_path / "c.sqlite3"
    run_eval(data, cache)
    refused = CliRunner().invoke(main, ["cache", "clear", "--cache", str(cache)], input="n\n")
    assert refused.exit_code == 1  # Click's abort
    assert f"delete all {N_CALLS} calls" in refused.output
    assert len(list(iter_calls(cache))) == N_CALLS
    agreed = cli("cache", "clear", "--cache", str(cache), input="y\n")
    assert f"deleted {N_CALLS} calls" in agreed.stdout
    assert list(iter_calls(cache)) == []
    assert raw_rows(cache, "SELECT COUNT(*) FROM prompts") == [(0,)]
    with Cache(cache) as opened:  # still a sound cache of the current schema
        assert (opened.schema_version, len(opened), opened.set_aside) == (5, 0, None)
    run_eval(data, cache)
    stored = tmp_path / "prefixes"  # the judge's stored instructions, beside the file
    stored.mkdir()
    (stored / "a.kv").write_bytes(b"x")
    (stored / "notes.txt").write_text("not ours")
    cleared = cli("cache", "clear", "--yes", "--cache", str(cache)).stdout
    assert f"deleted {N_CALLS} calls" in cleared
    assert "and 1 stored instruction prefixes" in cleared
    assert cache_stats(cache).calls == 0
    assert [p.name for p in stored.iterdir()] == ["notes.txt"]


def test_clear_of_a_missing_cache_creates_nothing(tmp_path):
    cache = tmp_path / "none" / "c.sqlite3"
    assert "nothing to clear" in cli("cache", "clear", "--yes", "--cache", str(cache)).stdout
    assert not (tmp_path / "none").exists()


# ---------------------------------------------------------------- eval --raw-output


def test_eval_raw_output_puts_each_rows_judge_output_in_results(data, tmp_path):
    records = [*RECORDS, {"id": "bad", "user_input": "q?", "retrieved_contexts": []}]
    data.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    judges: list[ScriptedJudge] = []

    def factory(settings: Any) -> Any:
        judges.append(ScriptedJudge(rule_reply))
        return judges[-1]

    def run(*extra: str) -> list[dict[str, Any]]:
        result = CliRunner().invoke(
            main,
            ["eval", str(data), "-o", "o", "--no-cache", "-q", "--metric", "recall", *extra],
            obj={"open_judge": factory},
            catch_exceptions=False,
        )
        assert result.exit_code == 0, result.output
        return [json.loads(x) for x in Path("o/results.jsonl").read_text("utf-8").splitlines()]

    # with --reasons (off by default) each row's raw output holds its reason calls as well
    plain = run("--reasons")
    assert all("raw_output" not in r for r in plain)
    rows = run("--reasons", "--raw-output")
    assert list(rows[0])[-1] == "raw_output"
    assert rows[-1]["raw_output"] is None  # the invalid item: no call
    assert rows[-1]["error"] is not None
    calls = judges[-1].calls
    for row, record in zip(rows, RECORDS, strict=False):
        # the item's calls (its CONTEXT passages are in each): its decisions in statement
        # order, then the reasons
        mine = [
            c
            for c in calls
            if prompt_data(c.messages)["CONTEXT 0"] == record["retrieved_contexts"][0]
        ]
        decisions = [c.raw for c in mine if c.schema.__name__ == "SupportedDecision"]
        reasons = [c.raw for c in mine if c.schema.__name__ == "Reason"]
        assert len(reasons) == len(decisions) == len(row["verdicts"]) > 0
        assert row["raw_output"].split("\n") == decisions + reasons
        supported = [json.loads(raw)["supported"] == "yes" for raw in decisions]
        assert supported == [bool(v["attributed"]) for v in row["verdicts"]]
    assert sum(r["raw_output"].count("\n") + 1 for r in rows[:-1]) == len(calls)
    untimed = [{k: v for k, v in r.items() if k not in ("seconds", "raw_output")} for r in rows]
    assert untimed == [{k: v for k, v in r.items() if k != "seconds"} for r in plain]
    # without --reasons (the default) a row's raw output is its decisions only
    bare = run("--raw-output", "--overwrite")
    assert [len(r["raw_output"].split("\n")) for r in bare[:-1]] == [
        len(r["verdicts"]) for r in rows[:-1]
    ]
    assert all(c.schema.__name__ == "SupportedDecision" for c in judges[-1].calls)


def test_call_filter_sql_matches_what_it_names(data, tmp_path):
    cache = tmp_path / "c.sqlite3"
    _two_judges(data, cache)
    recall_b = iter_calls(cache, CallFilter(model="judge-b", metric="recall"))
    assert len(list(recall_b)) == PER_METRIC["recall"]
    assert len(list(iter_calls(cache, CallFilter(item="r2")))) == 2 * PER_ITEM["r2"]
    assert list(iter_calls(cache, CallFilter(metric="recall", item="nope"))) == []
