"""Reading and writing the judged rows files (the folder ``fitting/rows/``):
``fitting/rows/JUDGE/SOURCE.jsonl.gz``, one JSON object a line.

A module, not a script: ``judge.py`` writes them, ``build.py`` and ``sealed.py`` read them
(:func:`of_judge`: each row's readings made again by the decisions core from the row's raw
log-probabilities, so rows judged by an earlier release read as this release reads them).
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


def root_of(protocol: str) -> Path:
    """Where the rows judged under ``protocol`` live: ``fitting/rows/`` for protocol 1 (what
    ``build.py`` and ``sealed.py`` read), ``fitting/rows-pNAME/`` for another (one folder per
    judge in each, so one folder's rows are all of one protocol)."""
    return ROWS if protocol == "1" else ROWS.parent / f"rows-p{protocol}"


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
    """A judge's ``judge.json`` and every row of its sources, in source-name order; refused
    when they were judged under a protocol that is not this release's (:func:`protocol_of`)."""
    folder = root / alias
    meta = json.loads((folder / "judge.json").read_text("utf-8"))
    protocol_of(meta, folder)
    found: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.jsonl.gz")):
        found += read(path)
    for r in found:  # the readings as judged stay beside them (an older entry's, for --against)
        r["readings"] = {**r["readings"], **readings_of(r)}
    return meta, found


def protocol_of(meta: dict[str, Any], folder: Path) -> Any:
    """The protocol a judge's rows were judged under (``judge.json``'s ``protocol``, a
    :class:`localjudge.metrics.protocols.ProtocolRef`): a :class:`localjudge.errors.ProtocolError`
    naming both protocols when it is not one this release knows by name and fingerprint, since
    rows judged with other prompts say nothing of this release's decisions."""
    from localjudge.errors import ProtocolError
    from localjudge.metrics.protocols import ProtocolRef, check_protocol, current_protocol

    where = f"{folder.name}/judge.json"
    hint = f"judge them again: python fitting/judge.py -m {folder.name} --overwrite"
    if "protocol" not in meta:
        raise ProtocolError(
            f"{where} names no protocol, so its rows' prompts are unknown; this release asks "
            f"by {current_protocol()}",
            hint=hint,
        )
    try:
        found = ProtocolRef.from_json(meta["protocol"])
    except ValueError as exc:
        raise ProtocolError(f"{where}: {exc}", hint=hint) from exc
    check_protocol(found, f"the rows of {folder.name}", hint=hint)
    return found


def readings_of(row: dict[str, Any]) -> dict[str, float]:
    """A row's readings as :func:`localjudge.decisions.readings` makes them: from its call's
    own soft value and its ``raw`` log-probabilities (the QUESTION after the passage and after
    no passage, where the calls read them)."""
    from localjudge.decisions import KINDS, readings
    from localjudge.judge.protocol import Reading

    raw = row.get("raw", {})
    read, alone = (Reading(*raw[k]) if k in raw else None for k in ("read", "alone"))
    return readings(KINDS[row["kind"]].graded, float(row["soft"]), read, alone)
