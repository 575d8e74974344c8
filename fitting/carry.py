"""Carry a judge's rows into a newer protocol's folder where that protocol asks the same thing.

    python fitting/carry.py -m qwen2.5-coder-1.5b --to 3 [--verify N] [--only SOURCE ...]

A row is what one ask made: its request (the messages, the output schema, the span of the
QUESTION read) and the item's baseline ask, which its readings are measured against. Where the
protocol ``--to`` asks a decision by exactly the request an earlier protocol asked it by, with
the same baseline, the judge's answer is the same (the engine's output does not depend on
where a request's branch points lie: ``tests/integration/test_protocol2_real.py``), so the row
is the same row, and judging it again would only spend hours. What the judge answered (the
soft value, the raw log-probabilities) is carried as it is; the readings made of them are made
again as ``judge.py`` makes them today (``row_files.readings_of``): protocol 1's rows were
judged before issue 55 retired a reading.

For each source of ``devsets.py`` and every list or item of every part (the sealed test part
too, carried by ids unread, as ``judge.py`` writes it), each row ``judge.py`` would write under
``--to`` (same asks, same order) is looked up in the rows of the protocols before it, newest
first, and carried from the first whose request and baseline are the same. The
run fails, writing nothing for that source, when a row has no such match. ``judge.json``
records the protocol ``--to`` and, under ``carried``, the protocol each kind's rows came from.
``--verify N`` loads the judge, judges the first N lists or items of each source under ``--to``
and fails unless their rows are the carried ones.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import devsets
import judge as judging
import row_files as rowsfile
from localjudge.judge.schemas import json_schema
from localjudge.metrics.base import PROTOCOL_NAMES
from localjudge.metrics.protocols import protocol_ref

Key = tuple[str, int, str]  # a row's list or item id, piece, kind


def asks_of(x: dict[str, Any], protocol: str) -> list[Any]:
    """The asks ``judge.py`` makes for list or item ``x`` under ``protocol``."""
    if "record" in x:
        return judging.recall_asks(x, protocol)
    return judging.passage_asks(x, protocol)


def what_decides(ask: Any) -> str:
    """What of an ask its answer depends on: the messages, the output schema, the span read."""
    r = ask.request
    return json.dumps([r.messages, json_schema(r.schema), r.read_chars], sort_keys=True)


def decisions(x: dict[str, Any], protocol: str) -> tuple[dict[tuple[int, str], str], str]:
    """Per (piece, kind) of ``x``'s decisions under ``protocol``, what decides its answer; and
    what decides the item's baseline ('' without one)."""
    out: dict[tuple[int, str], str] = {}
    baseline = ""
    for ask in asks_of(x, protocol):
        if ask.baseline:
            baseline = baseline or what_decides(ask)
        elif ask.decision is not None:
            out[(ask.at, ask.decision.kind)] = what_decides(ask)
    return out, baseline


def carry_source(
    source: str, items: list[dict[str, Any]], to: str, found: dict[str, dict[Key, dict[str, Any]]]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The rows of ``source`` under ``to``, in ``judge.py``'s order, each carried from the
    newest protocol of ``found`` (rows by key, per protocol) that asked it alike; and per kind
    the protocol its rows came from. A :class:`SystemExit` naming the first row without one."""
    earlier = [p for p in reversed(PROTOCOL_NAMES[: PROTOCOL_NAMES.index(to)]) if p in found]
    out: list[dict[str, Any]] = []
    came: dict[str, set[str]] = {}
    for x in items:
        mine, base = decisions(x, to)
        theirs = {p: decisions(x, p) for p in earlier}
        for (piece, kind), decides in mine.items():
            if judging.label_of(x, kind, piece) is None:
                continue  # judge.py writes no row without a label
            key = (x["id"], piece, kind)
            match = next(
                (
                    p
                    for p in earlier
                    if theirs[p][0].get((piece, kind)) == decides
                    and theirs[p][1] == base
                    and key in found[p]
                ),
                None,
            )
            if match is None:
                raise SystemExit(
                    f"{source}: {x['id']} piece {piece} {kind}: no protocol before {to} asked "
                    "it alike with its row judged; judge it: python fitting/judge.py "
                    f"--protocol {to} --only {source}"
                )
            row = found[match][key]
            # its readings as judge.py makes them today, from its soft value and raw readings
            # (a row judged before issue 55 lists a retired one)
            out.append({**row, "readings": rowsfile.readings_of(row)})
            came.setdefault(kind, set()).add(match)
    return out, {k: "+".join(sorted(v)) for k, v in sorted(came.items())}


def rows_by_key(folder: Path, source: str) -> dict[Key, dict[str, Any]]:
    """A source's rows in ``folder`` by (id, piece, kind)."""
    return {
        (r["id"], r["piece"], r["kind"]): r for r in rowsfile.read(folder / f"{source}.jsonl.gz")
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", required=True, help="a judge with rows")
    parser.add_argument("--to", required=True, choices=PROTOCOL_NAMES[1:])
    parser.add_argument("--only", nargs="*", choices=devsets.SOURCES, help="these sources")
    parser.add_argument("--verify", type=int, default=0, help="judge N lists of each again")
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("--src", type=Path, default=devsets.SHARED, help="the shared/data folder")
    args = parser.parse_args(argv)
    target = rowsfile.root_of(args.to) / args.model
    folders = {
        p: rowsfile.root_of(p) / args.model
        for p in PROTOCOL_NAMES[: PROTOCOL_NAMES.index(args.to)]
        if (rowsfile.root_of(p) / args.model / "judge.json").is_file()
    }
    sha256s: set[str] = set()
    for folder in folders.values():  # rows of a protocol this release does not know: refused
        meta = json.loads((folder / "judge.json").read_text("utf-8"))
        rowsfile.protocol_of(meta, folder)
        sha256s.add(meta["sha256"])
    if len(sha256s) != 1:
        raise SystemExit(f"{args.model}: its rows folders name {len(sha256s)} judge files, not 1")
    judge = None
    if args.verify:
        from localjudge import load_judge

        judge = load_judge(args.model, n_threads=args.threads, cache=False)
    meta_path = target / "judge.json"
    meta = json.loads(meta_path.read_text("utf-8")) if meta_path.is_file() else {}
    carried: dict[str, dict[str, str]] = meta.get("carried", {})
    for source in args.only or devsets.SOURCES:
        found = {
            p: rows_by_key(folder, source)
            for p, folder in folders.items()
            if (folder / f"{source}.jsonl.gz").is_file()
        }
        items = devsets.SAMPLES[source](args.src)
        rows, kinds = carry_source(source, items, args.to, found)
        if judge is not None:
            ids = {x["id"] for x in items[: args.verify]}
            judged = judging.judge_rows(items[: args.verify], judge, args.to)
            mine = [r for r in rows if r["id"] in ids]
            if json.dumps(judged, sort_keys=True) != json.dumps(mine, sort_keys=True):
                raise SystemExit(f"{source}: judged again, {len(ids)} lists differ from carried")
            print(f"{source}: {len(judged)} rows of {len(ids)} lists judged again: identical")
        target.mkdir(parents=True, exist_ok=True)
        rowsfile.write(target / f"{source}.jsonl.gz", rows)
        carried[source] = kinds
        print(f"{source}: {len(rows)} rows carried ({kinds})")
    meta = {
        "alias": args.model,
        "sha256": sha256s.pop(),
        "reasons": False,
        "protocol": protocol_ref(args.to).as_json(),
        "carried": dict(sorted(carried.items())),
    }
    meta_path.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
