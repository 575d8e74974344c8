"""Confirm, on fresh XQuAD lists, a fit whose only miss was a per-language cell of 6 lists.

    python fitting/fit_sources_confirm.py judge /work/runs/sources-confirm [-t 2]
    python fitting/fit_sources_confirm.py report /work/runs/sources /work/runs/sources-confirm

**Why.** ``fit_sources.py``'s rule was committed with 10 XQuAD report lists per language and
run with 6 (cut for time before judging). On 6 lists one miss is 0.83, under the 0.90 a
language must reach, so a fit can fail the per-language targets by one list. The first kind
judged, ``position.relevant_answer``, did exactly that: its chosen fit (judged +
question_centred) met every pooled obvious target, beat the neutral cut-off on every source
(paired lower bounds +0.53 and +0.39) and missed three languages' answer share at 5/6.

**The confirmation rule, committed before any fresh list was judged.** Fresh data: per
language, 4 XQuAD report-half (B) questions that no earlier sample of ``fit_sources.py`` holds
(B's questions in sha256 order less those of the paragraph sample; language k takes the k-th
slice of 4 it has), paragraphs, judged with the same calls. For every kind whose chosen fit,
fitted on the A halves and unchanged, passed the rule's other two conditions (no source worse,
pooled gain) and missed no obvious target but per-language ones: pooled with the 6 lists per
language already judged (10 per language, the size the rule was committed with), every
per-language share must reach 0.90 and every pooled obvious target of the rule must still hold
(the short lists' targets as measured). Then the fit ships; otherwise the kind takes the
neutral cut-off, as the rule says.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fit_sources as fs  # noqa: E402
import fit_sources_rule as rule  # noqa: E402
from common import load_rows, per_language, rows_digest, xquad, xquad_lists  # noqa: E402

PER_LANG = 4


def fresh_lists() -> list[dict[str, Any]]:
    """The fresh lists: B-half questions outside the paragraph sample, 4 per language."""
    every = xquad_lists("xquad")
    used = {x["group"] for x in xquad("xquad")}
    fresh = {x["group"] for x in every if x["half"] == "B"} - used
    return per_language(every, fresh, PER_LANG)


def judge_command(args: argparse.Namespace) -> None:
    from localjudge import load_judge

    judge = load_judge(args.model, n_threads=args.threads, cache=True)
    args.out.mkdir(parents=True, exist_ok=True)
    lists = fresh_lists()
    started = time.perf_counter()
    rows = fs.judge_rows(lists, judge)
    (args.out / "xquad.json").write_text(json.dumps(rows), "utf-8")
    print(f"xquad fresh: {len(lists)} lists judged in {time.perf_counter() - started:.0f} s")


def confirm(rows: list[dict[str, Any]], fresh: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """The kind's result under the first rule, and whether the confirmation ships its fit."""
    result = rule.decide_kind(rows, kind)
    why = result["why"]
    missed = [t for t, f in result["obvious"][result["chosen"]].items() if not f["met"]]
    eligible = why["no source worse"] and why["pooled gain"] and all("[" in t for t in missed)
    out: dict[str, Any] = {"result": result, "eligible": eligible, "missed_first": missed}
    if result["ships"] or not eligible:
        out["ships"] = result["ships"]
        return out
    fit = result["fit"]
    b = rule.rows_of(rows, kind, "B")
    extra = [dict(r, half="B") for r in fresh]
    pooled = b + rule.rows_of(extra, kind, "B")
    readings = rule.reading_values(pooled, kind)
    found = rule.obvious(pooled, fit.hard(readings), fit.soft(readings), kind)
    out["confirmed"] = found
    out["ships"] = all(f["met"] for f in found.values())
    return out


def report_command(args: argparse.Namespace) -> None:
    rows, fresh = load_rows(args.rows), load_rows(args.fresh)
    print(f"fresh lists: {len({r['id'] for r in fresh})}")
    results = {}
    for kind in rule.KINDS:
        out = confirm(rows, fresh, kind)
        results[kind] = out
        print(
            f"\n## {kind}: chosen {out['result']['chosen']}; first rule ships: "
            f"{out['result']['ships']}; missed: {out['missed_first']}; eligible: {out['eligible']}"
        )
        for t, f in (out.get("confirmed") or {}).items():
            mark = "" if f["met"] else " ✗"
            print(f"  {t} (>= {f['target']}): {f['value']:.2f}{mark}")
        print(f"  ships: {out['ships']}")
    if args.write:
        for out in results.values():
            out["result"]["ships"] = out["ships"]
            if out.get("confirmed") is not None:
                out["result"]["why"]["confirmed on fresh lists"] = out["ships"]
                out["result"]["obvious"][out["result"]["chosen"]] = out["confirmed"]
        fs.write(
            {k: o["result"] for k, o in results.items()},
            args.model,
            rows_digest(args.rows, args.fresh),
        )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    j = sub.add_parser("judge")
    j.add_argument("out", type=Path)
    j.add_argument("-m", "--model", default=None)
    j.add_argument("-t", "--threads", type=int, default=None)
    r = sub.add_parser("report")
    r.add_argument("rows", type=Path)
    r.add_argument("fresh", type=Path)
    r.add_argument("-m", "--model", default=None)
    r.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    (judge_command if args.command == "judge" else report_command)(args)


if __name__ == "__main__":
    main()
