"""What the default judge answers where no person has a doubt: the README's own examples and
the bundled contrast items, with the shipped settings, as a new user sees them.

Clear-cut passages of ``examples/rag.jsonl`` are those ``examples/labelled.jsonl`` labels
``high`` (the passage states the answer: "Neil Armstrong stepped onto the lunar surface ...")
or ``none`` (about something else: "Bananas are rich in potassium."). A ``low`` passage is on
the subject without the answer ("The Apollo program was run by NASA ..."): whether a reader
counts it as relevant to the question is a judgement call, so it is not pinned here.

What the default judge gets wrong here is listed in :data:`KNOWN_MISSES`, each with its reason
and in docs/figures.md's "Still weak": any other miss fails, and so does a listed one that is right
again (then its line goes), so the list stays exactly what the judge gets wrong. A verdict that
is a close call (within ``CLOSE_CALL_MARGINS`` of its cut-off) can go either way on another
machine, so it is pinned neither way: it is left out of both sides, and at most
:data:`CLOSE_CALLS_ALLOWED` of the decisions checked may be close calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from localjudge import ContextPosition, evaluate, load_judge
from localjudge.decisions import judge_cutoffs
from localjudge.run.calibrate.contrast_items import contrast_check

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[2]
LABELLED = ROOT / "examples" / "labelled.jsonl"

#: the default judge's wrong verdicts on these cases with the shipped neighbour-free fits
#: (cut-offs bc898d287e1f), position with the expected answer (cut-off 0.369): each passage is
#: another fact about the country the question names, in the question's language; the call's
#: own P(yes) is already above one half and the QUESTION reads better after the passage than
#: after none, so the combination says relevant; no neighbour-free combination of the
#: committed rows' readings separates them (issue 55's note; docs/figures.md, "Still weak")
KNOWN_MISSES = {
    "readme": {
        "fr-loire #1 (none): position says relevant=True": "'La Seine traverse Paris.' for "
        "the longest river of France (the call: P(yes) 0.61; combined 0.55)",
        "ja-fuji #1 (none): position says relevant=True": "'東京は日本の首都です。' (Tokyo is "
        "the capital) for the highest mountain of Japan (the call: P(yes) 0.64; combined 0.84)",
    },
    "obvious": {
        "position.relevant_answer fact-pt-brasilia #0": "'O café é uma das principais "
        "exportações do Brasil.' for the capital of Brazil (the call: P(yes) 0.58; combined "
        "0.46)",
    },
}


#: how many of the decisions checked here may be close calls (a close call is a verdict no test
#: can pin on every machine), so that what is pinned stays most of them: measured on the default
#: judge, 6 of the README's 24 clear-cut position verdicts (position's margin is wide:
#: docs/reliability.md, "Close calls") and 5 of the obvious check's 104 with an expected answer
CLOSE_CALLS_ALLOWED = {"readme": 8, "obvious": 12}


@pytest.fixture(scope="module")
def default_judge(isolated_env: Path) -> Any:
    return load_judge(n_threads=2, cache=False)


def _examples() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LABELLED.read_text("utf-8").splitlines() if line]


def test_position_gets_every_clear_cut_passage_of_the_readme_examples_right(
    default_judge: Any,
) -> None:
    records = _examples()
    inputs = [{k: v for k, v in r.items() if k != "labels"} for r in records]
    results = {
        (r.id, r.metric): r.result for r in evaluate(inputs, [ContextPosition()], default_judge)
    }
    wrong, close = [], []
    clear = 0
    for r in records:
        position = results[(r["id"], "position")]
        assert position is not None
        for i, level in enumerate(r["labels"]["levels"]):
            if level not in ("high", "none"):
                continue
            clear += 1
            verdict = position.verdicts[i]
            relevant = bool(verdict["relevant"])
            line = f"{r['id']} #{i} ({level}): position says relevant={relevant}"
            if "relevant" in verdict.get("close_call", {}):
                close.append(line.split(":", maxsplit=1)[0])
            elif relevant != (level == "high"):
                wrong.append(line)
    assert clear == 24  # the README's 15 examples hold 24 clear-cut passages
    assert len(close) <= CLOSE_CALLS_ALLOWED["readme"], close
    pinned = [m for m in KNOWN_MISSES["readme"] if m.split(":")[0] not in close]
    assert sorted(wrong) == sorted(pinned)


def test_the_shipped_fits_get_the_bundled_obvious_items_right(default_judge: Any) -> None:
    """The check calibrate puts a user's fit to, on the fits that ship with the default: both
    position kinds, and relevance's grade (the answer passage medium or high, the other low or
    none; fitting/README.md, "Several sources at once", and docs/figures.md)."""
    kinds = {"position.relevant", "position.relevant_answer", "relevance.grade"}
    found = contrast_check(default_judge, judge_cutoffs(default_judge.identity), kinds)
    missed, close = [], []
    for kind in sorted(kinds):
        assert len(found.of(kind)) == 52, kind
        close += [f"{kind} {d.item} #{d.piece}" for d in found.of(kind) if d.close_call is not None]
        missed += [
            f"{kind} {d.item} #{d.piece}" for d in found.misses(kind) if d.close_call is None
        ]
    assert len(close) <= CLOSE_CALLS_ALLOWED["obvious"], close
    assert sorted(missed) == sorted(m for m in KNOWN_MISSES["obvious"] if m not in close)
