"""Oversized input: what ``localjudge eval`` does with it, and its peak memory.

    python benchmarks/robustness/oversized.py [--work DIR] [--model smollm2-135m]

Each case is a data file written under ``--work`` (default: a temporary directory) with one
small real item beside the oversized one, run as ``localjudge eval FILE --metric recall
--no-cache -t 1 -q`` in a fresh process tree. The script prints, per case, the exit code, the
error row of the oversized record (or the fatal error line), whether the small item still
scored, the wall time and the peak resident memory of the largest process in the tree
(``getrusage(RUSAGE_CHILDREN)`` of a wrapper that runs only that command). The baseline case
is the small item alone.

Cases: a 100 MB context string (refused while reading: over the record limit), the same with
the limit raised to 256 MiB (read, then refused by the context window), an item with 10,000
contexts (as recall, position and relevance), and a 10 GB file of one line followed by the
small item (sparse, so it costs no disk).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SMALL = json.loads((ROOT / "examples" / "rag.jsonl").read_text("utf-8").splitlines()[0])
WRAPPER = (
    "import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode; "
    "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)"
)


def small_line() -> str:
    return json.dumps({**SMALL, "id": "small"}, ensure_ascii=False) + "\n"


def write_cases(work: Path) -> list[tuple[str, Path, list[str], dict[str, str]]]:
    cases: list[tuple[str, Path, list[str], dict[str, str]]] = []
    base = work / "baseline.jsonl"
    base.write_text(small_line(), "utf-8")
    cases.append(("baseline: one small item", base, ["--metric", "recall"], {}))

    huge = work / "context-100mb.jsonl"
    with huge.open("w", encoding="utf-8") as f:
        big = {**SMALL, "id": "huge", "retrieved_contexts": ["word " * 20_000_000]}
        f.write(json.dumps(big) + "\n" + small_line())
    cases.append(("100 MB context string", huge, ["--metric", "recall"], {}))
    cases.append(
        (
            "100 MB context, limit 256 MiB",
            huge,
            ["--metric", "recall"],
            {"LOCALJUDGE_MAX_RECORD_BYTES": str(256 * 2**20)},
        )
    )

    many = work / "contexts-10000.jsonl"
    pieces = [f"Passage {i} mentions the tower." for i in range(10_000)]
    many.write_text(
        json.dumps({**SMALL, "id": "many", "retrieved_contexts": pieces}) + "\n" + small_line(),
        "utf-8",
    )
    cases += [
        (f"10,000 contexts, {metric}", many, ["--metric", metric], {})
        for metric in ("recall", "position", "relevance")
    ]

    line = work / "one-line-10gb.jsonl"
    with line.open("wb") as f:
        f.seek(10 * 10**9)  # a sparse hole of NUL bytes: one 10 GB line without a newline
        f.write(b"\n" + small_line().encode("utf-8"))
    cases.append(("10 GB file of one line", line, ["--metric", "recall"], {}))
    return cases


def run_case(
    data: Path, args: list[str], env: dict[str, str], model: str, out: Path
) -> dict[str, Any]:
    command = [
        sys.executable, "-c", WRAPPER, "localjudge", "eval", str(data), *args, "-m", model,
        "--no-cache", "-t", "1", "-q", "-o", str(out),
    ]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(
        command, env={**os.environ, **env}, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - start
    *lines, last = done.stderr.strip().splitlines()
    rc, peak_kb = (int(x) for x in last.split())
    rows = []
    results = out / "results.jsonl"
    if results.exists():
        rows = [json.loads(x) for x in results.read_text("utf-8").splitlines()]
    fatal = next((x for x in lines if x.startswith("localjudge: error:")), None)
    return {"rc": rc, "peak_mb": peak_kb / 1024, "seconds": seconds, "rows": rows, "fatal": fatal}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--model", default="smollm2-135m")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        print(f"{'case':<32} {'rc':>3} {'peak MB':>8} {'s':>6}  small item  oversized record")
        for n, (name, data, extra, env) in enumerate(write_cases(work)):
            res = run_case(data, extra, env, args.model, work / f"out-{n}")
            small = next((r for r in res["rows"] if r["id"] == "small"), None)
            other = next((r for r in res["rows"] if r["id"] != "small"), None)
            if other is not None:
                what = other["error"]["message"] if other["error"] else f"score {other['score']}"
            else:
                what = res["fatal"] or "-"
            scored = "-" if small is None else ("scored" if small["score"] is not None else "FAIL")
            print(
                f"{name:<32} {res['rc']:>3} {res['peak_mb']:>8.0f} {res['seconds']:>6.1f}  "
                f"{scored:<10}  {what[:150]}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
