"""One way from a probability to a verdict: the committed rows of a source, decided through
``eval``'s path (:func:`localjudge.decisions.decide` with the judge's cut-offs as ``eval``
loads them), are exactly the decisions the build's figures counted: the same hard values as
``fitting/build.py`` makes on every part, the validation figures of ``fitting/evidence.json``
and the sealed test part's of ``fitting/sealed.json``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from benchmark_scripts import ROOT, load

from localjudge.decisions import (
    Cutoffs,
    builtin_cutoffs,
    decide,
    read_shipped,
    readings,
    ruling,
)
from localjudge.judge.protocol import Generation, GenerationStats, Reading, SoftDecision
from localjudge.metrics.instructions import GRADE, RELEVANT, RELEVANT_ANSWER, SUPPORTED, ask_request

build = load("fitting/build")
row_files = load("fitting/row_files")

JUDGE = "qwen2.5-coder-1.5b"  # the default judge
DECISIONS = {d.kind: d for d in (SUPPORTED, RELEVANT, RELEVANT_ANSWER, GRADE)}
STATS = GenerationStats(1, 1, 1, 0.0)


def _raw(row: dict[str, Any], which: str) -> Reading | None:
    raw = row.get("raw", {})
    return Reading(*raw[which]) if which in raw else None


def eval_hard(row: dict[str, Any], cutoffs: Cutoffs) -> int:
    """A row's hard value as ``eval`` decides its call. A yes/no row is the call itself:
    P(yes) = the row's soft value, the QUESTION's readings after the passage and after none,
    through :func:`decide`. A graded row keeps its call's expected grade, not the four
    probabilities it came from, so it enters where :func:`decide` goes once it has read them:
    :func:`readings`, then :func:`ruling`."""
    decision = DECISIONS[row["kind"]]
    soft = float(row["soft"])
    if decision.graded:
        found = readings(True, soft, _raw(row, "read"), _raw(row, "alone"))
        return ruling(decision.kind, soft, found, cutoffs).hard
    ask = ask_request("system", "shared", "own", decision, at=0)
    probs = {'"yes"': soft, '"no"': 1.0 - soft}
    value = decision.schema()(**{decision.key: "yes"})
    call = Generation(
        value,
        "{}",
        STATS,
        decisions=(SoftDecision(decision.key, probs, '"yes"'),),
        reading=_raw(row, "read"),
    )
    answer = decide(ask, call, cutoffs, _raw(row, "alone"))
    # eval read the call as the build reads the row (row_files.py makes its readings again)
    assert answer.readings == {k: row["readings"][k] for k in answer.readings or {}}
    return 1 if answer.value == "yes" else 0


@pytest.fixture(scope="module")
def judged() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return row_files.of_judge(JUDGE)


@pytest.mark.parametrize("source", ["trulens", "wice", "xquad"])
def test_eval_decides_a_source_s_rows_as_the_build_counted_them(judged, source):
    meta, found = judged
    cutoffs = builtin_cutoffs(meta["sha256"])  # what eval decides this judge's calls with
    entry = next(j for j in read_shipped().judges if j.alias == JUDGE)
    evidence = json.loads(build.EVIDENCE_PATH.read_text("utf-8"))[JUDGE]
    sealed = json.loads((ROOT / "fitting" / "sealed.json").read_text("utf-8"))["judges"][JUDGE]
    kinds = [k for k, sources in build.KIND_SOURCES.items() if source in sources]
    assert kinds
    for kind in kinds:
        shipped = entry.kinds[kind]
        # every row what ships can decide (a row lacking a reading its combination weighs is
        # one the build leaves out, and eval decides on the call's own soft value), every part
        mine = build.usable(
            kind, build.weighed(shipped), [r for r in found if r["source"] == source]
        )
        assert mine, kind
        by_eval = [eval_hard(r, cutoffs) for r in mine]
        assert by_eval == build.Fit.shipped(kind, shipped).hard(mine), kind
        # the figures the build and the seal wrote count these decisions, on the rows each
        # measured: the validation part's that its chosen candidate weighs, the test part's
        # that what ships weighs
        counted = "neutral" if shipped.status == "neutral" else "fit"
        chosen = build.CANDIDATES[evidence[kind]["chosen"]]
        for part, names, figure in (
            ("validation", chosen, evidence[kind]["validation"][source][counted]),
            ("test", build.weighed(shipped), sealed[kind]["sources"][source]["ships"]["value"]),
        ):
            idx = [
                n
                for n, r in enumerate(mine)
                if r["part"] == part and all(name in r["readings"] for name in names)
            ]
            assert idx, (kind, part)
            labels = [mine[n]["label"] for n in idx]
            decided = [by_eval[n] for n in idx]
            assert build.rounded(build.figure_of(kind, labels, decided)) == figure, (kind, part)
