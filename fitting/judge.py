"""Judge the development samples with one judge and write its judged rows: the only step of
the build that loads a judge.

    python fitting/judge.py -m qwen2.5-coder-1.5b [-t 2] [--only xquad wice] [--overwrite]

For every source of ``devsets.py`` (each one's sample of every part: choice, validation and
the sealed test part), the product's own calls (``localjudge.metrics``, reasons off), read
through the decisions core (:func:`localjudge.decisions.decide_all` with no cut-offs: the
readings and the call's own soft value), one row per decision:

    {"source", "id", "unit", "part", "lang", "piece", "role", "kind", "label", "soft",
     "readings", "raw"}

(no source text: ids, labels, readings, soft values, and in ``raw`` the log-probabilities the
readings are made of). Each source's rows go to
``fitting/rows/JUDGE/SOURCE.jsonl.gz`` (committed; gzip without a time stamp, so judging the
same rows again writes the same bytes), beside ``judge.json`` (the judge's file sha256, the
settings and the protocol the calls were asked by, its name and fingerprint: one folder's rows
are all of one protocol). A source whose file exists is kept (a stopped run resumes);
``--overwrite`` judges it again. ``build.py`` reads these files and nothing else.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import devsets
import row_files as rowsfile

#: lists or items asked in one batch (progress is printed after each)
CHUNK = 16


def asks_of(metric: Any, record: dict[str, Any], item_id: str) -> list[Any]:
    """The calls ``metric`` (the product's, with its protocol) makes for ``record``, each with
    its origin (the metric, the list or item, the protocol: what the cache's call log
    records)."""
    from dataclasses import replace

    from localjudge.data.item import make_item
    from localjudge.judge.protocol import CallOrigin
    from localjudge.metrics.protocols import protocol_ref

    built = metric.build(make_item(record, index=0))
    assert isinstance(built, list), record
    made = protocol_ref(metric.protocol)
    origin = CallOrigin(metric.name, item_id, (made.name, made.fingerprint))
    return [replace(a, request=replace(a.request, origin=origin)) for a in built]


def passage_asks(x: dict[str, Any], protocol: str = "1") -> list[Any]:
    """The product's calls for a list under ``protocol``: position's (the question alone: its
    baseline call, one per passage), relevance's grade call per passage where the source's
    grades are fitted (neither protocol shows the grade a response), and, with an answer span,
    position's calls with it as the EXPECTED ANSWER."""
    from localjudge.metrics.position import ContextPosition
    from localjudge.metrics.relevance import ContextRelevance

    record = {"user_input": x["question"], "retrieved_contexts": x["passages"]}
    position = asks_of(ContextPosition(protocol=protocol), record, x["id"])
    grades: list[Any] = []
    if x["source"] in devsets.KIND_SOURCES["relevance.grade"]:
        relevance = asks_of(
            ContextRelevance(protocol=protocol), {**record, "response": "(none)"}, x["id"]
        )
        grades = [a for a in relevance if a.decision and a.decision.kind == "relevance.grade"]
    with_answer: list[Any] = []
    if x["answer"]:
        built = asks_of(
            ContextPosition(protocol=protocol), {**record, "reference": x["answer"]}, x["id"]
        )
        with_answer = [a for a in built if not a.baseline]
    return [*position, *grades, *with_answer]


def recall_asks(x: dict[str, Any], protocol: str = "1") -> list[Any]:
    """Recall's calls for an item under ``protocol``: one per statement of the reference."""
    from localjudge.metrics.recall import ContextRecall

    return asks_of(ContextRecall(protocol=protocol), x["record"], x["id"])


def label_of(x: dict[str, Any], kind: str, piece: int) -> int | None:
    """The people's label of a decision: relevant (0/1), the grade (0-3), supported (0/1)."""
    if kind == "recall.supported":
        return int(x["label"])
    if kind == "relevance.grade":
        return None if x["grades"] is None else int(x["grades"][piece])
    return int(x["relevant"][piece])


def role_of(x: dict[str, Any], piece: int) -> str:
    """An XQuAD passage's role (``answer``, ``same``, ``other``); elsewhere empty."""
    if x["source"] in ("xquad", "xquadshort") and x["grades"]:
        return devsets.ROLES.get(int(x["grades"][piece]), "")
    return ""


def raw_of(read: Any, alone: Any) -> dict[str, list[float]]:
    """What the readings are made of, for readings a later build may weigh without judging
    again: the QUESTION's log-probability and token count after this passage (``read``) and
    after no passage (``alone``, the item's baseline call), where the calls read them."""
    raw: dict[str, list[float]] = {}
    if read is not None and read.tokens:
        raw["read"] = [read.logprob, read.tokens]
    if alone is not None and alone.tokens:
        raw["alone"] = [alone.logprob, alone.tokens]
    return raw


def judge_rows(
    items: list[dict[str, Any]], judge: Any, protocol: str = "1"
) -> list[dict[str, Any]]:
    """One row per decision of every list or recall item of ``items``."""
    from localjudge.decisions import NO_CUTOFFS, decide_all
    from localjudge.run.evaluate.grouping import ask_grouped

    recall = "record" in items[0] if items else False
    all_asks = [recall_asks(x, protocol) if recall else passage_asks(x, protocol) for x in items]
    outcomes: list[Any] = []
    for start in range(0, len(items), CHUNK):
        chunk = all_asks[start : start + CHUNK]
        outcomes += ask_grouped(judge, [[a.request for a in asks] for asks in chunk])
        print(f"  {min(start + CHUNK, len(items))}/{len(items)}", flush=True)
    out = []
    for x, asks, gens in zip(items, all_asks, outcomes, strict=True):
        failed = [g for g in gens if isinstance(g, Exception)]
        if failed:
            raise RuntimeError(f"{x['id']}: {failed[0]}")
        pairs = list(zip(asks, gens, strict=True))
        alone = next((g.reading for a, g in pairs if a.baseline and g.reading), None)
        for ask, gen, answer in zip(asks, gens, decide_all(asks, gens, NO_CUTOFFS), strict=True):
            if ask.baseline or ask.decision is None:
                continue
            kind = ask.decision.kind
            label = label_of(x, kind, ask.at)
            if label is None:
                continue
            out.append(
                {
                    "source": x["source"],
                    "id": x["id"],
                    "unit": x["unit"],
                    "part": x["part"],
                    "lang": x["lang"],
                    "piece": ask.at,
                    "role": "" if recall else role_of(x, ask.at),
                    "kind": kind,
                    "label": label,
                    "soft": answer.soft,
                    "readings": dict(answer.readings or {}),
                    "raw": raw_of(gen.reading, alone),
                }
            )
    return out


def judge_meta(
    folder: Path,
    alias: str,
    sha256: str,
    sources: Sequence[str],
    overwrite: bool,
    name: str = "1",
) -> dict[str, Any]:
    """``folder``'s ``judge.json`` once these ``sources`` are judged: the judge's alias and file
    sha256, reasons off, and the protocol its calls are asked by (``name``, and its
    fingerprint). Refused when rows the run keeps were judged under another protocol: one
    folder's rows are all of one protocol, the one its ``judge.json`` names."""
    from localjudge.metrics.protocols import ProtocolRef, protocol_ref

    protocol = protocol_ref(name)
    meta = {"alias": alias, "sha256": sha256, "reasons": False, "protocol": protocol.as_json()}
    path = folder / "judge.json"
    was = json.loads(path.read_text("utf-8")).get("protocol") if path.is_file() else None
    judged = [p.name.removesuffix(".jsonl.gz") for p in sorted(folder.glob("*.jsonl.gz"))]
    kept = [s for s in judged if not (overwrite and s in sources)]
    if kept and was != meta["protocol"]:
        named = "no named protocol" if was is None else ProtocolRef.from_json(was)
        raise SystemExit(
            f"{folder.name}: its rows of {', '.join(kept)} were judged under {named}, and this "
            f"run asks by {protocol}: judge every source again (--overwrite without --only), "
            "or move the folder aside"
        )
    return meta


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", required=True, help="a bundled judge's alias")
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("--only", nargs="*", choices=devsets.SOURCES, help="these sources")
    parser.add_argument("--overwrite", action="store_true", help="judge existing files again")
    parser.add_argument("--src", type=Path, default=devsets.SHARED, help="the shared/data folder")
    parser.add_argument(
        "--protocol",
        default="1",
        choices=("1", "2"),
        help="the protocol the calls are asked by (its rows: row_files.root_of(protocol))",
    )
    args = parser.parse_args(argv)

    from localjudge import load_judge
    from localjudge.metrics.protocols import PROTOCOLS, fingerprint

    if fingerprint(args.protocol) != PROTOCOLS[args.protocol]:
        raise SystemExit(
            f"the asks of protocol {args.protocol} are not its committed ones (tests/unit/"
            "test_protocols.py): define a new protocol before judging rows under it"
        )
    judge = load_judge(args.model, n_threads=args.threads, cache=True)
    folder = rowsfile.root_of(args.protocol) / args.model
    folder.mkdir(parents=True, exist_ok=True)
    sources = args.only or devsets.SOURCES
    meta = judge_meta(
        folder, args.model, judge.identity.sha256, sources, args.overwrite, args.protocol
    )
    (folder / "judge.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", "utf-8")
    for source in sources:
        target = folder / f"{source}.jsonl.gz"
        if target.exists() and not args.overwrite:
            print(f"{source}: {target} exists, kept")
            continue
        started = time.perf_counter()
        found = judge_rows(devsets.SAMPLES[source](args.src), judge, args.protocol)
        rowsfile.write(target, found)
        print(f"{source}: {len(found)} rows in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
