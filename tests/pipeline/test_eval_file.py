"""eval_file(): results.jsonl rows, summary.json, caching, resuming, thresholds, the data's
survey."""

from __future__ import annotations

import hashlib
import json
import signal
import statistics
from itertools import islice

import pytest
from pipeline_rules import EXPECTED, rule_reply

from localjudge.canonical import compact_json
from localjudge.data.item import make_item
from localjudge.data.readers import read_records
from localjudge.errors import UsageError
from localjudge.judge.cache.caching import CachingJudge
from localjudge.judge.cache.database import Cache
from localjudge.metrics import METRICS, ContextPosition, ContextRecall, ContextRelevance
from localjudge.metrics.instructions import baseline_ask
from localjudge.metrics.protocols import current_protocol
from localjudge.metrics.statements import split_statements
from localjudge.run.evaluate.file_run import eval_file, open_run, survey
from localjudge.run.options import EvalOptions
from localjudge.run.outcome import ThresholdError
from localjudge.run.results import FORMAT_VERSION
from localjudge.testing import ScriptedJudge, assert_scores
from localjudge.versions import versions

ROW_KEYS = [
    "format",
    "index",
    "id",
    "metric",
    "score",
    "soft_score",
    "reason",
    "verdicts",
    "details",
    "error",
    "judge",
    "settings",
    "seconds",
    "prompt_tokens",
    "evaluated_prompt_tokens",
    "completion_tokens",
]
METRIC_KEYS = {
    "n_scored",
    "n_failed",
    "n_undefined",
    "close_calls",
    "mean",
    "soft_mean",
    "median",
    "std",
    "ci95",
}


# ---------------------------------------------------------------- the data file

GOOD = [
    {
        "id": "a",
        "user_input": "Where is the tower?",
        "retrieved_contexts": ["yes it is in Paris.", "bananas", "yes Paris is in France."],
        "reference": "yes it is in Paris. It was built in 1889.",
        "response": "yes it is in Paris.",
    },
    {
        "id": "b",
        "user_input": "埃菲尔铁塔在哪里？",
        "retrieved_contexts": ["巴黎是法国的首都。", "yes 埃菲尔铁塔位于巴黎."],
        "reference": "yes 埃菲尔铁塔位于巴黎. 他的名字叫汤姆.",
        "response": "yes 埃菲尔铁塔位于巴黎.",
    },
    {
        "id": "d",
        "input": "Mastra names?",
        "context": ["no", "no", "yes mastra works."],
        "reference": "yes mastra works.",
        "output": "It works.",
    },
]
INVALID = {
    "id": "c",
    "user_input": "No reference here?",
    "retrieved_contexts": ["yes"],
    "response": "yes",
}
MALFORMED = '{"id": "broken", "user_input": '
# lines: 1 good a, 2 malformed, 3 good b, 4 blank, 5 invalid c, 6 good d
LINES = [
    json.dumps(GOOD[0]),
    MALFORMED,
    json.dumps(GOOD[1], ensure_ascii=False),
    "",
    json.dumps(INVALID),
    json.dumps(GOOD[2]),
]
METRIC_NAMES = ["recall", "position", "relevance"]


def normalized(rec):
    aliases = {"input": "user_input", "context": "retrieved_contexts", "output": "response"}
    return {aliases.get(k, k): v for k, v in rec.items()}


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def make_metrics(reasons=None):
    """The three metrics, with their default settings or, given, with ``reasons`` on or off."""
    options = {} if reasons is None else {"reasons": reasons}
    return [ContextRecall(**options), ContextPosition(**options), ContextRelevance(**options)]


def run(data, out, judge, *, reasons=None, **kwargs):
    return eval_file(data, out, judge=judge, metrics=make_metrics(reasons), **kwargs)


def read_rows(path):
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def without_timing(rows):
    return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]


def calls_of(rec, metric, *, reasons):
    """The judge calls ``metric`` makes for ``rec``: recall a decision per reference statement,
    position one per piece; relevance per piece a grade and whether it was used, then one list of
    what is missing; with ``reasons`` on, a reason per decision (not for used nor missing);
    position and relevance each first the item's baseline call (no passage, no reason)."""
    rec = normalized(rec)
    pieces = len(rec["retrieved_contexts"])
    if metric == "recall":
        return (1 + reasons) * len(split_statements(rec["reference"]))
    if metric == "position":
        return 1 + (1 + reasons) * pieces
    return 1 + (1 + reasons) * pieces + pieces + 1


def total_calls(reasons):
    """The judge calls for the data (a, b, d x 3 metrics, c x position and relevance): the
    distinct calls of its one chunk, since a call asked twice in a batch is asked once (item d's
    two 'no' pieces; each item's baseline call, the same for position and relevance). Reasons
    are asked per distinct decision call too (the same call gets the same verdict)."""
    jobs = [(rec, m) for rec in GOOD for m in METRIC_NAMES]
    jobs += [(INVALID, m) for m in ("position", "relevance")]
    decisions, explained = set(), set()
    for i, (rec, name) in enumerate(jobs):
        for ask in METRICS[name]().build(make_item(normalized(rec), index=i)):
            key = (compact_json(ask.request.messages), ask.request.schema.__name__)
            decisions.add(key)
            if ask.decision is not None and ask.explain:
                explained.add(key)
    return len(decisions) + (len(explained) if reasons else 0)


def test_the_call_count_follows_the_asks():
    """The distinct-call count above against the per-item formula: item d repeats a piece, and
    each item's position and relevance share its baseline call."""
    per_item = sum(calls_of(rec, m, reasons=False) for rec in GOOD for m in METRIC_NAMES) + sum(
        calls_of(INVALID, m, reasons=False) for m in ("position", "relevance")
    )
    assert 0 < total_calls(False) < per_item
    # d's repeated piece: its position decision, its relevance grade and used; one baseline per
    # item (a, b, d and c) asked for both metrics
    assert per_item - total_calls(False) == 3 + 4


#: whether a run with the metrics' default settings asks reasons (the same for all three)
[DEFAULT_REASONS] = {m.reasons for m in make_metrics()}
#: the judge calls of a run with the default settings
TOTAL_CALLS = total_calls(DEFAULT_REASONS)


# ---------------------------------------------------------------- results.jsonl


def baseline_tokens(rec):
    """The prompt tokens of ``rec``'s baseline call, as the scripted judge counts them (one per
    whitespace-separated word)."""
    messages = baseline_ask(normalized(rec)["user_input"]).request.messages
    return sum(len(m["content"].split()) for m in messages)


def test_results_rows(tmp_path, data):
    judge = ScriptedJudge(rule_reply)
    # reasons on (off by default): the verdicts carry the judge's reasons
    outcome = run(data, tmp_path / "out", judge, reasons=True)
    assert outcome.results_path == tmp_path / "out" / "results.jsonl"
    assert outcome.summary_path == tmp_path / "out" / "summary.json"
    assert not (tmp_path / "out" / "results.jsonl.partial").exists()
    text = outcome.results_path.read_text("utf-8")
    assert text.endswith("\n")
    rows = read_rows(outcome.results_path)
    # one row per record x metric, in record then metric order
    assert [(r["index"], r["id"], r["metric"]) for r in rows] == [
        (i, rid, m) for i, rid in enumerate(["a", "line 2", "b", "c", "d"]) for m in METRIC_NAMES
    ]
    for row in rows:
        assert list(row) == ROW_KEYS
        assert row["format"] == FORMAT_VERSION
        assert row["judge"] == {"model": "scripted", "sha256": "0" * 64}
    # the scripted judge has no cut-offs: every decision is the baseline (the larger probability)
    argmax = {"cutoffs": {}, "cutoffs_source": {}}
    assert [r["settings"] for r in rows[:3]] == [
        {"truncate": False, "reasons": True, **argmax},
        {"truncate": False, "scale": 1.0, "reasons": True, **argmax},
        {
            "truncate": False,
            "scale": 1.0,
            "unused_high": 0.1,
            "missing_per_item": 0.15,
            "max_missing": 0.5,
            "reasons": True,
            **argmax,
        },
    ]
    # compact, non-ASCII kept as is
    lines = text.splitlines()
    assert lines[6].startswith(
        '{"format":2,"index":2,"id":"b","metric":"recall","score":0.5,"soft_score":null,'
    )
    assert "埃菲尔铁塔位于巴黎" in lines[6]

    scored = {(r["id"], r["metric"]): r for r in rows if r["error"] is None}
    for rec in GOOD:
        for m in METRIC_NAMES:
            row = scored[(rec["id"], m)]
            assert abs(row["score"] - EXPECTED[m](normalized(rec))) < 1e-9, (rec["id"], m)
            assert isinstance(row["reason"], str)
            assert row["reason"]
            assert row["prompt_tokens"] > 0
            # a call the item asks twice is asked once: its copy evaluates nothing
            assert 0 < row["evaluated_prompt_tokens"] <= row["prompt_tokens"]
            contexts = normalized(rec)["retrieved_contexts"]
            # the item's baseline call is position's and relevance's both: asked for position
            # (the first), relevance gets its copy
            copied = baseline_tokens(rec) if m == "relevance" else 0
            if len(set(contexts)) == len(contexts):
                assert row["evaluated_prompt_tokens"] == row["prompt_tokens"] - copied
            assert row["completion_tokens"] > 0
            assert row["seconds"] >= 0
    assert scored[("a", "recall")]["reason"] == (
        "1 of 2 reference statements are supported by the context; not supported: "
        '"It was built in 1889.".'
    )
    assert scored[("a", "recall")]["details"] is None
    assert scored[("a", "relevance")]["details"] == {"missing": []}
    assert scored[("d", "position")]["verdicts"] == [
        {"index": 0, "reason": "rule", "relevant": False},
        {"index": 1, "reason": "rule", "relevant": False},
        {"index": 2, "reason": "rule", "relevant": True},
    ]

    errors = {(r["id"], r["metric"]): r for r in rows if r["error"] is not None}
    assert set(errors) == {("line 2", m) for m in METRIC_NAMES} | {("c", "recall")}
    for row in errors.values():
        assert row["score"] is None
        assert row["reason"] is None
        assert row["verdicts"] is None
        assert row["prompt_tokens"] is None
        assert row["seconds"] is None
        assert set(row["error"]) == {"kind", "field", "message", "hint"}
        assert row["error"]["kind"] == "invalid_item"
    for m in METRIC_NAMES:
        error = errors[("line 2", m)]["error"]
        assert error["field"] is None
        assert error["message"].startswith("line 2: invalid JSON")
        assert "the last line has no newline" not in error["message"]
    c = errors[("c", "recall")]["error"]
    assert c["field"] == "reference"
    assert c["message"] == "item c: required field 'reference' is missing"
    assert c["hint"] is None
    # the invalid item still got the metrics it could get
    assert ("c", "position") in scored
    assert ("c", "relevance") in scored
    assert len(judge.calls) == total_calls(reasons=True)


# ---------------------------------------------------------------- summary.json


def test_summary(tmp_path, data):
    judge = ScriptedJudge(rule_reply)
    outcome = run(data, tmp_path / "out", judge, settings={"n_ctx": 4096, "seed": 0})
    on_disk = json.loads(outcome.summary_path.read_text("utf-8"))
    assert on_disk == outcome.summary
    assert set(on_disk) == {"format", "metrics", "run"}
    assert on_disk["format"] == FORMAT_VERSION
    assert list(on_disk["metrics"]) == METRIC_NAMES

    scored_recs = {
        "recall": [normalized(r) for r in GOOD],
        "position": [normalized(r) for r in [*GOOD, INVALID]],
        "relevance": [normalized(r) for r in [*GOOD, INVALID]],
    }
    failed = {"recall": 2, "position": 1, "relevance": 1}
    for name in METRIC_NAMES:
        stats = on_disk["metrics"][name]
        assert set(stats) == METRIC_KEYS
        values = [EXPECTED[name](rec) for rec in scored_recs[name]]
        assert stats["n_scored"] == len(values)
        assert stats["n_failed"] == failed[name]
        assert stats["n_undefined"] == 0
        # failures are not averaged in as zeros
        assert abs(stats["mean"] - statistics.fmean(values)) < 1e-9
        assert abs(stats["median"] - statistics.median(values)) < 1e-9
        assert abs(stats["std"] - statistics.stdev(values)) < 1e-9
        low, high = stats["ci95"]
        assert low <= stats["mean"] <= high
        assert min(values) <= low <= high <= max(values)

    run_info = on_disk["run"]
    assert set(run_info) == {
        "data",
        "data_sha256",
        "n_items",
        "judge",
        "protocol",
        "settings",
        "versions",
        "judge_calls",
        "cache_hits",
    }
    assert run_info["protocol"] == current_protocol().as_json()  # the prompts it asked by
    assert run_info["data"] == str(data)
    assert run_info["data_sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    argmax = {"cutoffs": {}, "cutoffs_source": {}}  # the scripted judge has no cut-offs
    assert run_info["n_items"] == 5
    assert run_info["judge"] == {
        "model": "scripted",
        "sha256": "0" * 64,
        "backend": "scripted",
        "settings": {"n_ctx": None},
    }
    # the metrics' default settings, as the run used them: reasons off
    assert run_info["settings"] == {
        "n_ctx": 4096,
        "seed": 0,
        "metrics": {
            "recall": {"truncate": False, "reasons": False, **argmax},
            "position": {"truncate": False, "scale": 1.0, "reasons": False, **argmax},
            "relevance": {
                "truncate": False,
                "scale": 1.0,
                "unused_high": 0.1,
                "missing_per_item": 0.15,
                "max_missing": 0.5,
                "reasons": False,
                **argmax,
            },
        },
        "limit": None,
        "map": {},
        # the data format as given (None: from the extension), so a report re-reads alike
        "format": None,
        # the scripted judge has no fitted cut-offs or combinations: the neutral ones decided
        "neutral_cutoffs": True,
    }
    assert run_info["versions"] == versions()
    assert run_info["judge_calls"] == TOTAL_CALLS
    assert run_info["cache_hits"] == 0
    assert outcome.failed_thresholds == []


def test_the_summary_names_an_exception_and_the_rows_do_not_move(tmp_path, data):
    from localjudge.decisions import Cutoffs, Provenance  # noqa: PLC0415

    def cutoffs(status):
        source = Provenance("built-in", "fit.py", "ab" * 32, heldout={"status": status, "why": "w"})
        return Cutoffs.from_json({"position.relevant": 0.4}, {"position.relevant": source})

    kept = run(data, tmp_path / "kept", ScriptedJudge(rule_reply), cutoffs=cutoffs("exception"))
    fitted = run(data, tmp_path / "fit", ScriptedJudge(rule_reply), cutoffs=cutoffs("fitted"))
    assert kept.summary["run"]["settings"]["exceptions"] == {"position.relevant": "w"}
    assert "exceptions" not in fitted.summary["run"]["settings"]
    rows = [
        [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in lines]
        for lines in (
            (tmp_path / d / "results.jsonl").read_text("utf-8").splitlines()
            for d in ("kept", "fit")
        )
    ]
    assert rows[0] == rows[1]


def test_ci95_is_seeded(tmp_path, data):
    first = run(data, tmp_path / "one", ScriptedJudge(rule_reply)).summary
    second = run(data, tmp_path / "two", ScriptedJudge(rule_reply)).summary
    cis = {name: first["metrics"][name]["ci95"] for name in METRIC_NAMES}
    assert cis == {name: second["metrics"][name]["ci95"] for name in METRIC_NAMES}
    assert all(ci is not None and ci[0] < ci[1] for ci in cis.values())


def test_limit_and_mapping(tmp_path):
    path = tmp_path / "mapped.jsonl"
    recs = [
        {"qid": f"q{i}", "question": f"Q{i}?", "docs": ["yes a", "b"], "gold": "yes a."}
        for i in range(4)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    judge = ScriptedJudge(rule_reply)
    mapping = {
        "id": "qid",
        "user_input": "question",
        "retrieved_contexts": "docs",
        "reference": "gold",
    }
    outcome = eval_file(
        path,
        tmp_path / "out",
        judge=judge,
        metrics=[ContextPosition()],
        mapping=mapping,
        limit=2,
    )
    rows = read_rows(outcome.results_path)
    assert [(r["id"], r["score"]) for r in rows] == [("q0", 1 / 1.5), ("q1", 1 / 1.5)]
    assert outcome.summary["run"]["n_items"] == 2
    assert outcome.summary["run"]["settings"]["limit"] == 2
    assert outcome.summary["run"]["settings"]["map"] == mapping
    # the baseline call, a decision per piece, and a reason per decision if the (default)
    # settings ask for them
    [reasons] = {r["settings"]["reasons"] for r in rows}
    assert len(judge.calls) == sum(1 + (1 + reasons) * len(r["docs"]) for r in recs[:2])


# ---------------------------------------------------------------- thresholds


def test_fail_under_thresholds_are_reported(tmp_path, data):
    judge = ScriptedJudge(rule_reply)
    outcome = run(data, tmp_path / "out", judge, fail_under={"recall": 0.99, "position": 0.01})
    mean = outcome.summary["metrics"]["recall"]["mean"]
    assert outcome.failed_thresholds == [f"recall mean {mean} < 0.99"]


def test_fail_under_and_assert_scores_miss_the_same_thresholds(tmp_path, data):
    """One threshold check: eval's --fail-under and the library's assert_scores agree at the
    mean itself (a mean equal to its threshold passes) and just above it."""
    first = run(data, tmp_path / "first", ScriptedJudge(rule_reply)).summary["metrics"]
    means = {name: first[name]["mean"] for name in METRIC_NAMES}
    for nudge in (0.0, 1e-9):
        thresholds = {name: mean + nudge for name, mean in means.items()}
        out = tmp_path / f"out-{nudge}"
        outcome = run(data, out, ScriptedJudge(rule_reply), fail_under=thresholds)
        rows = read_rows(outcome.results_path)
        for name, threshold in thresholds.items():
            by_eval = any(line.startswith(f"{name} mean") for line in outcome.failed_thresholds)
            try:
                assert_scores(rows, **{name: threshold})
                by_library = False
            except ThresholdError:
                by_library = True
            assert by_eval == by_library == (nudge > 0), (name, nudge)


def test_fail_under_with_no_scored_item_fails(tmp_path):
    path = tmp_path / "none.jsonl"
    path.write_text(json.dumps({"user_input": "q", "retrieved_contexts": ["c"]}) + "\n", "utf-8")
    judge = ScriptedJudge([])
    outcome = eval_file(
        path,
        tmp_path / "out",
        judge=judge,
        metrics=[ContextRecall()],
        fail_under={"recall": 0.0},
    )
    assert outcome.summary["metrics"]["recall"]["mean"] is None
    assert outcome.failed_thresholds == ["recall mean None < 0.0"]


def test_fail_under_for_a_metric_not_run_is_a_usage_error(tmp_path, data):
    judge = ScriptedJudge([])
    with pytest.raises(UsageError, match="relevance"):
        eval_file(
            data,
            tmp_path / "out",
            judge=judge,
            metrics=[ContextRecall()],
            fail_under={"relevance": 0.5},
        )
    assert not (tmp_path / "out").exists()
    assert judge.calls == []


# ---------------------------------------------------------------- caching and resuming


def test_a_cached_rerun_makes_no_judge_call_and_writes_the_same_bytes(tmp_path, data):
    cache_path = tmp_path / "cache.sqlite3"
    with Cache(cache_path) as cache:
        first_inner = ScriptedJudge(rule_reply)
        first_judge = CachingJudge(first_inner, cache)
        first = run(data, tmp_path / "one", first_judge)
    assert len(first_inner.calls) == TOTAL_CALLS
    assert first.summary["run"]["judge_calls"] == TOTAL_CALLS
    assert first.summary["run"]["cache_hits"] == 0

    with Cache(cache_path) as cache:
        inner = ScriptedJudge([])  # any call would fail: no replies
        judge = CachingJudge(inner, cache)
        second = run(data, tmp_path / "two", judge)
    assert inner.calls == []
    assert second.summary["run"]["judge_calls"] == 0
    assert second.summary["run"]["cache_hits"] == TOTAL_CALLS
    assert second.results_path.read_bytes() == first.results_path.read_bytes()
    assert second.summary["metrics"] == first.summary["metrics"]


class CrashOnCall:
    """A judge that behaves like ``inner`` but is interrupted (Ctrl-C) at call ``k``."""

    def __init__(self, inner, k):
        self.inner = inner
        self.k = k
        self.n = 0

    @property
    def identity(self):
        return self.inner.identity

    def generate(self, prompt, schema):
        self.n += 1
        if self.n == self.k:
            raise KeyboardInterrupt
        return self.inner.generate(prompt, schema)


@pytest.mark.parametrize(
    ("reasons", "k"),
    [(True, 1), (True, 5), (True, total_calls(True)), (False, 5), (False, total_calls(False))],
)
def test_resume_after_an_interrupted_run(tmp_path, data, reasons, k):
    """Interrupted at the first call, a middle one or the last (with reasons on, a reason
    call), a rerun judges only what the cache lacks and writes the uninterrupted run's rows."""
    reference = ScriptedJudge(rule_reply)
    uninterrupted = run(data, tmp_path / "ref", reference, reasons=reasons)
    # the interrupted run makes the same calls in the same order; some calls are asked twice
    # (item d's two 'no' pieces): the cache holds each once, and a rerun's lookup hits both
    made = [compact_json([c.messages, c.schema.__name__]) for c in reference.calls]
    n_calls = total_calls(reasons)
    assert len(made) == n_calls
    # the reason calls come after the decisions: with reasons on, the last call is one
    assert (reference.calls[-1].schema.__name__ == "Reason") is reasons
    before = set(made[: k - 1])
    hits = sum(call in before for call in made)

    out = tmp_path / "out"
    cache_path = tmp_path / "cache.sqlite3"
    with Cache(cache_path) as cache:
        crashing = CrashOnCall(ScriptedJudge(rule_reply), k)
        with pytest.raises(KeyboardInterrupt):
            run(data, out, CachingJudge(crashing, cache), reasons=reasons)
        assert len(cache) == len(before)
    assert crashing.n == k
    assert (out / "results.jsonl.partial").exists()
    assert not (out / "results.jsonl").exists()
    assert not (out / "summary.json").exists()

    with Cache(cache_path) as cache:
        inner = ScriptedJudge(rule_reply)
        judge = CachingJudge(inner, cache)
        resumed = run(data, out, judge, reasons=reasons)
    assert len(inner.calls) == n_calls - hits
    assert resumed.summary["run"]["judge_calls"] == n_calls - hits
    assert resumed.summary["run"]["cache_hits"] == hits
    assert (out / "results.jsonl").exists()
    assert not (out / "results.jsonl.partial").exists()
    # timings differ between runs; everything else is the same
    assert without_timing(read_rows(resumed.results_path)) == without_timing(
        read_rows(uninterrupted.results_path)
    )
    assert resumed.summary["metrics"] == uninterrupted.summary["metrics"]


class _SendsCtrlCFromAFinalizer:
    """Sends this process SIGINT from its ``__del__``: the KeyboardInterrupt that the handler
    raises there is dropped by Python ("Exception ignored in"), as happens when Ctrl-C lands in
    one of Ray Data's finalizers on a driver."""

    def __del__(self):
        signal.raise_signal(signal.SIGINT)


class SwallowsCtrlCOnCall(CrashOnCall):
    """A judge whose ``k``-th call receives a Ctrl-C that something else swallows."""

    def generate(self, prompt, schema):
        self.n += 1
        if self.n == self.k:
            doomed = _SendsCtrlCFromAFinalizer()
            del doomed  # the interrupt is raised and lost inside __del__
        return self.inner.generate(prompt, schema)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("k", [1, TOTAL_CALLS])
def test_a_ctrl_c_that_a_library_swallowed_still_stops_the_run(tmp_path, data, k):
    """Never a finished run after an interrupt: eval_file remembers the signal and stops at its
    next row (after the last call too), leaving the partial file to resume from."""
    out = tmp_path / "out"
    judge = SwallowsCtrlCOnCall(ScriptedJudge(rule_reply), k)
    # a test run started in the background (`make check &`) inherits an ignored SIGINT
    default = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        before = signal.getsignal(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            run(data, out, judge)
        after = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, default)
    assert (out / "results.jsonl.partial").exists()
    assert not (out / "results.jsonl").exists()
    assert not (out / "summary.json").exists()
    assert after is before  # put back


# ---------------------------------------------------------------- the survey's metrics


@pytest.mark.parametrize(
    ("records", "mapping", "limit", "expected"),
    [
        ([{"user_input": "q", "retrieved_contexts": ["c"]}], {}, None, ["position"]),
        (
            [{"user_input": "q", "retrieved_contexts": ["c"], "reference": "r"}],
            {},
            None,
            ["recall", "position"],
        ),
        (
            [{"input": "q", "context": ["c"], "output": "r"}],
            {},
            None,
            ["position", "relevance"],
        ),
        (
            [{"user_input": "q", "retrieved_contexts": ["c"], "reference": "r", "response": "s"}],
            {},
            None,
            ["recall", "position", "relevance"],
        ),
        # fields spread over records still count
        (
            [
                {"user_input": "q", "retrieved_contexts": ["c"]},
                {"reference": "r"},
            ],
            {},
            None,
            ["recall", "position"],
        ),
        # ... but not beyond the limit
        (
            [
                {"user_input": "q", "retrieved_contexts": ["c"]},
                {"reference": "r"},
            ],
            {},
            1,
            ["position"],
        ),
        # empty values do not count as present
        (
            [{"user_input": "q", "retrieved_contexts": [], "reference": ""}],
            {},
            None,
            [],
        ),
        (
            [{"question": "q", "docs": ["c"], "answer": "a"}],
            {"user_input": "question", "retrieved_contexts": "docs", "response": "answer"},
            None,
            ["position", "relevance"],
        ),
        ([{"question": "q", "docs": ["c"]}], {}, None, []),
    ],
)
def test_survey_finds_the_metrics(tmp_path, records, mapping, limit, expected):
    path = tmp_path / "d.jsonl"
    path.write_text("not json\n" + "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    # the malformed first line takes a place in the limit but gives no field
    effective_limit = None if limit is None else limit + 1
    options = EvalOptions(mapping=mapping, limit=effective_limit)
    with open_run(path, tmp_path / "out", options) as run:
        assert run.survey().metrics == expected
    assert survey(islice(read_records(path), effective_limit), mapping).metrics == expected
