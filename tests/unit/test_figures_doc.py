"""The held-out table of docs/figures.md ("How far to trust each metric", which the README's
three sentences sum up) says what ``fitting/sealed.json`` and ``evidence.json`` hold.

The table is written by hand; this test reads its numbers back and compares each with the
file it was copied from, so a change of what ships (sealed again, built again) cannot leave the
page behind, and the README's summary with it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmark_scripts import load

EVIDENCE_PATH = load("fitting/build").EVIDENCE_PATH

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "docs" / "figures.md"
SEALED = ROOT / "fitting" / "sealed.json"
DEFAULT = "qwen2.5-coder-1.5b"
HEADER = (
    "| metric | source (test units) | held out | release before, held out "
    "| validation (not held out) |"
)

#: the table's rows, in order: (kind, source in sealed.json and evidence.json)
ROWS = [
    ("recall.supported", "wice"),
    ("recall.supported", "xquadrecall"),
    ("position.relevant", "llmjudge"),
    ("position.relevant", "trulens"),
    ("position.relevant", "ragbench"),
    ("position.relevant", "xquad"),
    ("position.relevant", "xquadshort"),
    ("position.relevant_answer", "xquad"),
    ("position.relevant_answer", "xquadshort"),
    ("relevance.grade", "llmjudge"),
    ("relevance.grade", "xquad"),
    ("relevance.grade", "xquadshort"),
]


def table() -> list[list[str]]:
    lines = FIGURES.read_text("utf-8").splitlines()
    start = lines.index(HEADER) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def test_the_held_out_table_is_sealed_json_and_the_evidence() -> None:
    sealed = json.loads(SEALED.read_text("utf-8"))["judges"][DEFAULT]
    evidence = json.loads(EVIDENCE_PATH.read_text("utf-8"))[DEFAULT]
    rows = table()
    assert len(rows) == len(ROWS)
    for (kind, source), (_, label, held, release, validation) in zip(ROWS, rows, strict=True):
        found = sealed[kind]["sources"][source]
        low, high = found["ships"]["ci95"]
        value = found["ships"]["value"]
        assert held == f"**{value:.3f}** [{low:.3f}, {high:.3f}]", (kind, source, label)
        assert release == f"{found['release']['value']:.3f}", (kind, source, label)
        checked = evidence[kind]["validation"][source]
        shipped = checked["fit"] if evidence[kind]["ships"] else checked["neutral"]
        assert validation == f"{shipped:.3f}", (kind, source, label)
        units = re.search(r"\((\d+)[^)]*\)$", label)
        assert units, label
        assert int(units.group(1)) == found["ships"]["units"], (kind, source, label)
