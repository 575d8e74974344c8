"""The clear cases: what a judge answers where no person has a doubt, per language and
per kind of text, through the product's own path (``evaluate``, the judge's shipped cut-offs).

    python benchmarks/quality/clear_cases.py [-m MODEL] [-t THREADS] [--per-lang 6]
        [--short-per-lang 6] [--relevance-langs en de ru zh] [--recall-per-lang 3]
        [--shapes-per-lang 6] [--shapes-only] [--shapes-position-only] [--json OUT]

Data (the validation part of ``fitting/devsets.py`` only: no choice or fit reads it, and the
sealed test part is left alone):

- XQuAD paragraphs (``shared/data/xquad-dev``): the answer's paragraph, another article's and
  one of the same article without the answer. Position asks the QUESTION alone (the response
  dropped); relevance sees the answer span as the response, on ``--relevance-langs``.
- XQuAD short lists: the same with single sentences (position).
- XQuAD recall: the answer's sentence against its paragraph (1.0) and against the two
  paragraphs without it (0.0).
- ``localjudge/run/calibrate/contrast_items.jsonl``: short contrast items written for this
  check (calibrate checks a fit on them too) (an answer and a
  passage about something else, in the same language and form): short facts in ten
  languages, config and code, chat, web pages, tables and lists.
- ``examples/labelled.jsonl``: the README's examples with the project's labels.

- The lists users meet (``shapes.py``, from the same validation part and contrast items): each
  passage alone, lists where every passage states the answer, lists where none does.

Printed per language and per kind: the share of answer passages judged relevant, of
other-subject passages judged not relevant, of same-subject passages without the answer judged
not relevant, the relevance levels given to each, and recall's verdicts; targets (issue
"Verdicts that pass the obvious") are marked where missed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "fitting"))  # the fits' sources: fitting/devsets.py

from shapes import (  # noqa: E402
    SHAPE_HEAD,
    as_asked,
    contrast_shapes,
    fraction,
    roles_of,
    shape_lines,
    xquad_shapes,
)

from devsets import LANGS, SHARED, read_jsonl, xquad  # noqa: E402

CONTRAST = ROOT / "localjudge" / "run" / "calibrate" / "contrast_items.jsonl"
EXAMPLES = ROOT / "examples" / "labelled.jsonl"
LEVELS = ("high", "medium", "low", "none")


def _validation_lists(source: str, per_lang: int) -> list[dict[str, Any]]:
    by_lang: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for x in xquad(source):
        if x["part"] == "validation" and len(by_lang[x["lang"]]) < per_lang:
            by_lang[x["lang"]].append(x)
    return [x for lang in LANGS for x in by_lang[lang]]


def _records(lists: Iterable[dict[str, Any]], with_response: bool) -> list[dict[str, Any]]:
    """Input records of XQuAD lists: the id, question, passages and roles (by level)."""
    out = []
    raw = _by_id("position_relevance") | _by_id("short")
    for x in lists:
        r = raw[x["id"]]
        record = {
            "id": r["id"],
            "user_input": r["user_input"],
            "retrieved_contexts": r["retrieved_contexts"],
        }
        if with_response:
            record["response"] = r["response"]
        out.append(
            {"record": record, "lang": x["lang"], "kind": "encyclopedic", "roles": roles_of(r)}
        )
    return out


_CACHE: dict[str, list[dict[str, Any]]] = {}


def _all(name: str) -> list[dict[str, Any]]:
    if name not in _CACHE:
        _CACHE[name] = read_jsonl(SHARED / "xquad-dev" / f"{name}.jsonl.gz")
    return _CACHE[name]


def _contrast(with_answer: str | None) -> list[dict[str, Any]]:
    out = []
    for r in read_jsonl(CONTRAST):
        record = {k: r[k] for k in ("id", "user_input", "retrieved_contexts")}
        if with_answer:
            record[with_answer] = r[with_answer]
        src = r["source"]
        out.append(
            {"record": record, "lang": src["lang"], "kind": src["kind"], "roles": roles_of(r)}
        )
    return out


# --------------------------------------------------------------------------- judging


def run(judge: Any, cases: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """Each case with the verdicts (or the score) the product gives it."""
    from localjudge import evaluate

    results = list(evaluate([c["record"] for c in cases], [metric], judge))
    for case, res in zip(cases, results, strict=True):
        if res.result is None:
            raise SystemExit(f"{case['record']['id']}: {res.error}")
        case[metric] = res.result
    return cases


def pieces(cases: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """One row per passage: language, kind, role, the list's shape where it has one
    (``shapes.py``), and the verdict."""
    rows = []
    for c in cases:
        for role, v in zip(c["roles"], c[metric].verdicts, strict=True):
            row = {"lang": c["lang"], "kind": c["kind"], "role": role, "id": c["record"]["id"]}
            if "shape" in c:
                row["shape"] = c["shape"]
            if metric == "position":
                row["relevant"] = bool(v["relevant"])
                row["p"] = v.get("probs", {}).get("relevant", {}).get("true")
            else:
                row["level"] = v["relevance"]
            rows.append(row)
    return rows


# --------------------------------------------------------------------------- tables


def share(rows: Sequence[dict[str, Any]], role: str, ok: Callable[[dict], bool]) -> str:
    return fraction([ok(r) for r in rows if r["role"] == role])


def _table(title: str, head: Sequence[str], lines: list[list[str]]) -> None:
    print(f"\n### {title}\n")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for line in lines:
        print("| " + " | ".join(line) + " |")


def _split(rows: list[dict[str, Any]], key: str) -> list[tuple[str, list[dict[str, Any]]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[r[key]].append(r)
    return [*groups.items(), ("all", rows)]


def position_table(title: str, rows: list[dict[str, Any]], key: str) -> None:
    yes, no = (lambda r: r["relevant"]), (lambda r: not r["relevant"])
    lines = [
        [name, share(rs, "answer", yes), share(rs, "other", no), share(rs, "same", no)]
        for name, rs in _split(rows, key)
    ]
    head = [key, "answer relevant", "other not relevant", "same, no answer: not relevant"]
    _table(title, head, lines)


def above(rows: list[dict[str, Any]]) -> str:
    per: dict[str, dict[str, float]] = defaultdict(dict)
    for r in rows:
        per[r["id"]][r["role"]] = r["p"]
    pairs = [p for p in per.values() if p.get("answer") is not None and "other" in p]
    if not pairs:
        return "-"
    hits = sum(p["answer"] > p["other"] for p in pairs)
    return f"{hits / len(pairs):.2f} ({hits}/{len(pairs)})"


def levels_of(rows: list[dict[str, Any]], role: str) -> str:
    picked = [r["level"] for r in rows if r["role"] == role]
    return "/".join(str(sum(x == lv for x in picked)) for lv in LEVELS) if picked else "-"


def relevance_table(title: str, rows: list[dict[str, Any]], key: str) -> None:
    good = lambda r: r["level"] in ("high", "medium")  # noqa: E731
    none = lambda r: r["level"] == "none"  # noqa: E731
    lines = [
        [
            name,
            share(rs, "answer", good),
            share(rs, "other", none),
            levels_of(rs, "answer"),
            levels_of(rs, "same"),
            levels_of(rs, "other"),
        ]
        for name, rs in _split(rows, key)
    ]
    head = [
        key,
        "answer medium/high",
        "other none",
        "answer h/m/l/n",
        "same h/m/l/n",
        "other h/m/l/n",
    ]
    _table(title, head, lines)


# --------------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", default=None)
    parser.add_argument("-t", "--threads", type=int, default=None)
    parser.add_argument("--per-lang", type=int, default=6)
    parser.add_argument("--short-per-lang", type=int, default=6)
    parser.add_argument("--relevance-langs", nargs="*", default=["en", "de", "ru", "zh"])
    parser.add_argument("--relevance-per-lang", type=int, default=6)
    parser.add_argument("--recall-per-lang", type=int, default=3)
    parser.add_argument("--shapes-per-lang", type=int, default=6)
    parser.add_argument("--shapes-only", action="store_true", help="only the lists users meet")
    parser.add_argument(
        "--shapes-position-only",
        action="store_true",
        help="the lists users meet, position only (relevance's calls take most of the time)",
    )
    parser.add_argument("--json", type=Path, help="write every row here")
    args = parser.parse_args(argv)
    from localjudge import load_judge

    judge = load_judge(args.model, n_threads=args.threads, cache=True)
    print(f"judge: {judge.identity.model} ({judge.identity.sha256[:12]})")
    out: dict[str, Any] = {
        "shapes": shapes(judge, args.shapes_per_lang, relevance=not args.shapes_position_only)
    }
    if args.shapes_only:
        if args.json:
            args.json.write_text(json.dumps(out), "utf-8")
        return

    para_lists = _validation_lists("xquad", args.per_lang)
    para = pieces(run(judge, _records(para_lists, False), "position"), "position")
    position_table("Position, QUESTION alone: XQuAD paragraphs (validation part)", para, "lang")
    short_lists = _validation_lists("xquadshort", args.short_per_lang)
    short_cases = run(judge, _records(short_lists, False), "position")
    short = pieces(short_cases, "position")
    position_table(
        "Position, QUESTION alone: XQuAD single sentences (validation part)", short, "lang"
    )
    lines = [[name, above(rs)] for name, rs in _split(short, "lang")]
    _table(
        "Short lists: the answer's sentence scored above another article's",
        ["lang", "share"],
        lines,
    )

    picked = [
        x
        for x in _validation_lists("xquad", args.relevance_per_lang)
        if x["lang"] in set(args.relevance_langs)
    ]
    rel = pieces(run(judge, _records(picked, True), "relevance"), "relevance")
    relevance_table("Relevance: XQuAD paragraphs, the answer span as the response", rel, "lang")

    recall = recall_rows(judge, args.recall_per_lang)
    lines = [
        [
            name,
            fraction([r["ok"] for r in rs if r["want"] == 1]),
            fraction([r["ok"] for r in rs if r["want"] == 0]),
        ]
        for name, rs in _split(recall, "lang")
    ]
    _table(
        "Recall: the answer's sentence against its paragraph (1) / the two others (0)",
        ["lang", "supported by its paragraph", "not supported by the others"],
        lines,
    )

    c_pos = pieces(run(judge, _contrast(None), "position"), "position")
    position_table("Position, QUESTION alone: contrast items", c_pos, "kind")
    position_table("Position, QUESTION alone: contrast items by language", c_pos, "lang")
    c_ref = pieces(run(judge, _contrast("reference"), "position"), "position")
    position_table(
        "Position with the reference as the EXPECTED ANSWER: contrast items", c_ref, "kind"
    )
    c_rel = pieces(run(judge, _contrast("response"), "relevance"), "relevance")
    relevance_table("Relevance: contrast items", c_rel, "kind")

    ex = examples(judge)
    _table(
        "examples/labelled.jsonl: position against the project's labels",
        ["set", "agree"],
        [[k, v] for k, v in ex.items()],
    )
    out.update(
        paragraphs=para,
        short=short,
        relevance=rel,
        recall=recall,
        contrast_position=c_pos,
        contrast_reference=c_ref,
        contrast_relevance=c_rel,
    )
    if args.json:
        args.json.write_text(json.dumps(out), "utf-8")


def shapes(judge: Any, per_lang: int, relevance: bool = True) -> dict[str, list[dict[str, Any]]]:
    """The lists users meet (``shapes.py``): each passage alone, lists where every passage
    answers, lists where none does; XQuAD per language, the contrast items per kind of text;
    position with the QUESTION alone and with the expected answer, and (``relevance``)
    relevance's grade alone."""
    raw = _by_id("position_relevance")
    paragraphs = [{**raw[x["id"]], "lang": x["lang"]} for x in _validation_lists("xquad", per_lang)]
    found: dict[str, list[dict[str, Any]]] = {}
    for name, cases, key in (
        ("XQuAD (validation part)", xquad_shapes(paragraphs, _by_id("short")), "lang"),
        ("contrast items", contrast_shapes(read_jsonl(CONTRAST)), "kind"),
    ):
        for asked, field in (("QUESTION alone", None), ("with the expected answer", "reference")):
            rows = pieces(run(judge, as_asked(cases, field), "position"), "position")
            _table(
                f"Lists users meet, position, {asked}: {name}",
                [key, *SHAPE_HEAD],
                shape_lines(rows, key),
            )
            found[f"{name}, {asked}"] = rows
        if not relevance:
            continue
        alone = [c for c in cases if c["shape"] == "alone"]
        rows = pieces(run(judge, as_asked(alone, "response"), "relevance"), "relevance")
        relevance_table(f"Lists users meet, relevance, each passage alone: {name}", rows, key)
        found[f"{name}, relevance alone"] = rows
    return found


def _by_id(name: str) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in _all(name)}


def recall_rows(judge: Any, per_lang: int) -> list[dict[str, Any]]:
    """Recall's score on both recall items of the first questions of each language's validation
    part."""
    lists = _validation_lists("xquad", per_lang)
    wanted = {f"{x['id']}-sup": 1 for x in lists} | {f"{x['id']}-not": 0 for x in lists}
    items = [r for r in _all("recall") if r["id"] in wanted]
    cases = [
        {
            "record": {k: r[k] for k in ("id", "user_input", "retrieved_contexts", "reference")},
            "lang": r["id"].split("-")[1],
            "want": wanted[r["id"]],
        }
        for r in items
    ]
    run(judge, cases, "recall")
    return [
        {
            "lang": c["lang"],
            "want": c["want"],
            "id": c["record"]["id"],
            "ok": (c["recall"].value >= 0.5) == bool(c["want"]),
        }
        for c in cases
    ]


def examples(judge: Any) -> dict[str, str]:
    """Position on the README's examples against the project's labels: every passage, and the
    clear-cut ones (labelled high or none)."""
    records = read_jsonl(EXAMPLES)
    cases = [{"record": {k: v for k, v in r.items() if k not in ("labels",)}} for r in records]
    run(judge, cases, "position")
    every, clear = [], []
    for r, c in zip(records, cases, strict=True):
        for want, level, v in zip(
            r["labels"]["relevant"], r["labels"]["levels"], c["position"].verdicts, strict=True
        ):
            ok = bool(v["relevant"]) == bool(want)
            every.append(ok)
            if level in ("high", "none"):
                clear.append(ok)
                if not ok:
                    print(f"  missed: {r['id']} passage #{v['index']} ({level})")
    return {"every passage": fraction(every), "clear-cut (high or none)": fraction(clear)}


if __name__ == "__main__":
    main()
