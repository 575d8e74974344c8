"""Running a benchmark's measurement in a process of its own (fresh memory, no warm state)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from typing import Any


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
