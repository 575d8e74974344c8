"""Two protocols' rows of one judge side by side: what each would ship by the build's rule, and
how the two decide the same validation decisions. Loads no judge; never reads the sealed test
part.

    python fitting/compare.py [-m ALIAS] [--protocols 1 2]

For each kind of decision whose sources (``devsets.KIND_SOURCES``) both protocols' rows hold
(``row_files.root_of``; the rule chooses over all of them, so a kind with a source missing is
not compared), each protocol's fit is made by the build's rule
on its own choice part (:func:`build.choose`, then :meth:`build.Fit.fitted`; a protocol's
``position.relevant_answer`` rows first take their passage's question readings where the
amended rule says so, :func:`build.with_passage_readings`), and decides the validation part.
Printed per source, on the decisions both protocols judged (same list, passage and kind):

- each protocol's figure (kappa; QWK for the grade; balanced accuracy for recall) and the
  paired difference, second protocol minus first, with its 95% bootstrap interval over the
  source's units (:func:`build.paired`: the statement's claim, the query, the article);
- on XQuAD, per role of a passage (its answer's, the same article's without it, another
  article's), the share of decisions that agree with people's under each;
- for the grade, the share of each level under each against people's.

The table a protocol change is committed with (``fitting/README.md``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import devsets
import row_files as rowsfile
from build import fmt, graded, paired, rule_fit, with_passage_readings
from devsets import KIND_SOURCES

DEFAULT_JUDGE = "qwen2.5-coder-1.5b"


def rows_of(alias: str, protocol: str, root: Path) -> list[dict[str, Any]]:
    """The judge's rows under ``protocol`` (in ``root``), the sealed test part left out, with
    the readings the build gives them."""
    _, found = rowsfile.of_judge(alias, root)
    return with_passage_readings([r for r in found if r["part"] != "test"], protocol)


def decided(kind: str, found: list[dict[str, Any]]) -> tuple[str, dict[tuple[Any, ...], int]]:
    """The candidate the rule chooses for ``kind`` on the choice part of ``found``, and the
    hard value its fit gives each validation decision, by (source, id, piece)
    (:func:`build.rule_fit`: the build's own step)."""
    chosen, _, the_fit, _, checked = rule_fit(kind, found)
    return chosen, {key(r): h for r, h in zip(checked, the_fit.hard(checked), strict=True)}


def key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["source"], row["id"], row["piece"])


#: XQuAD's roles of a passage: its answer's, the same article's without it, another article's
ROLES = tuple(devsets.ROLES.values())


def agree(found: list[dict[str, Any]], hard: list[int], idx: list[int], role: str) -> str:
    """The share of the decisions ``idx`` on passages of ``role`` whose hard value is the
    people's label (for a yes/no kind: answer relevant, same and other not relevant)."""
    picked = [hard[n] == found[n]["label"] for n in idx if found[n]["role"] == role]
    return f"{np.mean(picked):.2f}"


def levels(values: Sequence[int]) -> str:
    shares = np.bincount(np.asarray(values, dtype=int), minlength=4) / max(len(values), 1)
    return "/".join(f"{s:.2f}" for s in shares)


def compare(
    alias: str, first: str, second: str, roots: Mapping[str, Path] | None = None
) -> list[str]:
    """The table's lines (markdown); ``roots``: each protocol's row folder (by default
    :func:`row_files.root_of`)."""
    where = roots or {p: rowsfile.root_of(p) for p in (first, second)}
    rows = {p: rows_of(alias, p, where[p]) for p in (first, second)}
    lines = [
        f"| kind | source | units / decisions | protocol {first} | protocol {second} | "
        f"{second} - {first} [95% interval] | agreement per role, {first} -> {second} |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind in KIND_SOURCES:
        missing = [
            f"protocol {p} has no {source} rows"
            for p in rows
            for source in KIND_SOURCES[kind]
            if not any(r["kind"] == kind and r["source"] == source for r in rows[p])
        ]
        if missing:  # the rule chooses over every source of the kind: not comparable yet
            lines.append(f"| `{kind}` | not compared: {', '.join(missing)} | | | | | |")
            continue
        (chosen_a, a), (chosen_b, b) = decided(kind, rows[first]), decided(kind, rows[second])
        both = [
            r
            for r in rows[first]
            if r["kind"] == kind and r["part"] == "validation" and key(r) in a and key(r) in b
        ]
        hard_a, hard_b = [a[key(r)] for r in both], [b[key(r)] for r in both]
        per, pooled, figures = paired(kind, both, hard_b, hard_a)
        for source, f in figures.items():
            idx = [n for n, r in enumerate(both) if r["source"] == source]
            roles = [
                f"{role} {agree(both, hard_a, idx, role)} -> {agree(both, hard_b, idx, role)}"
                for role in ROLES
                if any(both[n]["role"] == role for n in idx)
            ]
            if graded(kind):
                people = levels([both[n]["label"] for n in idx])
                roles.append(
                    f"levels none/low/medium/high: people {people}, "
                    f"{levels([hard_a[n] for n in idx])} -> {levels([hard_b[n] for n in idx])}"
                )
            lines.append(
                f"| `{kind}` | {source} | {f['units']} / {f['decisions']} | "
                f"{f['neutral']:.3f} | {f['fit']:.3f} | {fmt(per[source])} | "
                f"{'; '.join(roles) or '-'} |"
            )
        lines.append(
            f"| `{kind}` | mean of sources | | {chosen_a} | {chosen_b} | {fmt(pooled)} | |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", default=DEFAULT_JUDGE, help="a judge with rows")
    parser.add_argument("--protocols", nargs=2, default=["1", "2"], metavar=("FIRST", "SECOND"))
    args = parser.parse_args(argv)
    print("\n".join(compare(args.model, *args.protocols)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
