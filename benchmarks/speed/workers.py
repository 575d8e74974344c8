"""Running a benchmark's measurement in a process of its own (fresh memory, no warm state)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

#: what every worker opens with: its settings ``cfg`` (the JSON of its first argument), its
#: ``records`` (the JSON on stdin) and ``open_judge(**options)``, the judge it measures: the
#: settings' model, threads and GPU layers, no call cache unless ``options`` give one; and
#: ``per_metric(results, **sums)``, the rows' counts and stats per metric. A worker timed from
#: its process's start takes ``started`` before it (:data:`CLOCK`).
OPENING = r"""
import json, sys
from localjudge import load_judge
cfg = json.loads(sys.argv[1])
records = json.loads(sys.stdin.read())


def open_judge(**options):
    options = {"n_threads": cfg["threads"], "n_gpu_layers": cfg["ngl"], "cache": False, **options}
    return load_judge(cfg["model"], **options)


# per metric: items scored, their seconds, failed items, and each of sums (a name for a stat of
# the rows: tokens="completion_tokens") summed over the scored items
def per_metric(results, **sums):
    out = {}
    for r in results:
        zero = {"n": 0, "seconds": 0.0, "errors": 0, **dict.fromkeys(sums, 0)}
        m = out.setdefault(r.metric, zero)
        if r.result is None or r.result.stats is None:
            m["errors"] += r.error is not None
            continue
        m["n"] += 1
        m["seconds"] += r.result.stats.seconds
        for name, stat in sums.items():
            m[name] += getattr(r.result.stats, stat)
    return out
"""
#: the first instant of a worker's process, before anything is imported
CLOCK = """
import time
started = time.perf_counter()
"""


def run_worker(
    code: str,
    cfg: Mapping[str, Any],
    records: list[Any],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> Any:
    """``python -c code CFG`` with the records as JSON on stdin; its last stdout line, parsed.
    A failing worker stops the benchmark with the end of its stderr."""
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(cfg)],
        input=json.dumps(records),
        capture_output=True,
        text=True,
        check=False,
        env=dict(env) if env is not None else None,
        cwd=cwd,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{dict(cfg)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])
