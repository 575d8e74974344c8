"""Are the verdicts about the item? Content shares of bench runs, per judge and data set.

    PYTHONPATH=SRC python benchmarks/quality/verdict_content.py RUN_DIR [RUN_DIR ...]

Each RUN_DIR is a ``localjudge bench`` output directory. For every judge in it, over the items it
scored, the script prints the share of items

- ``off_ref``: recall with a statement that is not a verbatim span of the item's reference;
- ``dup``: recall with a statement given twice (same text up to case and spaces);
- ``copy_missing``: relevance with a missing item that repeats the instructions: one localjudge
  discarded (``details.discarded_missing``) or, in runs made before it discarded them, a counted
  one that repeats them;
- ``copy_reason``: rows (any metric) with a reason that repeats the instructions (allowed,
  counted);

and the agreement figures of the run (ROC AUC for recall, kappa and Spearman otherwise).

The prompts have no worked examples any more (one decision per call; the judge copied an
example's verdicts and names into its own), so the copy check is no longer this script's own
test for an example's capitalised names: it is localjudge's
:data:`localjudge.metrics.instructions.COPIES`, a text that equals a sentence of any call's
instructions or question (system texts, decision questions, the reason question), or contains one
of at least four words that the item's data does not contain. The instructions are those of the
``localjudge`` on ``PYTHONPATH``: run it with the source tree that made the runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from localjudge.metrics.base import PromptCopies
from localjudge.metrics.instructions import COPIES


def item_text(rec: Mapping[str, Any]) -> str:
    parts = [rec.get(k) for k in ("user_input", "input", "reference", "response", "output")]
    contexts = rec.get("retrieved_contexts", rec.get("context")) or []
    return "\n".join([p for p in parts if isinstance(p, str)] + [str(c) for c in contexts])


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def shares(
    rows: Iterable[Mapping[str, Any]],
    records: list[dict[str, Any]],
    copies: PromptCopies = COPIES,
) -> dict[str, Any]:
    n: dict[str, int] = {}
    hits = {"off_ref": 0, "dup": 0, "copy_missing": 0, "copy_reason": 0}
    items: set[int] = set()
    for row in rows:
        if row.get("error") is not None or not row.get("verdicts"):
            continue
        metric, rec = row["metric"], records[int(row["index"])]
        data = item_text(rec)
        n[metric] = n.get(metric, 0) + 1
        items.add(int(row["index"]))
        verdicts = row["verdicts"]
        if metric == "recall":
            statements = [str(v.get("statement", "")) for v in verdicts]
            hits["off_ref"] += any(s not in rec["reference"] for s in statements)
            normals = [" ".join(s.split()).casefold() for s in statements]
            hits["dup"] += len(set(normals)) < len(normals)
        if metric == "relevance":
            details = row.get("details") or {}
            counted = details.get("missing") or []
            discarded = details.get("discarded_missing") or []
            hits["copy_missing"] += bool(discarded) or any(copies(m, data) for m in counted)
        hits["copy_reason"] += any(copies(str(v.get("reason", "")), data) for v in verdicts)
    return {"n": n, **hits}


def _fig(name: str, value: float | None) -> str:
    return f"{name} {value:.3f}" if value is not None else f"{name} -"


def agreement(metrics: Mapping[str, Any]) -> str:
    out = []
    for metric, m in metrics.items():
        scores = m.get("scores") or {}
        verdicts = next(iter((m.get("verdicts") or {}).values()), None)
        fig = []
        if "roc_auc" in scores:
            fig.append(_fig("auc", scores["roc_auc"]["value"]))
        if verdicts:
            fig.append(_fig("kappa", verdicts["kappa"]["value"]))
        fig.append(_fig("rho", (scores.get("spearman") or {}).get("value")))
        fig.append(_fig("mae", (scores.get("mae") or {}).get("value")))
        out.append(f"{metric}: {', '.join(fig)}")
    return "; ".join(out)


def _share(hits: int, n: int) -> str:
    return f"{hits / n:.3f}" if n else "-"


HEADER = (
    f"{'set':<16} {'judge':<14} {'recall':>6} {'off_ref':>7} {'dup':>6} {'rel':>4} "
    f"{'copy_missing':>12} {'rows':>5} {'copy_reason':>11}  agreement"
)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="localjudge bench output folders")
    args = parser.parse_args(argv)
    print(HEADER)
    for run in args.runs:
        bench = json.loads((run / "bench.json").read_text("utf-8"))
        records = read_jsonl(Path(bench["data"]))
        for judge_dir in sorted((run / "judges").iterdir()):
            name = judge_dir.name.split("-", 1)[1]
            s = shares(read_jsonl(judge_dir / "results.jsonl"), records)
            n_rec, n_rel = s["n"].get("recall", 0), s["n"].get("relevance", 0)
            n_rows = sum(s["n"].values())
            print(
                f"{run.name:<16} {name:<14} {n_rec:>6} {_share(s['off_ref'], n_rec):>7} "
                f"{_share(s['dup'], n_rec):>6} {n_rel:>4} "
                f"{_share(s['copy_missing'], n_rel):>12} {n_rows:>5} "
                f"{_share(s['copy_reason'], n_rows):>11}  "
                f"{agreement(bench['judges'][name]['metrics'])}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
