"""The judged rows files: ``fitting/rows/JUDGE/SOURCE.jsonl.gz``, one JSON object a line.

A module, not a script: ``judge.py`` writes them, ``build.py`` and ``sealed.py`` read them.
Written with sorted keys and a gzip header without time stamp or name, so the same rows are
the same bytes.
"""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROWS = Path(__file__).resolve().parent / "rows"


def write(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Write ``rows`` to ``path`` through a temporary file beside it."""
    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as f:
        f.write(text.encode("utf-8"))
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(buffer.getvalue())
    tmp.replace(path)


def read(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def judges(sources: Iterable[str], root: Path = ROWS) -> list[str]:
    """The judges whose rows of every one of ``sources`` are written, by alias, sorted (a
    judge still being judged has some of them only)."""
    if not root.is_dir():
        return []
    wanted = set(sources)
    return sorted(
        p.name
        for p in root.iterdir()
        if (p / "judge.json").is_file()
        and wanted <= {f.name.removesuffix(".jsonl.gz") for f in p.glob("*.jsonl.gz")}
    )


def of_judge(alias: str, root: Path = ROWS) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A judge's ``judge.json`` and every row of its sources, in source-name order."""
    folder = root / alias
    meta = json.loads((folder / "judge.json").read_text("utf-8"))
    found: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.jsonl.gz")):
        found += read(path)
    return meta, found
