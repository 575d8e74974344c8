"""Memory of a long run: does it stay flat as the dataset grows?

Generates a JSONL file of N items (default 100,000) in a temporary directory: varied sizes
(0-5 context pieces of 10 to 2,000 characters, a few items near 1 MB), about 1% malformed lines
(truncated JSON, invalid UTF-8, non-objects), blank lines and items with missing fields. Then, each
phase in a fresh process (so that the peak RSS of one phase does not hide the next):

- ``read``: stream the file through ``localjudge.data.readers.read_records``;
- ``eval``: ``localjudge.run.evaluate.file_run.eval_file`` (the streaming ``evaluate`` plus the
  ``results.jsonl`` writer) with a :class:`~localjudge.testing.ScriptedJudge` (no model) answering
  every call (one decision per call, then a reason per decision) from its schema's one key;
- ``summary``: the same run's end: the summary statistics (bootstrap CI) eval_file computes after
  the last row.

At 10k, 50k and 100k items it reports the growth, since the phase started, of the peak RSS
(``resource.getrusage().ru_maxrss``), of the current RSS (``/proc/self/statm``) and of the Python
heap traced by ``tracemalloc`` (current and peak).

``ScriptedJudge`` keeps every call in ``judge.calls`` (messages included): at 100k items x 3
metrics that list alone would grow by gigabytes, so the reply function clears it on every call
(``--keep-calls`` keeps it, to see the difference).

Usage: python benchmarks/speed/memory.py [--items N] [--metrics position,recall,relevance]
                                   [--keep-calls] [--no-tracemalloc]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

CHECKPOINTS = (10_000, 50_000, 100_000)
WORDS = (
    "the",
    "tower",
    "stands",
    "in",
    "Paris",
    "and",
    "was",
    "built",
    "for",
    "the",
    "world",
    "fair",
    "of",
    "1889",
    "water",
    "boils",
    "at",
    "one",
    "hundred",
    "degrees",
    "at",
    "sea",
    "level",
    "巴黎是法国的首都",
    "埃菲尔铁塔位于巴黎",
    "yes",
    "no",
    "maybe",
    "context",
)


# --------------------------------------------------------------------------- data


def _text(rng: random.Random, n_chars: int) -> str:
    out, size = [], 0
    while size < n_chars:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n_chars]


def _piece_len(rng: random.Random) -> int:
    return int(10 * (200 ** rng.random()))  # log-uniform 10..2000 characters


def generate(path: Path, n_items: int, seed: int = 0) -> dict[str, int]:
    """Write ``n_items`` records (plus blank lines, which are not records); return counts."""
    rng = random.Random(seed)
    kinds = {"ok": 0, "missing": 0, "malformed": 0, "huge": 0, "blank": 0}
    with path.open("wb") as f:
        for i in range(n_items):
            if rng.random() < 0.005:
                f.write(b"\n" if rng.random() < 0.5 else b"   \r\n")
                kinds["blank"] += 1
            r = rng.random()
            if r < 0.004:
                f.write(b'{"id": "cut-%d", "user_input": "half\n' % i)
                kinds["malformed"] += 1
                continue
            if r < 0.007:
                f.write(b'{"id": "bad-%d", "user_input": "\xff\xfe"}\n' % i)
                kinds["malformed"] += 1
                continue
            if r < 0.01:
                f.write(b"[1, 2, 3]\n")
                kinds["malformed"] += 1
                continue
            pieces = [_text(rng, _piece_len(rng)) for _ in range(rng.randint(0, 5))]
            if rng.random() < 0.0001:
                pieces.append(_text(rng, 1_000_000))
                kinds["huge"] += 1
            rec: dict[str, Any] = {
                "id": f"item-{i}",
                "user_input": _text(rng, rng.randint(10, 200)),
                "retrieved_contexts": pieces,
                "reference": _text(rng, rng.randint(10, 300)),
                "response": _text(rng, rng.randint(10, 300)),
            }
            if rng.random() < 0.02:
                del rec[rng.choice(["user_input", "reference", "response", "retrieved_contexts"])]
                kinds["missing"] += 1
            else:
                kinds["ok"] += 1
            f.write(json.dumps(rec, ensure_ascii=False).encode("utf-8") + b"\n")
    return kinds


# --------------------------------------------------------------------------- measuring


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:  # noqa: PTH123 (a proc file, read once)
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


class Probe:
    """Memory growth since the probe was made."""

    def __init__(self, trace: bool) -> None:
        self.trace = trace
        self.start = time.perf_counter()
        self.maxrss0 = _maxrss_mb()
        self.rss0 = _rss_mb()
        if trace:
            tracemalloc.start()
            self.heap0 = tracemalloc.get_traced_memory()[0]

    def sample(self, items: int) -> dict[str, Any]:
        row = {
            "items": items,
            "seconds": time.perf_counter() - self.start,
            "maxrss_growth_mb": _maxrss_mb() - self.maxrss0,
            "rss_growth_mb": _rss_mb() - self.rss0,
        }
        if self.trace:
            current, peak = tracemalloc.get_traced_memory()
            row["heap_current_mb"] = (current - self.heap0) / 2**20
            row["heap_peak_mb"] = (peak - self.heap0) / 2**20
        return row


def phase_read(path: str, checkpoints: list[int], trace: bool) -> list[dict[str, Any]]:
    from localjudge.data.readers import read_records

    probe = Probe(trace)
    rows, n, errors = [], 0, 0
    todo = list(checkpoints)
    for rec in read_records(path):
        n += 1
        errors += not rec.ok
        if todo and n == todo[0]:
            rows.append({**probe.sample(n), "note": f"{errors} error records"})
            todo.pop(0)
    if todo:
        rows.append({**probe.sample(n), "note": f"end: {errors} error records"})
    return rows


def phase_eval(
    path: str, checkpoints: list[int], trace: bool, metric_names: list[str], keep_calls: bool
) -> list[dict[str, Any]]:
    from localjudge.metrics import METRICS
    from localjudge.run.evaluate.file_run import eval_file
    from localjudge.testing import ScriptedJudge

    #: one decision per call: a fixed reply per output schema (its one key)
    replies = {
        "supported": {"supported": "yes"},
        "relevant": {"relevant": "yes"},
        "grade": {"grade": 3},
        "used": {"used": "no"},
        "missing": {"missing": []},
        "reason": {"reason": "r"},
    }

    def reply(messages: list[dict[str, str]], schema: type) -> dict[str, Any]:
        if not keep_calls:
            judge.calls.clear()  # ScriptedJudge records every call; see the module docstring
        [key] = schema.model_fields  # type: ignore[attr-defined]
        return replies[key]

    judge = ScriptedJudge(reply)
    metrics = [METRICS[m]() for m in metric_names]
    probe = Probe(trace)
    rows: list[dict[str, Any]] = []
    todo = list(checkpoints)
    done = [0]

    def on_result(_: Any) -> None:
        done[0] += 1
        if todo and done[0] == todo[0] * len(metrics):
            rows.append({**probe.sample(todo.pop(0)), "note": f"{len(judge.calls)} calls kept"})

    with tempfile.TemporaryDirectory() as out:
        outcome = eval_file(
            Path(path), Path(out), judge=judge, metrics=metrics, on_result=on_result
        )
        end = probe.sample(outcome.summary["run"]["n_items"])
        size = Path(outcome.results_path).stat().st_size / 2**20
    rows.append({**end, "note": f"after summary; results.jsonl {size:.0f} MB"})
    return rows


def _child(conn: Any, fn: Any, args: tuple[Any, ...]) -> None:
    try:
        conn.send(("ok", fn(*args)))
    except BaseException as exc:  # noqa: BLE001 (report anything to the parent)
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def in_fresh_process(fn: Any, *args: Any) -> list[dict[str, Any]]:
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args))
    proc.start()
    child.close()
    status, payload = parent.recv()
    proc.join()
    if status != "ok":
        raise SystemExit(f"phase {fn.__name__} failed: {payload}")
    return payload


def table(title: str, rows: list[dict[str, Any]]) -> str:
    cols = [
        ("items", "{:>8}", "items"),
        ("seconds", "{:>8.1f}", "seconds"),
        ("maxrss_growth_mb", "{:>11.1f}", "peak RSS +MB"),
        ("rss_growth_mb", "{:>10.1f}", "RSS +MB"),
        ("heap_current_mb", "{:>10.1f}", "heap +MB"),
        ("heap_peak_mb", "{:>13.1f}", "heap peak +MB"),
    ]
    cols = [c for c in cols if any(c[0] in r for r in rows)]
    header = "  ".join(f"{name:>{len(fmt.format(0))}}" for _, fmt, name in cols) + "  note"
    lines = [title, header, "-" * len(header)]
    for r in rows:
        cells = [fmt.format(r[key]) if key in r else "" for key, fmt, _ in cols]
        lines.append("  ".join(cells) + "  " + r.get("note", ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--metrics", default="position,recall,relevance")
    parser.add_argument("--keep-calls", action="store_true")
    parser.add_argument("--no-tracemalloc", action="store_true")
    parser.add_argument("--phases", default="read,eval")
    args = parser.parse_args(argv)
    checkpoints = [c for c in CHECKPOINTS if c < args.items] + [args.items]
    trace = not args.no_tracemalloc
    with tempfile.TemporaryDirectory(prefix="lj-memory-") as tmp:
        path = Path(tmp) / "big.jsonl"
        t0 = time.perf_counter()
        kinds = generate(path, args.items)
        print(
            f"generated {args.items} items ({path.stat().st_size / 2**20:.0f} MB) in "
            f"{time.perf_counter() - t0:.0f} s: {kinds}",
            flush=True,
        )
        phases = args.phases.split(",")
        if "read" in phases:
            rows = in_fresh_process(phase_read, str(path), checkpoints, trace)
            print(table("\nread_records (streaming)", rows), flush=True)
        if "eval" in phases:
            names = args.metrics.split(",")
            rows = in_fresh_process(
                phase_eval, str(path), checkpoints, trace, names, args.keep_calls
            )
            title = f"\neval_file with ScriptedJudge, metrics {'+'.join(names)}"
            if args.keep_calls:
                title += " (judge.calls kept)"
            print(table(title, rows), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
