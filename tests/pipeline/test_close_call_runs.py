"""Close calls through a run (scripted judges): a verdict whose soft value lies within its
kind's margin (CLOSE_CALL_MARGINS) of its cut-off is marked in results.jsonl with its distance,
counted in summary.json and named in the printed table; one outside every kind's margin is not,
and its row keeps today's bytes. Near and far values come from the margins, so changing one
changes no test."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from localjudge.cli import main
from localjudge.cli.exits import EXIT_OK
from localjudge.decisions import CLOSE_CALL_MARGINS
from localjudge.judge.cache.caching import CachingJudge
from localjudge.judge.cache.database import Cache
from localjudge.judge.protocol import Generation, SoftDecision
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance
from localjudge.run.evaluate.file_run import eval_file
from localjudge.run.report.render import eval_view, load_records
from localjudge.run.results import read_results
from localjudge.run.summary import CLOSE_CALLS_DOC, CLOSE_CALLS_WHY, read_summary
from localjudge.testing import ScriptedJudge, prompt_data, says_no

#: P(yes) - 0.5 (and an expected grade's distance to its cut-off) inside every kind's margin,
#: and outside every kind's: a yes/no margin is in log-odds, and 0.5 + x has log-odds
#: 2 atanh(2x), so x is inside a margin m when x < tanh(m / 2) / 2
_YES_NO = [m for k, m in CLOSE_CALL_MARGINS.items() if k != "relevance.grade"]
_GRADE = CLOSE_CALL_MARGINS["relevance.grade"]
NEAR = min(math.tanh(min(_YES_NO) / 2) / 2, _GRADE) / 2
FAR = (max(math.tanh(max(_YES_NO) / 2) / 2, _GRADE) + 0.5) / 2
#: P(yes) by the word a statement or passage starts with; a grade's expected value is 1 + P
#: (between grades 1 and 2), so its distance to the cut-off 1.5 is P - 0.5 too
P_YES = {"near": 0.5 + NEAR, "below": 0.5 - NEAR, "far": 0.5 + FAR}

CLOSE = {
    "id": "close",
    "user_input": "what?",
    "retrieved_contexts": ["near passage", "far passage"],
    "reference": "near claim. far claim.",
    "response": "an answer",
}
CLEAR = {
    "id": "clear",
    "user_input": "what else?",
    "retrieved_contexts": ["far passage one", "far passage two"],
    "reference": "far claim one.",
    "response": "another answer",
}
METRICS = ("recall", "position", "relevance")


class Probable(ScriptedJudge):
    """Says no to every decision, with soft verdicts whose P(yes) follows the first word of the
    statement or passage (:data:`P_YES`; ``flip`` swaps near and below)."""

    def __init__(self, *, flip: bool = False) -> None:
        super().__init__(says_no)
        self.flip = flip

    def p_yes(self, prompt: Any) -> float:
        data = prompt_data(list(prompt))
        text = data.get("STATEMENT") or data.get("PASSAGE") or ""
        word = text.split()[0] if text.split() else ""
        if self.flip:
            word = {"near": "below", "below": "near"}.get(word, word)
        return P_YES.get(word, 0.9)

    def generate(self, prompt: Any, schema: Any) -> Generation[Any]:
        out = super().generate(prompt, schema)
        key = next(iter(schema.model_fields))
        p = self.p_yes(prompt)
        if schema.__name__ == "GradeDecision":
            probs = {"0": 0.0, "1": 1.0 - p, "2": p, "3": 0.0}
            decisions = (SoftDecision(key, probs, "0"),)
        elif key in ("supported", "relevant", "repeats"):
            decisions = (SoftDecision(key, {'"yes"': p, '"no"': 1.0 - p}, '"no"'),)
        else:
            decisions = ()
        return Generation(out.value, out.raw, out.stats, decisions=decisions)


def write_data(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def invoke(*args: str, flip: bool = False) -> Result:
    factory = lambda settings: Probable(flip=flip)  # noqa: E731
    return CliRunner().invoke(main, list(args), obj={"open_judge": factory}, catch_exceptions=False)


def eval_run(data: Path, out: Path, *, flip: bool = False, quiet: bool = True) -> Result:
    metrics = [a for m in METRICS for a in ("--metric", m)]
    args = ["eval", str(data), "-o", str(out), "--no-cache", *metrics]
    result = invoke(*args, *(["-q"] if quiet else []), flip=flip)
    assert result.exit_code == EXIT_OK, result.stderr
    return result


def rows_of(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    lines = (out / "results.jsonl").read_text("utf-8").splitlines()
    return {(r["id"], r["metric"]): r for r in map(json.loads, lines)}


def test_a_close_verdict_is_marked_counted_and_named_a_far_one_is_not(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data.jsonl", [CLOSE, CLEAR])
    result = eval_run(data, tmp_path / "run", quiet=False)
    rows = rows_of(tmp_path / "run")
    near = round(NEAR, 4)

    recall = rows["close", "recall"]["verdicts"]
    assert [v["attributed"] for v in recall] == [1, 1]
    assert recall[0]["close_call"] == {"attributed": near}
    assert "close_call" not in recall[1]
    position = rows["close", "position"]["verdicts"]
    assert [v["relevant"] for v in position] == [True, True]
    assert position[0]["close_call"] == {"relevant": near}
    assert "close_call" not in position[1]
    relevance = rows["close", "relevance"]["verdicts"]
    assert [v["relevance"] for v in relevance] == ["medium", "medium"]
    assert relevance[0]["close_call"] == {"relevance": near, "used": near}
    assert "close_call" not in relevance[1]
    # the verdicts twice the margin away carry no mark at all
    for metric in METRICS:
        assert "close_call" not in json.dumps(rows["clear", metric])

    summary = json.loads((tmp_path / "run" / "summary.json").read_text("utf-8"))
    counts = {m: s["close_calls"] for m, s in summary["metrics"].items()}
    assert counts == {"recall": 1, "position": 1, "relevance": 2}
    [line] = [line for line in result.stdout.splitlines() if line.startswith("close calls:")]
    assert line == (
        f"close calls: recall 1, position 1, relevance 2 ({CLOSE_CALLS_WHY}; {CLOSE_CALLS_DOC})"
    )
    # the line follows the table
    lines = result.stdout.splitlines()
    assert lines.index(line) > next(i for i, s in enumerate(lines) if s.startswith("relevance "))


def test_a_run_without_close_calls_prints_no_line_and_counts_zero(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data.jsonl", [CLEAR])
    result = eval_run(data, tmp_path / "run", quiet=False)
    assert "close call" not in result.stdout
    summary = json.loads((tmp_path / "run" / "summary.json").read_text("utf-8"))
    assert {s["close_calls"] for s in summary["metrics"].values()} == {0}


def test_a_verdict_below_its_cut_off_has_a_negative_distance(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data.jsonl", [CLOSE])
    eval_run(data, tmp_path / "run", flip=True)
    rows = rows_of(tmp_path / "run")
    below = round(-NEAR, 4)
    [first, _] = rows["close", "recall"]["verdicts"]
    assert (first["attributed"], first["close_call"]) == (0, {"attributed": below})
    [first, _] = rows["close", "relevance"]["verdicts"]
    assert first["relevance"] == "low"
    assert first["close_call"] == {"relevance": below, "used": below}


def test_a_cached_rerun_writes_the_same_marks_and_counts(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data.jsonl", [CLOSE, CLEAR])

    def run(name: str, judge: ScriptedJudge) -> tuple[bytes, Any]:
        with Cache(tmp_path / "cache.sqlite3") as cache:
            metrics = [ContextRecall(), ContextPosition(), ContextRelevance()]
            outcome = eval_file(
                data, tmp_path / name, judge=CachingJudge(judge, cache), metrics=metrics
            )
        return outcome.results_path.read_bytes(), outcome.summary["metrics"]

    first = run("one", Probable())
    assert b'"close_call"' in first[0]
    again = ScriptedJudge([])  # any call would fail: every answer comes from the cache
    assert run("two", again) == first


def test_the_report_marks_each_close_verdict_and_counts_them(tmp_path: Path) -> None:
    data = write_data(tmp_path / "data.jsonl", [CLOSE, CLEAR])
    eval_run(data, tmp_path / "run")
    summary = read_summary(tmp_path / "run" / "summary.json")
    rows = read_results(tmp_path / "run" / "results.jsonl")
    records, note = load_records(summary, rows, None)
    view = eval_view(summary, rows, records, note)
    assert {m["name"]: m["close_calls"] for m in view["metrics"]} == {
        "recall": 1,
        "position": 1,
        "relevance": 2,
    }
    assert [(it["id"], it["metric"], it["close_calls"]) for it in view["items"]] == [
        ("close", "recall", 1),
        ("close", "position", 1),
        ("close", "relevance", 2),
        ("clear", "recall", 0),
        ("clear", "position", 0),
        ("clear", "relevance", 0),
    ]
    payload = json.loads(str(view["payload"]))
    near = f"{round(NEAR, 4):+.4f}"
    marks = [[r["close"] for r in item["table"]["rows"]] for item in payload["items"][:3]]
    assert marks == [
        [f"close call: attributed {near}", None],
        [f"close call: relevant {near}", None],
        [f"close call: relevance {near}, used {near}", None],
    ]
    assert all(r["close"] is None for it in payload["items"][3:] for r in it["table"]["rows"])


def test_the_diff_names_a_flipped_verdict_that_was_a_close_call(tmp_path: Path) -> None:
    # the same data on "another machine": the near values land just below their cut-offs
    data = write_data(tmp_path / "data.jsonl", [CLOSE, CLEAR])
    eval_run(data, tmp_path / "a")
    eval_run(data, tmp_path / "b", flip=True)
    out_json = tmp_path / "d.json"
    result = invoke("diff", str(tmp_path / "a"), str(tmp_path / "b"), "--json-out", str(out_json))
    assert result.exit_code == EXIT_OK, result.stderr
    doc = json.loads(out_json.read_text("utf-8"))
    near, below = round(NEAR, 4), round(-NEAR, 4)
    [flip] = doc["metrics"]["recall"]["top"][0]["flipped"]
    assert flip == {
        "piece": 0,
        "a": {"attributed": 1},
        "b": {"attributed": 0},
        "close_call_a": {"attributed": near},
        "close_call_b": {"attributed": below},
    }
    assert {m: d["n_flipped_close"] for m, d in doc["metrics"].items()} == {
        "recall": 1,
        "position": 1,
        "relevance": 1,
    }
    assert (
        f"#0 (close call in A: attributed {near:+.4f}; in B: attributed {below:+.4f})"
        in result.stdout
    )
    assert result.stdout.splitlines()[-2] == (
        f"close calls among the flipped verdicts: recall 1, position 1, relevance 1 "
        f"({CLOSE_CALLS_WHY}; {CLOSE_CALLS_DOC})"
    )
