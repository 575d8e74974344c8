"""Convert the labelled development data in ``shared/data`` into localjudge's labelled JSONL.

Each output line is an input record (``id``, ``user_input``, ``retrieved_contexts`` and, where the
source has them, ``reference`` and ``response``) plus ``labels`` and ``source``::

    {"id": ..., "user_input": ..., "retrieved_contexts": [...], "reference": ..., "response": ...,
     "labels": {"recall": 0.5, "relevant": [...], "levels": [...], "used": [...]},
     "source": {"dataset": ..., ...provenance...}}

``relevant``, ``levels`` and ``used`` hold one value per context piece, in retrieval order. Only
the labels a dataset really has are written.

The converted files are NOT committed (several sources carry non-commercial terms, see
``shared/data/README.md``); ``benchmarks/data/.gitignore`` keeps them out. Regenerate them with::

    python fitting/convert.py all            # 30 items per dataset (ragbench: 30 in all)
    python fitting/convert.py wice --limit 0 # every row of one dataset

Everything is deterministic: sampling and retrieval order come from ``random.Random`` seeded with
``--seed`` (per group: ``f"{seed}/{key}"``), and records are written in source order.

Decisions on the data
---------------------
* Pieces are cut to at most 1,200 characters on a word boundary, so that an item with a handful
  of pieces fits an 8k-token window together with the judge's bounded output. ``source.truncated``
  lists the pieces that were cut. RAGBench documents that are too long are rebuilt from their
  leading sentences instead, so that the per-document labels are computed from exactly the
  sentences that were kept.
* **llmjudge** (TREC DL 2023 dev, NIST grades 0-3): passages grouped by ``qid``; each query gives
  ``per_query`` items of ``pieces`` passages. Each item holds at least one passage of grade >= 2
  and one of grade <= 1 when the query has them; the other slots pick a grade uniformly among the
  grades left, then a passage of it (so the lists mix grades instead of being mostly grade 0);
  a query's items avoid repeating passages while they can. The seeded shuffle of the picked
  passages is the retrieval order. ``relevant`` = grade >= 2 (TREC convention);
  ``levels``: 3 high, 2 medium, 1 low, 0 none.
  LLMJudge has no system responses and no reference answers. The relevance metric needs a
  ``response``, so a *proxy* is used: the first 300 characters of the highest-graded passage of
  the list (``source.response_is_proxy = true``). It makes the relevance metric runnable for
  level agreement; there are no ``used`` labels, and a judge that sees the proxy can tell which
  piece it came from (this eases position/relevance for that one piece).
* **wice** (oracle chunks, dev): one item per row; ``user_input`` is a short neutral question
  that contains the claim, ``reference`` is the claim, and the evidence sentences (blank ones
  dropped) are grouped in order into pieces of up to 5 consecutive sentences (and at most 1,200
  characters, so evidence is never cut). ``recall``: supported 1.0, not_supported 0.0,
  partially_supported 0.5. WiCE's "partially supported" means some part of the claim lacks
  support; with the claim as the reference, ragas recall would lie strictly between 0 and 1, and
  0.5 is the neutral point. Binary metrics (ROC AUC) should use only the 0/1 items. With a limit,
  the sample is balanced across the three labels and takes at most one row (chunk) per claim.
* **trulens-msmarco** (``expected_score`` is 0 or 1: 200 queries, each one positive MS MARCO
  passage and one mined negative): one item per query, its passages in seeded shuffled order,
  ``relevant`` = score >= 0.5. Queries whose positive and negative passages are the same text (6 in
  the file) carry contradicting labels and are dropped. ``response`` is the proxy as above (the
  positive passage).
* **trulens-golden** (15 hand-graded pairs, 11 distinct queries, scores 0.2, 0.3, 0.4, 0.5, 0.7,
  0.8, 1.0): grouped by query (exact text). ``levels``: score >= 0.8 high, >= 0.6 medium (0.7),
  >= 0.4 low (0.4, 0.5), else none (0.2, 0.3); ``relevant`` = score >= 0.6 (high or medium, as a
  judge's levels are read for binary relevance). Two entries whose "context" is a refusal ("I'm
  really sorry, but I can't assist ...", graded 1.0 as an appropriate answer, not as retrieved
  context) are dropped by default. ``response`` is the proxy as above.
* **ragbench** (7 test subsets; labels made by an LLM - GPT-4o / GPT-4-turbo, named in
  ``source.labels_by`` - not by people): ``user_input`` = question, ``retrieved_contexts`` =
  documents (the first 8 only, as a top-k cut, so that long lists fit the window), ``response`` =
  response. Document i is ``relevant`` when a key of ``all_relevant_sentence_keys`` has leading
  digits i followed by a letter ("0a", "1b.", "12c"; keys such as "general" or
  "supported_without_sentence" name no document) and ``used`` likewise with
  ``all_utilized_sentence_keys``. No ``levels`` (binary only) and no ``recall`` (no reference).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from localjudge.data.item import make_item

ROOT = Path(__file__).resolve().parent.parent

DEFAULT_SRC = ROOT / ".." / "shared" / "data"
DEFAULT_OUT = ROOT / "benchmarks" / "data"
#: items per dataset in ``all`` (and when ``--limit`` is not given); ragbench: in all subsets
DEFAULT_LIMIT = 30

MAX_PIECE_CHARS = 1200
PROXY_CHARS = 300
LEVELS = ("high", "medium", "low", "none")
TREC_LEVELS = {3: "high", 2: "medium", 1: "low", 0: "none"}
WICE_RECALL = {"supported": 1.0, "partially_supported": 0.5, "not_supported": 0.0}
WICE_QUESTION = "What do the sources say about the following claim? {claim}"
WICE_SENTENCES_PER_PIECE = 5
RAGBENCH_MAX_DOCS = 8
_DOC_KEY = re.compile(r"^(\d+)[A-Za-z]")


# ------------------------------------------------------------------------------- helpers


def truncate(text: str, limit: int = MAX_PIECE_CHARS) -> str:
    """``text`` stripped and, when longer than ``limit``, cut on the last word boundary."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[: limit + 1]
    space = max(cut.rfind(" "), cut.rfind("\n"), cut.rfind("\t"))
    cut = cut[:space] if space > limit // 2 else text[:limit]
    return cut.rstrip()


def _pieces(texts: Sequence[str]) -> tuple[list[str], list[int]]:
    """Truncated pieces and the indices of those that were cut."""
    pieces = [truncate(t) for t in texts]
    return pieces, [i for i, (t, p) in enumerate(zip(texts, pieces, strict=True)) if t.strip() != p]


def _proxy(texts: Sequence[str], scores: Sequence[float]) -> tuple[str, int]:
    """The proxy response: the start of the first highest-scored text, and its index."""
    best = max(range(len(texts)), key=lambda i: (scores[i], -i))
    return truncate(texts[best], PROXY_CHARS), best


def trec_level(grade: int) -> str:
    if grade not in TREC_LEVELS:
        raise ValueError(f"TREC grade must be 0-3, got {grade!r}")
    return TREC_LEVELS[grade]


def golden_level(score: float) -> str:
    """TruLens golden-set score (0.2 ... 1.0) -> relevance level."""
    if score >= 0.8:
        return "high"
    if score >= 0.6:
        return "medium"
    if score >= 0.4:
        return "low"
    return "none"


def doc_index(key: str) -> int | None:
    """RAGBench sentence key -> document index ("12c" -> 12); None for keys naming no document."""
    match = _DOC_KEY.match(key.strip())
    return int(match.group(1)) if match else None


def docs_with_keys(keys: Iterable[str], n_docs: int) -> list[bool]:
    found = {doc_index(k) for k in keys}
    return [i in found for i in range(n_docs)]


def balanced_counts(available: Mapping[str, int], limit: int) -> dict[str, int]:
    """Split ``limit`` as evenly as possible across classes, none above what it has."""
    counts = dict.fromkeys(available, 0)
    left = min(limit, sum(available.values()))
    while left > 0:
        open_ = [k for k in sorted(available) if counts[k] < available[k]]
        share, extra = divmod(left, len(open_))
        for i, k in enumerate(open_):
            take = min(share + (1 if i < extra else 0), available[k] - counts[k])
            counts[k] += take
            left -= take
    return counts


def validate(record: Mapping[str, Any]) -> None:
    """Check a record the way localjudge will read it, for the metrics its labels target."""
    item = make_item(record, index=0)
    item.text("user_input")
    contexts = item.contexts()
    if any(not c.strip() for c in contexts):
        raise ValueError(f"{item.id}: empty context piece")
    labels = record["labels"]
    if not labels:
        raise ValueError(f"{item.id}: no labels")
    if "recall" in labels:
        item.text("reference")
        if not 0.0 <= labels["recall"] <= 1.0:
            raise ValueError(f"{item.id}: recall {labels['recall']} outside [0, 1]")
    if {"levels", "used", "relevant"} & set(labels):
        item.text("response")
    for key in ("relevant", "levels", "used"):
        if key in labels and len(labels[key]) != len(contexts):
            raise ValueError(
                f"{item.id}: labels.{key} has {len(labels[key])} values for {len(contexts)} pieces"
            )
    for key in ("relevant", "used"):
        if key in labels and not all(isinstance(v, bool) for v in labels[key]):
            raise ValueError(f"{item.id}: labels.{key} must be booleans")
    if "levels" in labels and not set(labels["levels"]) <= set(LEVELS):
        raise ValueError(f"{item.id}: unknown level in {labels['levels']}")


def _record(
    rid: str,
    user_input: str,
    contexts: list[str],
    labels: dict[str, Any],
    source: dict[str, Any],
    *,
    reference: str | None = None,
    response: str | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {"id": rid, "user_input": user_input, "retrieved_contexts": contexts}
    if reference is not None:
        record["reference"] = reference
    if response is not None:
        record["response"] = response
    record["labels"] = labels
    record["source"] = source
    validate(record)
    return record


# ------------------------------------------------------------------------------- llmjudge


def llmjudge_records(
    rows: Iterable[Mapping[str, Any]],
    *,
    pieces: int = 5,
    per_query: int = 2,
    limit: int | None = None,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """LLMJudge pairs ``{qid, query, pid, relevance, passage}`` -> ranked, graded context lists.

    With ``limit``, items are taken round-robin over the queries (every query's first item, then
    every query's second, ...), so a small sample still covers many queries.
    """
    by_qid: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        if str(row["passage"]).strip():
            by_qid[str(row["qid"])].append(row)
    per_query_items: list[list[dict[str, Any]]] = []
    for qid in sorted(by_qid, key=_natural_key):
        group = sorted(by_qid[qid], key=lambda r: str(r["pid"]))
        rng = random.Random(f"{seed}/{qid}")
        used: set[str] = set()
        items = []
        for k in range(per_query):
            chosen = _pick_passages(group, pieces, rng, used)
            rng.shuffle(chosen)
            used.update(str(r["pid"]) for r in chosen)
            items.append(_llmjudge_item(qid, k, chosen))
        per_query_items.append(items)
    ordered = [items[k] for k in range(per_query) for items in per_query_items]
    if limit is not None:
        ordered = ordered[:limit]
    # stable output order: by query, then item number
    rank = {
        rec["id"]: (q, k) for q, items in enumerate(per_query_items) for k, rec in enumerate(items)
    }
    return sorted(ordered, key=lambda rec: rank[rec["id"]])


def _natural_key(text: str) -> tuple[str, int, str]:
    match = re.match(r"^(\D*)(\d+)(.*)$", text)
    return (match.group(1), int(match.group(2)), match.group(3)) if match else (text, -1, "")


def _pick_passages(
    group: list[Mapping[str, Any]], pieces: int, rng: random.Random, used: set[str]
) -> list[Mapping[str, Any]]:
    """Up to ``pieces`` passages: one of grade >= 2, one of grade <= 1, then grades at random."""
    by_grade: dict[int, list[Mapping[str, Any]]] = defaultdict(list)
    for row in group:
        by_grade[int(row["relevance"])].append(row)
    chosen: list[Mapping[str, Any]] = []

    def pick(grades: Iterable[int]) -> None:
        taken = {str(r["pid"]) for r in chosen}
        for fresh_only in (True, False):

            def ok(r: Mapping[str, Any], fresh_only: bool = fresh_only) -> bool:
                pid = str(r["pid"])
                return pid not in taken and not (fresh_only and pid in used)

            options = [g for g in sorted(grades) if any(ok(r) for r in by_grade.get(g, []))]
            if options:
                grade = rng.choice(options)
                chosen.append(rng.choice([r for r in by_grade[grade] if ok(r)]))
                return

    pick([2, 3])
    pick([0, 1])
    while len(chosen) < min(pieces, len(group)):
        pick(by_grade)
    return chosen[:pieces]


def _llmjudge_item(qid: str, k: int, chosen: list[Mapping[str, Any]]) -> dict[str, Any]:
    texts = [str(r["passage"]) for r in chosen]
    grades = [int(r["relevance"]) for r in chosen]
    contexts, truncated = _pieces(texts)
    response, best = _proxy(texts, grades)
    return _record(
        f"llmjudge-{qid}-{k}",
        str(chosen[0]["query"]).strip(),
        contexts,
        {"relevant": [g >= 2 for g in grades], "levels": [trec_level(g) for g in grades]},
        {
            "dataset": "llmjudge-dl2023-dev",
            "qid": qid,
            "pids": [str(r["pid"]) for r in chosen],
            "grades": grades,
            "labels_by": "NIST assessors",
            "response_is_proxy": True,
            "response_from_piece": best,
            "truncated": truncated,
        },
        response=response,
    )


# ------------------------------------------------------------------------------- wice


def wice_pieces(sentences: Sequence[str]) -> list[str]:
    """Consecutive non-blank sentences, up to 5 (and 1,200 characters) per piece."""
    out: list[list[str]] = []
    for sentence in (s.strip() for s in sentences):
        if not sentence:
            continue
        last = out[-1] if out else None
        if (
            last is None
            or len(last) >= WICE_SENTENCES_PER_PIECE
            or len(" ".join([*last, sentence])) > MAX_PIECE_CHARS
        ):
            out.append([sentence])
        else:
            last.append(sentence)
    return [truncate(" ".join(p)) for p in out]


def wice_records(
    rows: Sequence[Mapping[str, Any]], *, limit: int | None = None, seed: int = 0
) -> list[dict[str, Any]]:
    """WiCE oracle-chunk rows ``{label, claim, evidence, meta}`` -> recall items, one per row.

    With ``limit``: balanced across labels, at most one row per claim, in file order.
    """
    chunk_no: Counter[str] = Counter()
    records = []
    for row_no, row in enumerate(rows):
        meta = row.get("meta") or {}
        claim_id = str(meta.get("id", row_no))
        k = chunk_no[claim_id]
        chunk_no[claim_id] += 1
        claim = str(row["claim"]).strip()
        contexts = wice_pieces(row["evidence"])
        if not claim or not contexts:
            continue
        records.append(
            _record(
                f"wice-{claim_id}-{k}",
                WICE_QUESTION.format(claim=claim),
                contexts,
                {"recall": WICE_RECALL[row["label"]]},
                {
                    "dataset": "wice-dev-oracle-chunks",
                    "claim_id": claim_id,
                    "chunk": k,
                    "row": row_no,
                    "label": row["label"],
                    "labels_by": "human annotators",
                    "evidence_idx": list(meta.get("chunk_idx", [])),
                    "oracle_idx": list(meta.get("oracle_idx", [])),
                },
                reference=claim,
            )
        )
    if limit is None:
        return records
    rng = random.Random(f"{seed}/wice")
    by_label: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for rec in records:
        by_label[rec["source"]["label"]][rec["source"]["claim_id"]].append(rec)
    counts = balanced_counts({lab: len(claims) for lab, claims in by_label.items()}, limit)
    picked = []
    for label in sorted(by_label):
        claims = by_label[label]
        picked.extend(rng.choice(claims[c]) for c in rng.sample(sorted(claims), counts[label]))
    return sorted(picked, key=lambda rec: rec["source"]["row"])


# ------------------------------------------------------------------------------- trulens


def _group_in_order(rows: Iterable[Mapping[str, Any]], key: str) -> dict[str, list[Any]]:
    groups: dict[str, list[Any]] = {}
    for row in rows:
        groups.setdefault(str(row[key]).strip(), []).append(row)
    return groups


def _sample_in_order(records: list[dict[str, Any]], limit: int | None, seed: int, name: str):
    if limit is None or limit >= len(records):
        return records
    keep = set(random.Random(f"{seed}/{name}").sample(range(len(records)), limit))
    return [rec for i, rec in enumerate(records) if i in keep]


def trulens_msmarco_records(
    rows: Iterable[Mapping[str, Any]], *, limit: int | None = None, seed: int = 0
) -> list[dict[str, Any]]:
    """TruLens MS MARCO rows ``{query, expected_response, expected_score}`` -> binary items."""
    records = []
    for q_no, (query, group) in enumerate(_group_in_order(rows, "query").items()):
        texts = [str(r["expected_response"]) for r in group]
        scores = [float(r["expected_score"]) for r in group]
        labels_of: dict[str, set[bool]] = defaultdict(set)
        for text, score in zip(texts, scores, strict=True):
            labels_of[text.strip()].add(score >= 0.5)
        if any(len(v) > 1 for v in labels_of.values()) or not any(s >= 0.5 for s in scores):
            continue  # the same passage labelled both ways, or no positive passage
        order = list(range(len(group)))
        random.Random(f"{seed}/{q_no}").shuffle(order)
        texts = [texts[i] for i in order]
        scores = [scores[i] for i in order]
        contexts, truncated = _pieces(texts)
        response, best = _proxy(texts, scores)
        records.append(
            _record(
                f"trulens-msmarco-{q_no:03d}",
                query,
                contexts,
                {"relevant": [s >= 0.5 for s in scores]},
                {
                    "dataset": "trulens-ms-marco-hard-neg-balanced",
                    "query_no": q_no,
                    "rows": [_row_no(group[i]) for i in order],
                    "scores": scores,
                    "labels_by": "MS MARCO positives; mined negatives (not human-judged)",
                    "response_is_proxy": True,
                    "response_from_piece": best,
                    "truncated": truncated,
                },
                response=response,
            )
        )
    return _sample_in_order(records, limit, seed, "trulens-msmarco")


def _row_no(row: Mapping[str, Any]) -> int:
    return int(row.get("_row", -1))


def trulens_golden_records(
    rows: Iterable[Mapping[str, Any]],
    *,
    limit: int | None = None,
    seed: int = 0,
    drop_refusals: bool = True,
) -> list[dict[str, Any]]:
    """TruLens golden set ``{query, context, expected_score}`` -> graded items, one per query."""
    kept = [r for r in rows if not (drop_refusals and _is_refusal(str(r["context"])))]
    records = []
    for q_no, (query, group) in enumerate(_group_in_order(kept, "query").items()):
        texts = [str(r["context"]) for r in group]
        scores = [float(r["expected_score"]) for r in group]
        contexts, truncated = _pieces(texts)
        response, best = _proxy(texts, scores)
        records.append(
            _record(
                f"trulens-golden-{q_no:02d}",
                query,
                contexts,
                {
                    "relevant": [s >= 0.6 for s in scores],
                    "levels": [golden_level(s) for s in scores],
                },
                {
                    "dataset": "trulens-context-relevance-golden-set",
                    "rows": [_row_no(r) for r in group],
                    "scores": scores,
                    "labels_by": "hand-graded (TruLens)",
                    "response_is_proxy": True,
                    "response_from_piece": best,
                    "truncated": truncated,
                },
                response=response,
            )
        )
    return _sample_in_order(records, limit, seed, "trulens-golden")


def _is_refusal(text: str) -> bool:
    text = text.strip().lower()
    return text.startswith(("i'm really sorry", "i'm sorry", "as an ai language model"))


# ------------------------------------------------------------------------------- ragbench


def ragbench_record(row: Mapping[str, Any], subset: str, row_no: int) -> dict[str, Any] | None:
    """One RAGBench row -> an item with per-document ``relevant``/``used`` labels.

    None when the row has no question, response or documents."""
    question = str(row.get("question") or "").strip()
    response = str(row.get("response") or "").strip()
    documents = list(row.get("documents") or [])
    if not question or not response or not documents:
        return None
    n_total = len(documents)
    documents = documents[:RAGBENCH_MAX_DOCS]
    sentences = list(row.get("documents_sentences") or [])
    relevant_keys = set(row.get("all_relevant_sentence_keys") or [])
    utilized_keys = set(row.get("all_utilized_sentence_keys") or [])
    contexts, relevant, used, truncated = [], [], [], []
    for i, doc in enumerate(documents):
        doc_keys = None  # None: the whole document is kept, every key of it counts
        text = str(doc).strip()
        if len(text) > MAX_PIECE_CHARS and i < len(sentences) and sentences[i]:
            text, doc_keys = _leading_sentences(sentences[i])
            truncated.append(i)
        elif len(text) > MAX_PIECE_CHARS:
            text = truncate(text)
            truncated.append(i)
        if not text:
            return None

        def has(keys: set[str], i: int = i, doc_keys: set[str] | None = doc_keys) -> bool:
            return any(
                doc_index(k) == i and (doc_keys is None or k.strip().rstrip(".") in doc_keys)
                for k in keys
            )

        contexts.append(text)
        relevant.append(has(relevant_keys))
        used.append(has(utilized_keys))
    return _record(
        f"ragbench-{subset}-{row_no}",
        question,
        contexts,
        {"relevant": relevant, "used": used},
        {
            "dataset": f"ragbench-{subset}-test",
            "row_id": str(row.get("id", "")),
            "row": row_no,
            "labels_by": f"{row.get('annotating_model_name') or 'GPT-4'} (an LLM, not people)",
            "response_by": row.get("generation_model_name"),
            "documents_total": n_total,
            "truncated": truncated,
        },
        response=response,
    )


def _leading_sentences(sentences: Sequence[Sequence[str]]) -> tuple[str, set[str]]:
    """The document's leading sentences within the piece limit, and their keys."""
    kept: list[str] = []
    keys: set[str] = set()
    for key, raw in sentences:
        sentence = raw.strip()
        if not sentence:
            continue
        if kept and len(" ".join([*kept, sentence])) > MAX_PIECE_CHARS:
            break
        kept.append(sentence)
        keys.add(key.strip().rstrip("."))
        if len(" ".join(kept)) > MAX_PIECE_CHARS:  # one sentence alone is too long
            break
    return truncate(" ".join(kept)), keys


def ragbench_records(
    subsets: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    limit: int | None = None,
    total: int | None = None,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """RAGBench rows per subset -> items; ``limit`` rows per subset, or ``total`` split evenly."""
    names = sorted(subsets)
    if total is not None:
        share, extra = divmod(total, len(names))
        quota = {n: share + (1 if i < extra else 0) for i, n in enumerate(names)}
    else:
        quota = dict.fromkeys(names, limit)
    records = []
    for name in names:
        rows = subsets[name]
        eligible = [i for i, r in enumerate(rows) if _ragbench_usable(r)]
        want = quota[name]
        if want is not None and want < len(eligible):
            eligible = sorted(random.Random(f"{seed}/{name}").sample(eligible, want))
        for i in eligible:
            record = ragbench_record(rows[i], name, i)
            if record is not None:
                records.append(record)
    return records


def _ragbench_usable(row: Mapping[str, Any]) -> bool:
    return bool(
        str(row.get("question") or "").strip()
        and str(row.get("response") or "").strip()
        and row.get("documents")
        and all(str(d).strip() for d in row["documents"][:RAGBENCH_MAX_DOCS])
    )


# ------------------------------------------------------------------------------- file readers


def read_llmjudge(src: Path) -> list[dict[str, Any]]:
    with gzip.open(src / "llmjudge-dl2023-dev.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_wice(src: Path) -> list[dict[str, Any]]:
    path = src / "wice-dev" / "oracle_chunks_claim_dev.jsonl"
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_trulens_msmarco(src: Path) -> list[dict[str, Any]]:
    path = src / "trulens" / "ms_marco_hard_neg_balanced.csv"
    with path.open(encoding="utf-8", newline="") as f:
        return [{**row, "_row": i} for i, row in enumerate(csv.DictReader(f))]


def read_trulens_golden(src: Path) -> list[dict[str, Any]]:
    path = src / "trulens" / "context_relevance_golden_set.json"
    rows = json.loads(path.read_text(encoding="utf-8"))
    return [{**row, "_row": i} for i, row in enumerate(rows)]


def read_ragbench(src: Path) -> dict[str, list[dict[str, Any]]]:
    import pyarrow.parquet as pq

    columns = [
        "id",
        "question",
        "documents",
        "response",
        "documents_sentences",
        "all_relevant_sentence_keys",
        "all_utilized_sentence_keys",
        "annotating_model_name",
        "generation_model_name",
    ]
    return {
        path.name.removesuffix("-test.parquet"): pq.read_table(path, columns=columns).to_pylist()
        for path in sorted((src / "ragbench").glob("*-test.parquet"))
    }


# ------------------------------------------------------------------------------- CLI


def summary(name: str, records: Sequence[Mapping[str, Any]]) -> str:
    parts = [
        f"{name}: {len(records)} items",
        f"{sum(len(r['retrieved_contexts']) for r in records)} pieces",
    ]
    for key in ("relevant", "used"):
        values = [v for r in records for v in r["labels"].get(key, [])]
        if values:
            parts.append(f"{key} {sum(values)}/{len(values)}")
    levels = Counter(v for r in records for v in r["labels"].get("levels", []))
    if levels:
        parts.append("levels " + " ".join(f"{lv}={levels[lv]}" for lv in LEVELS))
    recall = Counter(r["labels"]["recall"] for r in records if "recall" in r["labels"])
    if recall:
        parts.append("recall " + " ".join(f"{k:g}={recall[k]}" for k in sorted(recall)))
    proxies = sum(bool(r["source"].get("response_is_proxy")) for r in records)
    if proxies:
        parts.append(f"proxy responses {proxies}")
    cut = sum(bool(r["source"].get("truncated")) for r in records)
    parts.append(f"items with truncated pieces {cut}")
    return "; ".join(parts)


def write_jsonl(path: Path, records: Iterable[Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


def ensure_gitignore(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    path = out / ".gitignore"
    if not path.exists():
        path.write_text("*.jsonl\n!.gitignore\n", encoding="utf-8")


Converter = Callable[[Path, "int | None", int, argparse.Namespace], list[dict[str, Any]]]
CONVERTERS: dict[str, Converter] = {
    "llmjudge": lambda src, limit, seed, a: llmjudge_records(
        read_llmjudge(src), pieces=a.pieces, per_query=a.per_query, limit=limit, seed=seed
    ),
    "wice": lambda src, limit, seed, a: wice_records(read_wice(src), limit=limit, seed=seed),
    "trulens-msmarco": lambda src, limit, seed, a: trulens_msmarco_records(
        read_trulens_msmarco(src), limit=limit, seed=seed
    ),
    "trulens-golden": lambda src, limit, seed, a: trulens_golden_records(
        read_trulens_golden(src), limit=limit, seed=seed
    ),
    "ragbench": lambda src, limit, seed, a: ragbench_records(
        read_ragbench(src),
        limit=limit if not a.all else None,
        total=limit if a.all else None,
        seed=seed,
    ),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", choices=[*CONVERTERS, "all"])
    parser.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        help=f"items per dataset (default {DEFAULT_LIMIT}; 0 = all). ragbench: rows per subset, "
        "but with 'all' the total over its subsets",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--src", type=Path, default=DEFAULT_SRC, help="the shared/data folder")
    parser.add_argument("-o", "--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--pieces", type=int, default=5, help="llmjudge: passages per item")
    parser.add_argument("--per-query", type=int, default=2, help="llmjudge: items per query")
    args = parser.parse_args(argv)
    args.all = args.dataset == "all"
    if args.limit < 0 or args.pieces < 1 or args.per_query < 1:
        parser.error("--limit must be >= 0, --pieces and --per-query >= 1")
    limit = args.limit or None
    src = args.src.resolve()
    ensure_gitignore(args.out)
    for name in CONVERTERS if args.all else [args.dataset]:
        records = CONVERTERS[name](src, limit, args.seed, args)
        write_jsonl(args.out / f"{name}.jsonl", records)
        print(summary(name, records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
