"""Every labelled source at once: the passage decisions refitted with RAGBench and TruLens in
the pool, relevance's grade held to the obvious targets, recall's cut-off on WiCE and XQuAD.

    python fitting/convert.py ragbench --limit 0 -o /work/runs/dev
    python fitting/convert.py wice --limit 0 -o /work/runs/dev
    python fitting/fit_pooled.py judge /work/runs/dev /work/runs/pooled [-t 2]
    python fitting/fit_pooled.py report /work/runs/sources /work/runs/sources-trulens \\
        /work/runs/sources-confirm /work/runs/pooled [--write]

**Why a second run.** ``fit_sources.py`` pooled LLMJudge dev and XQuAD (paragraphs and
sentences); TruLens was cut for time and RAGBench and WiCE were not in it, so recall's cut-off
was never fitted on several sources, and relevance's grade fit missed one obvious target
(another article's paragraph graded ``none``: 0.85 on 100 lists, el and hi 0.50, where the
target is 0.90). Every row ``fit_sources.py`` and ``fit_sources_confirm.py`` judged is read
again as it is; the new rows are judged by this script.

**New samples, fixed before any of their rows was judged** (groups in sha256 order,
:func:`common.half_of`):

- ``ragbench`` (labels by GPT-4, not people: a document is relevant when any of its sentence
  keys is): ``convert.py ragbench`` (every usable row, documents cut to 1,200 characters),
  split by item; per subset the first 6 items of half A and the first 10 of half B. Position
  asks the question alone (RAGBench's response is a model's answer, not a reference).
- ``xquadfresh``: 4 XQuAD paragraph lists per language from B-half questions that neither
  ``fit_sources.py`` nor ``fit_sources_confirm.py`` judged (:func:`common.per_language`).
- ``xquadrecall``: the two recall items (the answer's sentence against its paragraph, 1; against
  the two paragraphs without it, 0) of every question of ``fit_sources.py``'s XQuAD paragraph
  sample (A: 3, B: 6 per language).
- ``wice``: WiCE dev oracle chunks (``convert.py wice``), supported (1) or not supported (0)
  claims only, the first chunk of each claim; split by claim; per half every ``not_supported``
  claim and the first supported ones in sha256 order, 30 in A and 40 in B.

**The rule, fixed before any new row was judged.** Report rows: every source's B half; for
XQuAD paragraphs also the fresh lists of both confirmations (4 + 4 per language: 14 per
language in all). Intervals: bootstrap over groups, 2,000 draws, seeded; "no source worse":
the paired difference against the neutral decision has its lower 95% bound >= -0.02 on every
source; "pooled gain": the mean over sources of that difference has its lower bound above 0.

1. ``position.relevant`` (LLMJudge, TruLens, RAGBench, XQuAD paragraphs and sentences) and
   ``position.relevant_answer`` (XQuAD paragraphs and sentences): ``fit_sources_rule``'s
   rule as it stands (candidates ``judged`` and ``judged+question_centred``, fitted on every
   A half together, each source weighing the same, the choice by the mean over sources on
   held-out halvings of A; the obvious targets of ``fit_sources_rule.OBVIOUS`` on the report
   rows, no source worse, pooled gain). Where the chosen fit fails, the fit shipped today (in
   the registry) stays if it passes the same three conditions on the same report rows (it was
   fitted on fewer sources' A halves, never on a B half); otherwise the kind falls back to the
   neutral cut-off.
2. ``relevance.grade`` (LLMJudge, XQuAD paragraphs and sentences): one candidate,
   ``judged+question_centred`` with its combination fitted as ``fit_sources_rule.fitted``
   does, and its cut-offs fitted under the grade's obvious targets: among the fitted
   cut-offs and those that move the ``none``/``low`` cut-off up past an A-half XQuAD
   paragraph of another article, or the ``low``/``medium`` cut-off down past an answer
   paragraph, the ones with the best mean over sources of A's QWK for which, on A, at least
   0.95 of another article's paragraphs are graded ``none`` and 0.95 of the answer paragraphs
   medium or high. It ships when on the report rows the grade's obvious targets hold (both
   >= 0.90), no source is worse than the neutral cut-offs, the pooled gain holds, and
   LLMJudge's QWK is at least 0.347 (the issue's floor). Otherwise the grade shipped today
   stays (``fit_grade_confirm.py``).
3. ``recall.supported`` (WiCE, XQuAD recall items): the call's own soft value (P(supported))
   against one cut-off fitted for kappa on every statement of the A halves together (each
   source weighing the same; a statement takes its item's label). Figure: Cohen's kappa per
   statement. It ships when, on B, XQuAD's recall items reach balanced accuracy >= 0.95 (an
   item is supported when at least half its statements are), no source is worse than the
   neutral cut-off (0.5), and the pooled gain holds. Otherwise recall keeps the neutral
   cut-off.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fit_sources as fs  # noqa: E402
from common import (  # noqa: E402
    SHARED,
    half_of,
    judge_each,
    per_language,
    read_jsonl,
    source_lists,
    xquad,
    xquad_lists,
)

RAGBENCH_PER_SUBSET = (6, 10)
FRESH_PER_LANG = 4
WICE_SUPPORTED = (30, 40)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def ragbench(dev: Path) -> list[dict[str, Any]]:
    """RAGBench lists (:func:`common.source_lists` form), per subset 6 of A and 10 of B."""
    records = read_jsonl(dev / "ragbench.jsonl")
    lists = source_lists("ragbench", records, lambda r: r["id"], lambda r: "en")
    for x in lists:
        x["subset"] = x["id"].split("-")[1]
    out = []
    for subset in sorted({x["subset"] for x in lists}):
        for half, count in zip("AB", RAGBENCH_PER_SUBSET, strict=True):
            mine = [x for x in lists if x["subset"] == subset and x["half"] == half]
            out += sorted(mine, key=lambda x: _sha(x["group"]))[:count]
    return out


def xquad_fresh() -> list[dict[str, Any]]:
    """4 lists per language of B-half questions no earlier sample holds."""
    from fit_sources_confirm import fresh_lists

    every = xquad_lists("xquad")
    used = {x["group"] for x in xquad("xquad")} | {x["group"] for x in fresh_lists()}
    fresh = {x["group"] for x in every if x["half"] == "B"} - used
    return [dict(x, source="xquad") for x in per_language(every, fresh, FRESH_PER_LANG)]


def recall_items(dev: Path) -> list[dict[str, Any]]:
    """The recall items of both recall sources: ``{source, id, group, half, lang, record,
    label}``."""
    out = []
    wanted = {x["id"]: x for x in xquad("xquad")}
    for r in read_jsonl(SHARED / "xquad-dev" / "recall.jsonl.gz"):
        x = wanted.get(r["id"].rsplit("-", 1)[0])
        if x is not None:
            out.append(_recall("xquadrecall", r, x["group"], x["half"], x["lang"]))
    first: dict[str, dict[str, Any]] = {}
    for r in read_jsonl(dev / "wice.jsonl"):
        if r["labels"]["recall"] in (0, 1):
            first.setdefault(r["source"]["claim_id"], r)
    halves = half_of(first)
    for half, count in zip("AB", WICE_SUPPORTED, strict=True):
        claims = sorted((c for c in first if halves[c] == half), key=_sha)
        no = [c for c in claims if first[c]["labels"]["recall"] == 0]
        yes = [c for c in claims if first[c]["labels"]["recall"] == 1][:count]
        out += [_recall("wice", first[c], c, half, "en") for c in sorted(no + yes, key=_sha)]
    return out


def _recall(source: str, r: dict[str, Any], group: str, half: str, lang: str) -> dict[str, Any]:
    record = {k: r[k] for k in ("id", "user_input", "retrieved_contexts", "reference")}
    return {
        "source": source,
        "id": r["id"],
        "group": group,
        "half": half,
        "lang": lang,
        "record": record,
        "label": int(r["labels"]["recall"]),
    }


def recall_rows(items: list[dict[str, Any]], judge: Any) -> list[dict[str, Any]]:
    """One row per statement: its item's label and the call's soft value and log-odds."""
    from localjudge.data.items import make_item
    from localjudge.decisions import Cutoffs, decide_all
    from localjudge.metrics.recall import ContextRecall
    from localjudge.run.evaluate.grouping import ask_grouped

    all_asks = [ContextRecall().build(make_item(x["record"], index=0)) for x in items]
    outcomes = ask_grouped(judge, [[a.request for a in asks] for asks in all_asks])
    rows = []
    for x, asks, gens in zip(items, all_asks, outcomes, strict=True):
        for ask, answer in zip(asks, decide_all(asks, gens, Cutoffs()), strict=True):
            rows.append(
                {
                    **{k: x[k] for k in ("source", "id", "group", "half", "lang", "label")},
                    "statement": ask.at,
                    "soft": answer.soft,
                    "judged": (answer.readings or {}).get("judged"),
                }
            )
    return rows


def judge_command(args: argparse.Namespace) -> None:
    from localjudge import load_judge

    judge = load_judge(args.model, n_threads=args.threads, cache=True)
    jobs = {
        "xquadfresh": lambda: fs.judge_rows(xquad_fresh(), judge),
        "ragbench": lambda: fs.judge_rows(ragbench(args.dev), judge),
        "recall": lambda: recall_rows(recall_items(args.dev), judge),
    }
    judge_each(args.out, jobs, args.only)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    j = sub.add_parser("judge", help="judge the new samples, a rows file each")
    j.add_argument("dev", type=Path, help="the folder of convert.py's ragbench and wice files")
    j.add_argument("out", type=Path)
    j.add_argument("-m", "--model", default=None)
    j.add_argument("-t", "--threads", type=int, default=None)
    j.add_argument("--only", nargs="*", help="judge only these samples")
    r = sub.add_parser("report", help="the rule on every rows folder; --write what ships")
    r.add_argument("rows", type=Path, nargs="+", help="rows folders (fresh lists as B)")
    r.add_argument("-m", "--model", default=None)
    r.add_argument("--write", action="store_true")
    r.add_argument(
        "--keep",
        nargs="*",
        default=(),
        help="kinds whose shipped fit stays though the rule refuses it (recorded as such)",
    )
    args = parser.parse_args(argv)
    if args.command == "judge":
        judge_command(args)
    else:
        from fit_pooled_rule import report_command

        report_command(args)


if __name__ == "__main__":
    main()
