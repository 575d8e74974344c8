"""What the fitting scripts share, and what ``benchmarks/quality/obvious.py`` reads of their
samples: the paths (the registry the fits write, the development data), the registry's writer,
the development sources' samples and halves as ``fit_sources.py`` fixed them, the product's calls
for a list of passages, and Cohen's kappa on hard values. A module, not a script."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: the development data beside the checkout (``shared/data/README.md``)
SHARED = ROOT.parent / "shared" / "data"
REGISTRY = ROOT / "localjudge" / "judge" / "models" / "registry.json"
GRADES = {"none": 0, "low": 1, "medium": 2, "high": 3}
ROLES = {3: "answer", 1: "same", 0: "other"}
LANGS = ("en", "es", "de", "el", "ru", "tr", "ar", "vi", "zh", "hi")
#: lists per language taken from each half of the XQuAD files: (A, B)
XQUAD_PER_LANG = {"xquad": (3, 6), "xquadshort": (4, 12)}
TRULENS_GROUPS = (30, 60)


def half_of(groups: Iterable[str]) -> dict[str, str]:
    """Each group's half: the first half of the groups in sha256 order is ``A``."""
    ordered = sorted(set(groups), key=lambda g: hashlib.sha256(g.encode()).hexdigest())
    cut = len(ordered) // 2
    return {g: ("A" if n < cut else "B") for n, g in enumerate(ordered)}


# --------------------------------------------------------------------------- samples


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file, gzipped or not."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_rows(folder: Path) -> list[dict[str, Any]]:
    """Every judged rows file (``*.json``) of ``folder``, in name order."""
    rows: list[dict[str, Any]] = []
    for path in sorted(folder.glob("*.json")):
        rows += json.loads(path.read_text("utf-8"))
    return rows


def rows_digest(*folders: Path) -> str:
    """The sha256 of every judged rows file of ``folders`` (what a fit's figures were measured
    on), in folder and name order."""
    digest = hashlib.sha256()
    for folder in folders:
        for path in sorted(folder.glob("*.json")):
            digest.update(path.read_bytes())
    return digest.hexdigest()


def source_lists(source: str, records: list[dict[str, Any]], group: Any, lang: Any) -> list[dict]:
    out = []
    for r in records:
        levels = r["labels"].get("levels")
        out.append(
            {
                "source": source,
                "id": r["id"],
                "group": group(r),
                "lang": lang(r),
                "question": r["user_input"],
                "passages": list(r["retrieved_contexts"]),
                "relevant": [int(bool(v)) for v in r["labels"]["relevant"]],
                "grades": [GRADES[v] for v in levels] if levels else None,
                # the answer span, shown as the EXPECTED ANSWER (XQuAD only: elsewhere the
                # response is a proxy cut from the best passage, which would give it away)
                "answer": r.get("response") if source.startswith("xquad") else None,
            }
        )
    halves = half_of(x["group"] for x in out)
    for x in out:
        x["half"] = halves[x["group"]]
    return out


def llmjudge(dev: Path) -> list[dict[str, Any]]:
    records = read_jsonl(dev / "llmjudge.jsonl")
    return source_lists("llmjudge", records, lambda r: str(r["source"]["qid"]), lambda r: "en")


def trulens(dev: Path) -> list[dict[str, Any]]:
    records = read_jsonl(dev / "trulens-msmarco.jsonl")
    lists = source_lists("trulens", records, lambda r: r["user_input"], lambda r: "en")
    return take_groups(lists, TRULENS_GROUPS)


def take_groups(lists: list[dict[str, Any]], counts: tuple[int, int]) -> list[dict[str, Any]]:
    out = []
    for half, count in zip("AB", counts, strict=True):
        groups = sorted(
            {x["group"] for x in lists if x["half"] == half},
            key=lambda g: hashlib.sha256(g.encode()).hexdigest(),
        )[:count]
        keep = set(groups)
        out += [x for x in lists if x["group"] in keep]
    return out


def xquad_lists(source: str) -> list[dict[str, Any]]:
    """Every list of an XQuAD file, with its group (question id), language and half."""
    name = "position_relevance.jsonl.gz" if source == "xquad" else "short.jsonl.gz"
    records = read_jsonl(SHARED / "xquad-dev" / name)
    return source_lists(
        source, records, lambda r: r["id"].split("-", 2)[2], lambda r: r["id"].split("-", 2)[1]
    )


def per_language(lists: list[dict[str, Any]], groups: set[str], count: int) -> list[dict]:
    """``count`` lists per language from ``groups`` in sha256 order, language k taking the k-th
    slice (so every list is a different question), skipping questions a language lacks."""
    by_key = {(x["lang"], x["group"]): x for x in lists}
    ordered = sorted(groups, key=lambda g: hashlib.sha256(g.encode()).hexdigest())
    out = []
    for k, lang in enumerate(LANGS):
        found = [by_key[(lang, g)] for g in ordered[k * count :] if (lang, g) in by_key]
        out += found[:count]
    return out


def xquad(source: str) -> list[dict[str, Any]]:
    lists = xquad_lists(source)
    out = []
    for half, count in zip("AB", XQUAD_PER_LANG[source], strict=True):
        out += per_language(lists, {x["group"] for x in lists if x["half"] == half}, count)
    return out


def samples(dev: Path) -> dict[str, list[dict[str, Any]]]:
    """Every source's lists (both halves), as fixed in the module's docstring."""
    return {
        "llmjudge": llmjudge(dev),
        "trulens": trulens(dev),
        "xquad": xquad("xquad"),
        "xquadshort": xquad("xquadshort"),
    }


def judge_each(out: Path, jobs: dict[str, Any], only: Sequence[str] | None = None) -> None:
    """Run each job (a function returning judged rows) into ``out/<name>.json``, skipping those
    ``only`` leaves out and those already written (a stopped run resumes)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, job in jobs.items():
        if only and name not in only:
            continue
        target = out / f"{name}.json"
        if target.exists():
            print(f"{name}: {target} exists, kept")
            continue
        started = time.perf_counter()
        rows = job()
        target.write_text(json.dumps(rows), "utf-8")
        print(f"{name}: {len(rows)} rows judged in {time.perf_counter() - started:.0f} s")


# --------------------------------------------------------------------------- the product's calls


def passage_asks(question: str, passages: list[str], answer: str | None = None) -> list[Any]:
    """The product's calls: position's (question alone: baseline, one per passage), each
    passage's grade call, and with ``answer`` position's calls with that EXPECTED ANSWER."""
    from localjudge.data.items import make_item
    from localjudge.metrics.position import ContextPosition
    from localjudge.metrics.relevance import ContextRelevance

    position = ContextPosition().build(
        make_item({"user_input": question, "retrieved_contexts": passages}, index=0)
    )
    record = {"user_input": question, "retrieved_contexts": passages, "response": "(none)"}
    relevance = ContextRelevance().build(make_item(record, index=0))
    assert isinstance(position, list)
    grades = [
        a for a in relevance if a.decision is not None and a.decision.kind == "relevance.grade"
    ]
    with_answer = []
    if answer:
        item = {"user_input": question, "retrieved_contexts": passages, "reference": answer}
        built = ContextPosition().build(make_item(item, index=0))
        assert isinstance(built, list)
        with_answer = built[1:]
    return [*position, *grades, *with_answer]


# --------------------------------------------------------------------------- figures


def kappa(human: Sequence[int], judge: Sequence[int], graded: bool) -> float | None:
    """Cohen's kappa (quadratic weights when ``graded``) through the package's one kappa
    (:func:`localjudge.stats.agreement.kappa`); None where both sides are constant or it is
    undefined."""
    from localjudge.stats.agreement import kappa as package_kappa

    if len(set(human)) < 2 and len(set(judge)) < 2:
        return None
    return package_kappa(human, judge, sorted({*human, *judge}), "quadratic" if graded else None)


# --------------------------------------------------------------------------- registry


def write_cutoffs(registry: Path, sha256: str, entry: dict[str, Any]) -> None:
    """Store ``entry`` under ``sha256`` in the registry's top-level ``cutoffs`` object, the rest
    of the file left as it is written (only that object is re-serialised), through a temporary
    file beside it (a failure never leaves package data half written)."""
    text = registry.read_text("utf-8")
    table = json.loads(text).get("cutoffs", {})
    table[sha256] = entry
    block = json.dumps(table, indent=2, ensure_ascii=False).replace("\n", "\n  ")
    key = '"cutoffs": '
    start = text.find(key)
    if start < 0:  # none yet: the object opens the file
        text = text.replace("{", "{\n  " + key + block + ",", 1)
    else:
        _, length = json.JSONDecoder().raw_decode(text[start + len(key) :])
        end = start + len(key) + length
        text = text[: start + len(key)] + block + text[end:]
    json.loads(text)  # still one valid registry
    tmp = registry.with_name(f"{registry.name}.{os.getpid()}.tmp")
    tmp.write_text(text, "utf-8")
    tmp.replace(registry)


#: the tables of a judge's registry entry, in the order they are written
TABLES = ("values", "sources", "combinations", "not_combined", "not_shipped")


def entry_tables(sha256: str, registry: Path = REGISTRY) -> dict[str, dict[str, Any]]:
    """A judge's registry entry as its tables (:data:`TABLES`, each a copy, empty when absent),
    to edit and then store with :func:`write_cutoffs`."""
    entry = (json.loads(registry.read_text("utf-8")).get("cutoffs") or {}).get(sha256) or {}
    return {name: dict(entry.get(name) or {}) for name in TABLES}
