"""The shapes of list users meet that a list of one answer among distractors never shows: each
passage alone (a top-1 retriever, a reranker's pick, a user checking one chunk), lists where
every passage states the answer (a good retriever, overlapping chunks), and lists where none
does (a failed retrieval). ``clear_cases.py`` judges them; here they are built and their table
lines made.

From the validation part of XQuAD (``fitting/devsets.py``, split by article), per language:

- *alone*: every paragraph of a list (the answer's, another article's, one of the same article
  without the answer), each as an item of its own;
- *every*: the answer's paragraph and its own answer sentence (``short.jsonl.gz``);
- *none*: three paragraphs of other validation articles: the answer paragraphs of the next
  questions of the same language whose article is another.

From the contrast items (``localjudge/run/calibrate/contrast_items.jsonl``), per kind of text: each
passage alone; the answer passage with the item's reference (both state the answer); the
item's other passage with the other passage of the next item of the same kind.

A case is ``{"record", "lang", "kind", "shape", "roles"}``: the product's input record (with
the source's answer: :func:`as_asked` says which the product is shown), and per passage its
role (``answer``, ``other``, ``same``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

ROLE = {"high": "answer", "low": "same", "none": "other"}
SHAPES = ("alone", "every", "none")
#: how many other articles' paragraphs a list where none answers holds
NONE_SIZE = 3


def roles_of(record: Mapping[str, Any]) -> list[str]:
    return [ROLE.get(level, "answer") for level in record["labels"]["levels"]]


def _case(
    record: Mapping[str, Any], suffix: str, passages: Sequence[str], shape: str, roles: list[str]
) -> dict[str, Any]:
    new = {"id": f"{record['id']}-{suffix}", "user_input": record["user_input"]}
    new["retrieved_contexts"] = list(passages)
    for field in ("reference", "response"):
        if field in record:
            new[field] = record[field]
    return {"record": new, "shape": shape, "roles": roles}


def xquad_shapes(
    paragraphs: Sequence[Mapping[str, Any]], sentences: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The three shapes for XQuAD lists of paragraphs (``paragraphs``, the validation part's
    records of ``position_relevance.jsonl.gz``, in order; each its ``lang``), with
    ``sentences`` the records of ``short.jsonl.gz`` by id. A record's ``response`` is its
    answer span; it goes with each case (the EXPECTED ANSWER or the response, where asked)."""
    out: list[dict[str, Any]] = []
    by_lang: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in paragraphs:
        by_lang[r["lang"]].append(r)
    for lang, records in by_lang.items():
        for n, r in enumerate(records):
            tagged = _xquad_cases(r, records[n + 1 :] + records[:n], sentences)
            out += [{**c, "lang": lang, "kind": "encyclopedic"} for c in tagged]
    return out


def _xquad_cases(
    r: Mapping[str, Any],
    others: Sequence[Mapping[str, Any]],
    sentences: Mapping[str, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    roles = roles_of(r)
    out = [
        _case(r, f"alone{k}", [p], "alone", [role])
        for k, (p, role) in enumerate(zip(r["retrieved_contexts"], roles, strict=True))
    ]
    answer = r["retrieved_contexts"][roles.index("answer")]
    short = sentences.get("xquadshort-" + r["id"].removeprefix("xquad-"))
    if short is not None:
        sentence = short["retrieved_contexts"][roles_of(short).index("answer")]
        out.append(_case(r, "every", [answer, sentence], "every", ["answer", "answer"]))
    article = r["source"]["article"]
    elsewhere = [
        o["retrieved_contexts"][roles_of(o).index("answer")]
        for o in others
        if o["source"]["article"] != article
    ]
    if len(elsewhere) >= NONE_SIZE:
        out.append(_case(r, "none", elsewhere[:NONE_SIZE], "none", ["other"] * NONE_SIZE))
    return out


def contrast_shapes(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The three shapes for the contrast items (one answer passage and one about something
    else each), per kind of text."""
    items = list(items)
    out: list[dict[str, Any]] = []
    for n, r in enumerate(items):
        roles = roles_of(r)
        passages = r["retrieved_contexts"]
        cases = [
            _case(r, f"alone{k}", [p], "alone", [role])
            for k, (p, role) in enumerate(zip(passages, roles, strict=True))
        ]
        answer = passages[roles.index("answer")]
        cases.append(_case(r, "every", [answer, r["reference"]], "every", ["answer", "answer"]))
        kind = r["source"]["kind"]
        nxt = next((o for o in items[n + 1 :] + items[:n] if o["source"]["kind"] == kind), None)
        if nxt is not None:
            other = passages[roles.index("other")]
            theirs = nxt["retrieved_contexts"][roles_of(nxt).index("other")]
            cases.append(_case(r, "none", [other, theirs], "none", ["other", "other"]))
        out += [{**c, "lang": r["source"]["lang"], "kind": kind} for c in cases]
    return out


def as_asked(cases: Iterable[Mapping[str, Any]], field: str | None) -> list[dict[str, Any]]:
    """The cases, each record asking the QUESTION alone (``field`` None), with the expected
    answer (``"reference"``: the record's reference, else its response, the answer span), or
    with the response (``"response"``)."""
    out = []
    for c in cases:
        r = c["record"]
        record = {k: r[k] for k in ("id", "user_input", "retrieved_contexts")}
        if field is not None:
            record[field] = r.get(field) or r["response"]
        out.append({**c, "record": record})
    return out


def shape_lines(rows: Sequence[Mapping[str, Any]], key: str) -> list[list[str]]:
    """Per value of ``key`` (language or kind) and overall, over the rows of judged cases (one
    per passage: its ``shape``, ``role``, ``id`` and verdict ``relevant``): alone, the answer's
    passage judged relevant, another article's and the same article's not; where every passage
    answers, the passages judged relevant and the lists with none judged so; where none does,
    the passages judged not relevant and the lists with one judged relevant."""
    groups: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[r[key]].append(r)
    lines = []
    for name, rs in [*groups.items(), ("all", list(rows))]:
        alone = [r for r in rs if r["shape"] == "alone"]
        every = [r for r in rs if r["shape"] == "every"]
        none = [r for r in rs if r["shape"] == "none"]
        lines.append(
            [
                name,
                fraction([r["relevant"] for r in alone if r["role"] == "answer"]),
                fraction([not r["relevant"] for r in alone if r["role"] == "other"]),
                fraction([not r["relevant"] for r in alone if r["role"] == "same"]),
                fraction([r["relevant"] for r in every]),
                fraction([not any(v) for v in _per_list(every)]),
                fraction([not r["relevant"] for r in none]),
                fraction([any(v) for v in _per_list(none)]),
            ]
        )
    return lines


SHAPE_HEAD = (
    "alone: answer relevant",
    "alone: other not",
    "alone: same not",
    "every answers: relevant",
    "every answers: lists with none relevant",
    "none answers: not relevant",
    "none answers: lists with one relevant",
)


def _per_list(rows: Iterable[Mapping[str, Any]]) -> list[list[bool]]:
    """Each list's verdicts (relevant or not), by the case's id."""
    by_id: dict[str, list[bool]] = defaultdict(list)
    for r in rows:
        by_id[r["id"]].append(r["relevant"])
    return list(by_id.values())


def fraction(values: Sequence[bool]) -> str:
    """The share of true values, with the counts ("0.83 (5/6)"; "-" for none)."""
    if not values:
        return "-"
    return f"{sum(values) / len(values):.2f} ({sum(values)}/{len(values)})"
