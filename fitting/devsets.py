"""The development sources the bundled judges' cut-offs are built from, each split in three
parts by what ties its rows together, and the samples of each part that ``judge.py`` judges.

A module, not a script (``judge.py``, ``build.py`` and ``sealed.py`` import it). The data is
read from ``../shared/data`` beside the checkout (its README says what each set is); nothing of
it is committed.

**Units and parts.** Every source has a unit of dependence: the rows of one unit are never
split between parts.

- ``llmjudge``: a passage of a list of 5 (LLMJudge dev, NIST grades); unit: the query.
- ``trulens``: a passage of a query's pair (MS MARCO positives, mined negatives); the query.
- ``ragbench``: a document of an item (labels by GPT-4); the item.
- ``xquad``: a paragraph of a list of 3 (the answer's, one of another article, one of the same
  article without the answer), 10 languages; the article, with every translation.
- ``xquadshort``: a sentence of a list of 3 (the same roles); the article.
- ``xquadrecall``: the answer's sentence against its paragraph (supported) or against the two
  others (not); the article.
- ``wice``: a claim against its evidence chunk (WiCE dev, supported or not); the claim.

The three XQuAD sources share one family, so an article falls in the same part in all three.
:func:`parts` ranks a family's units by the sha256 of ``"FAMILY/UNIT"`` and gives the first
third to *choice* (readings, candidates, fits), the second to *validation* (the ship rule's
gates and the role targets) and the rest to the sealed *test* part, which nothing reads
before what ships is frozen (``sealed.py``). A list of XQuAD paragraphs holds a paragraph of
another article, which may lie in another part: :func:`crossing` counts those lists, and the
samples take none of them. The sentence lists do not say which article their other sentence
is from, so a sample of them may hold a sentence of another part's article (never its label).

**Samples, fixed before any row was judged.** Per part: every LLMJudge list (4 per query),
every TruLens query, 4 RAGBench items per subset (sha256 order), 6 XQuAD paragraph lists and 6
sentence lists per language (each language other questions of the part where it can; no
paragraph list whose other article lies in another part), the
two recall items of the first 3 of those questions per language, and every WiCE claim that is
not supported beside as many supported ones (first chunk of each claim, sha256 order).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import convert

ROOT = Path(__file__).resolve().parents[1]
#: the development data beside the checkout (``shared/data/README.md``)
SHARED = ROOT.parent / "shared" / "data"
PARTS = ("choice", "validation", "test")
FAMILY = {
    "llmjudge": "llmjudge",
    "trulens": "trulens",
    "ragbench": "ragbench",
    "xquad": "xquad",
    "xquadshort": "xquad",
    "xquadrecall": "xquad",
    "wice": "wice",
}
SOURCES = tuple(FAMILY)
#: the sources each kind of decision is fitted and gated on (``judge.py`` asks a source only
#: the decisions of the kinds that name it)
KIND_SOURCES: dict[str, tuple[str, ...]] = {
    "position.relevant": ("llmjudge", "trulens", "ragbench", "xquad", "xquadshort"),
    "position.relevant_answer": ("xquad", "xquadshort"),
    "relevance.grade": ("llmjudge", "xquad", "xquadshort"),
    "recall.supported": ("wice", "xquadrecall"),
}
LANGS = ("en", "es", "de", "el", "ru", "tr", "ar", "vi", "zh", "hi")
GRADES = {"none": 0, "low": 1, "medium": 2, "high": 3}
#: an XQuAD passage's role by its level
ROLES = {3: "answer", 1: "same", 0: "other"}
LLMJUDGE_PER_QUERY = 4
RAGBENCH_PER_SUBSET = 4
XQUAD_PER_LANG = 6
RECALL_PER_LANG = 3


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def parts(family: str, units: Iterable[str]) -> dict[str, str]:
    """Each unit's part: the units ranked by the sha256 of ``"FAMILY/UNIT"``, the first third
    ``choice``, the second ``validation``, the rest ``test``."""
    ranked = sorted(set(units), key=lambda u: sha(f"{family}/{u}"))
    third = len(ranked) // 3
    return {
        u: PARTS[0] if n < third else PARTS[1] if n < 2 * third else PARTS[2]
        for n, u in enumerate(ranked)
    }


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file, gzipped or not."""
    opener: Callable[..., Any] = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# --------------------------------------------------------------------------- lists


def passage_lists(
    source: str, records: Sequence[dict[str, Any]], unit: Callable[[dict[str, Any]], str]
) -> list[dict[str, Any]]:
    """Labelled records as lists: ``{source, id, unit, part, lang, question, passages,
    relevant, grades, answer}`` (``answer``: the XQuAD answer span, shown as the EXPECTED
    ANSWER; elsewhere None: a response there is a proxy cut from the best passage)."""
    out = []
    for r in records:
        levels = r["labels"].get("levels")
        out.append(
            {
                "source": source,
                "id": r["id"],
                "unit": unit(r),
                "lang": r["id"].split("-", 2)[1] if source.startswith("xquad") else "en",
                "question": r["user_input"],
                "passages": list(r["retrieved_contexts"]),
                "relevant": [int(bool(v)) for v in r["labels"]["relevant"]],
                "grades": [GRADES[v] for v in levels] if levels else None,
                "answer": r.get("response") if source.startswith("xquad") else None,
            }
        )
    part = parts(FAMILY[source], (x["unit"] for x in out))
    for x in out:
        x["part"] = part[x["unit"]]
    return out


def llmjudge(src: Path = SHARED) -> list[dict[str, Any]]:
    records = convert.llmjudge_records(
        convert.read_llmjudge(src), pieces=5, per_query=LLMJUDGE_PER_QUERY
    )
    return passage_lists("llmjudge", records, lambda r: str(r["source"]["qid"]))


def trulens(src: Path = SHARED) -> list[dict[str, Any]]:
    records = convert.trulens_msmarco_records(convert.read_trulens_msmarco(src))
    return passage_lists("trulens", records, lambda r: r["user_input"])


def ragbench(src: Path = SHARED) -> list[dict[str, Any]]:
    records = convert.ragbench_records(convert.read_ragbench(src))
    lists = passage_lists("ragbench", records, lambda r: r["id"])
    out = []
    for subset in sorted({x["id"].split("-")[1] for x in lists}):
        for part in PARTS:
            mine = [x for x in lists if x["id"].split("-")[1] == subset and x["part"] == part]
            out += sorted(mine, key=lambda x: sha(x["id"]))[:RAGBENCH_PER_SUBSET]
    return out


def xquad_every(source: str, src: Path = SHARED) -> list[dict[str, Any]]:
    """Every list of an XQuAD file (``xquad``: paragraphs, ``xquadshort``: sentences); a
    paragraph list whose other article lies in another part says so (``crosses``)."""
    name = "position_relevance.jsonl.gz" if source == "xquad" else "short.jsonl.gz"
    records = read_jsonl(src / "xquad-dev" / name)
    lists = passage_lists(source, records, lambda r: r["source"]["article"])
    part = parts("xquad", (r["source"]["article"] for r in records))
    for x, r in zip(lists, records, strict=True):
        others = r["source"].get("context_articles", ())
        x["crosses"] = any(part[a] != x["part"] for a in others if a in part)
    return lists


def per_language(lists: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """``count`` lists per language and part: each language, in :data:`LANGS` order, takes the
    first questions of the part in sha256 order that it has and no earlier language took (so
    the lists of a part are different questions while there are enough), leaving out lists
    that cross parts (:func:`crossing`)."""
    lists = [x for x in lists if not x.get("crosses")]
    by_key = {(x["lang"], x["part"], question_id(x)): x for x in lists}
    out = []
    for part in PARTS:
        ordered = sorted({question_id(x) for x in lists if x["part"] == part}, key=sha)
        taken: set[str] = set()
        for lang in LANGS:
            mine = [q for q in ordered if (lang, part, q) in by_key]
            fresh = [q for q in mine if q not in taken][:count]
            picked = fresh + [q for q in mine if q not in fresh][: count - len(fresh)]
            taken.update(picked)
            out += [by_key[(lang, part, q)] for q in picked]
    return out


def question_id(x: dict[str, Any]) -> str:
    """An XQuAD list's question id (the same in every language)."""
    return str(x["id"]).split("-", 2)[2].removesuffix("-sup").removesuffix("-not")


def xquad(source: str, src: Path = SHARED) -> list[dict[str, Any]]:
    return per_language(xquad_every(source, src), XQUAD_PER_LANG)


# --------------------------------------------------------------------------- recall items


def recall_item(source: str, r: dict[str, Any], unit: str, lang: str) -> dict[str, Any]:
    """``{source, id, unit, lang, record, label}``: the record as recall reads it."""
    return {
        "source": source,
        "id": r["id"],
        "unit": unit,
        "lang": lang,
        "record": {k: r[k] for k in ("id", "user_input", "retrieved_contexts", "reference")},
        "label": int(r["labels"]["recall"]),
    }


def xquadrecall(src: Path = SHARED) -> list[dict[str, Any]]:
    """The two recall items of the first :data:`RECALL_PER_LANG` questions per language and
    part of the XQuAD paragraph sample."""
    sample = xquad("xquad", src)
    wanted = set()
    for part in PARTS:
        for lang in LANGS:
            mine = [x for x in sample if x["part"] == part and x["lang"] == lang]
            wanted |= {x["id"] for x in mine[:RECALL_PER_LANG]}
    out = []
    for r in read_jsonl(src / "xquad-dev" / "recall.jsonl.gz"):
        if r["id"].rsplit("-", 1)[0] in wanted:
            lang = r["id"].split("-", 2)[1]
            out.append(recall_item("xquadrecall", r, r["source"]["article"], lang))
    part = parts("xquad", (x["unit"] for x in out))
    return [dict(x, part=part[x["unit"]]) for x in out]


def wice(src: Path = SHARED) -> list[dict[str, Any]]:
    """Per part, every claim not supported and as many supported ones (sha256 order), the
    first chunk of each."""
    first: dict[str, dict[str, Any]] = {}
    for r in convert.wice_records(convert.read_wice(src)):
        if r["labels"]["recall"] in (0, 1):
            first.setdefault(str(r["source"]["claim_id"]), r)
    part = parts("wice", first)
    out = []
    for p in PARTS:
        claims = sorted((c for c in first if part[c] == p), key=sha)
        no = [c for c in claims if first[c]["labels"]["recall"] == 0]
        yes = [c for c in claims if first[c]["labels"]["recall"] == 1][: len(no)]
        out += [
            dict(recall_item("wice", first[c], c, "en"), part=p) for c in sorted(no + yes, key=sha)
        ]
    return out


#: each source's sample, by name
SAMPLES: dict[str, Callable[[Path], list[dict[str, Any]]]] = {
    "llmjudge": llmjudge,
    "trulens": trulens,
    "ragbench": ragbench,
    "xquad": lambda src: xquad("xquad", src),
    "xquadshort": lambda src: xquad("xquadshort", src),
    "xquadrecall": xquadrecall,
    "wice": wice,
}


def crossing(src: Path = SHARED) -> dict[str, int]:
    """How many XQuAD paragraph lists of each part hold another article's paragraph from
    another part (``source.context_articles`` says each paragraph's article)."""
    records = read_jsonl(src / "xquad-dev" / "position_relevance.jsonl.gz")
    part = parts("xquad", (r["source"]["article"] for r in records))
    counts = dict.fromkeys(PARTS, 0)
    for r in records:
        mine = part[r["source"]["article"]]
        if any(part.get(a, mine) != mine for a in r["source"]["context_articles"]):
            counts[mine] += 1
    return counts
