"""fitting/convert.py: the dataset converters on small hand-written rows (no shared data)."""

from __future__ import annotations

import csv
import gzip
import json

import pyarrow as pa  # in [dev]: a missing pyarrow fails these tests, never skips them
import pyarrow.parquet as pq
import pytest
from benchmark_scripts import load

from localjudge.errors import InvalidItemError

convert = load("fitting/convert")


def _aligned(records, key_of):
    """Per piece, the source value (looked up by piece text) next to the labels."""
    return [
        (key_of[text], rel, lev)
        for r in records
        for text, rel, lev in zip(
            r["retrieved_contexts"], r["labels"]["relevant"], r["labels"]["levels"], strict=True
        )
    ]


# ------------------------------------------------------------------------- helpers


def test_truncate_keeps_short_text_and_cuts_long_text_on_a_word_boundary():
    assert convert.truncate("  short text \n") == "short text"
    text = "word " * 400
    cut = convert.truncate(text)
    assert len(cut) <= convert.MAX_PIECE_CHARS
    assert cut.endswith("word")
    assert text.startswith(cut)
    assert convert.truncate("x" * 2000) == "x" * convert.MAX_PIECE_CHARS
    assert convert.truncate("aaa bbb ccc", 9) == "aaa bbb"


def test_trec_grades_map_to_levels():
    assert [convert.trec_level(g) for g in (3, 2, 1, 0)] == ["high", "medium", "low", "none"]
    with pytest.raises(ValueError):
        convert.trec_level(4)


def test_golden_scores_map_to_levels():
    scores = [1.0, 0.8, 0.7, 0.5, 0.4, 0.3, 0.2]
    assert [convert.golden_level(s) for s in scores] == [
        "high",
        "high",
        "medium",
        "low",
        "low",
        "none",
        "none",
    ]


@pytest.mark.parametrize(
    ("key", "index"),
    [
        ("0a", 0),
        ("1b", 1),
        ("1b.", 1),
        ("10a", 10),
        ("12c", 12),
        (" 3d ", 3),
        ("general", None),
        ("supported_without_sentence", None),
        ("a1", None),
        ("7", None),
    ],
)
def test_ragbench_key_names_its_document(key, index):
    assert convert.doc_index(key) == index


def test_docs_with_keys_separates_one_and_two_digit_indices():
    assert convert.docs_with_keys(["10a", "10b", "general"], 11) == [False] * 10 + [True]
    assert convert.docs_with_keys(["1a"], 11) == [False, True] + [False] * 9


def test_balanced_counts_split_evenly_and_refill_from_larger_classes():
    assert convert.balanced_counts({"a": 10, "b": 10, "c": 10}, 6) == {"a": 2, "b": 2, "c": 2}
    assert convert.balanced_counts({"a": 1, "b": 10, "c": 10}, 9) == {"a": 1, "b": 4, "c": 4}
    assert convert.balanced_counts({"a": 1, "b": 2}, 10) == {"a": 1, "b": 2}
    assert sum(convert.balanced_counts({"a": 5, "b": 5, "c": 5}, 7).values()) == 7


def _valid():
    return {
        "id": "x",
        "user_input": "q?",
        "retrieved_contexts": ["a", "b"],
        "reference": "r",
        "response": "s",
        "labels": {"recall": 1.0, "relevant": [True, False], "levels": ["high", "none"]},
        "source": {"dataset": "t"},
    }


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"labels": {"relevant": [True]}}, ValueError),
        ({"labels": {"levels": ["high", "huge"]}}, ValueError),
        ({"labels": {"used": [1, 0]}}, ValueError),
        ({"labels": {"recall": 1.5}}, ValueError),
        ({"labels": {}}, ValueError),
        ({"retrieved_contexts": ["a", " "]}, ValueError),
        ({"retrieved_contexts": []}, InvalidItemError),
        ({"user_input": ""}, InvalidItemError),
        ({"reference": None}, InvalidItemError),
        ({"response": ""}, InvalidItemError),
    ],
)
def test_validate_rejects_records_a_metric_could_not_use(change, error):
    convert.validate(_valid())
    with pytest.raises(error):
        convert.validate({**_valid(), **change})


# ------------------------------------------------------------------------- llmjudge


def _ll(qid, pid, grade, passage, query=None):
    return {
        "qid": qid,
        "query": query or f"query {qid}",
        "pid": pid,
        "relevance": grade,
        "passage": passage,
    }


def test_llmjudge_single_passage_queries_give_exact_records():
    rows = [_ll("q2", "p9", 1, "related text"), _ll("q1", "p1", 3, "the answer " * 40)]
    records = convert.llmjudge_records(rows, pieces=5, per_query=1)
    assert records == [
        {
            "id": "llmjudge-q1-0",
            "user_input": "query q1",
            "retrieved_contexts": [("the answer " * 40).strip()],
            "response": convert.truncate("the answer " * 40, 300),
            "labels": {"relevant": [True], "levels": ["high"]},
            "source": {
                "dataset": "llmjudge-dl2023-dev",
                "qid": "q1",
                "pids": ["p1"],
                "grades": [3],
                "labels_by": "NIST assessors",
                "response_is_proxy": True,
                "response_from_piece": 0,
                "truncated": [],
            },
        },
        {
            "id": "llmjudge-q2-0",
            "user_input": "query q2",
            "retrieved_contexts": ["related text"],
            "response": "related text",
            "labels": {"relevant": [False], "levels": ["low"]},
            "source": {
                "dataset": "llmjudge-dl2023-dev",
                "qid": "q2",
                "pids": ["p9"],
                "grades": [1],
                "labels_by": "NIST assessors",
                "response_is_proxy": True,
                "response_from_piece": 0,
                "truncated": [],
            },
        },
    ]
    assert len(records[0]["response"]) <= 300


def _llmjudge_rows():
    rows = []
    for q in ("q1", "q2", "q10"):
        for n in range(12):
            grade = 0 if n < 7 else (1 if n < 9 else (2 if n < 11 else 3))
            rows.append(_ll(q, f"{q}p{n}", grade, f"{q} passage {n} grade {grade}"))
    return rows


def test_llmjudge_groups_by_query_mixes_grades_and_aligns_labels():
    rows = _llmjudge_rows()
    grade_of = {r["passage"]: r["relevance"] for r in rows}
    records = convert.llmjudge_records(rows, pieces=5, per_query=2, seed=3)
    assert [r["id"] for r in records] == [
        "llmjudge-q1-0",
        "llmjudge-q1-1",
        "llmjudge-q2-0",
        "llmjudge-q2-1",
        "llmjudge-q10-0",
        "llmjudge-q10-1",
    ]
    for r in records:
        qid = r["source"]["qid"]
        assert all(c.startswith(f"{qid} ") for c in r["retrieved_contexts"])
        assert len(r["retrieved_contexts"]) == 5 == len(set(r["retrieved_contexts"]))
        grades = [grade_of[c] for c in r["retrieved_contexts"]]
        assert grades == r["source"]["grades"]
        assert any(g >= 2 for g in grades)
        assert any(g <= 1 for g in grades)
        best = max(grades)
        assert r["response"] == r["retrieved_contexts"][grades.index(best)]
    for grade, relevant, level in _aligned(records, grade_of):
        assert relevant == (grade >= 2)
        assert level == convert.TREC_LEVELS[grade]
    # a query's items repeat passages only once a grade has no fresh ones (3 of grade >= 2 here)
    q1 = [set(r["retrieved_contexts"]) for r in records[:2]]
    assert all(grade_of[text] >= 2 for text in q1[0] & q1[1])


def test_llmjudge_ensures_a_relevant_and_an_irrelevant_piece_when_rare():
    rows = [_ll("q1", f"p{n}", 0, f"zero {n}") for n in range(30)]
    rows += [_ll("q1", "p99", 3, "the one good passage")]
    for seed in range(5):
        (record,) = convert.llmjudge_records(rows, pieces=4, per_query=1, seed=seed)
        assert "the one good passage" in record["retrieved_contexts"]
        assert record["response"] == "the one good passage"
        assert sorted(record["labels"]["levels"]) == ["high", "none", "none", "none"]


def test_llmjudge_limit_takes_items_round_robin_and_keeps_order():
    records = convert.llmjudge_records(_llmjudge_rows(), per_query=2, limit=4)
    assert [r["id"] for r in records] == [
        "llmjudge-q1-0",
        "llmjudge-q1-1",
        "llmjudge-q2-0",
        "llmjudge-q10-0",
    ]


def test_llmjudge_is_deterministic_for_a_seed():
    rows = _llmjudge_rows()
    first = convert.llmjudge_records(rows, seed=7)
    assert first == convert.llmjudge_records(list(reversed(rows)), seed=7)
    assert first != convert.llmjudge_records(rows, seed=8)


# ------------------------------------------------------------------------- wice


def test_wice_pieces_group_five_consecutive_sentences_and_drop_blanks():
    sentences = [f"S{n}." for n in range(12)]
    sentences[3] = "  "
    assert convert.wice_pieces(sentences) == [
        "S0. S1. S2. S4. S5.",
        "S6. S7. S8. S9. S10.",
        "S11.",
    ]


def test_wice_pieces_stay_within_the_piece_limit_without_cutting_evidence():
    sentences = ["a" * 700, "b" * 700, "c" * 10]
    assert convert.wice_pieces(sentences) == ["a" * 700, "b" * 700 + " " + "c" * 10]


def _wice(
    label, claim_id, claim="Paris is in France.", evidence=("Paris is a city.", "In France.")
):
    return {"label": label, "claim": claim, "evidence": list(evidence), "meta": {"id": claim_id}}


def test_wice_labels_map_to_recall_in_exact_records():
    rows = [
        _wice("supported", "dev1", evidence=("", "Paris is a city.", "It is in France.")),
        _wice("partially_supported", "dev1"),
        _wice("not_supported", "dev2", claim="Lyon is big."),
    ]
    records = convert.wice_records(rows)
    assert [r["labels"] for r in records] == [{"recall": 1.0}, {"recall": 0.5}, {"recall": 0.0}]
    assert records[0] == {
        "id": "wice-dev1-0",
        "user_input": "What do the sources say about the following claim? Paris is in France.",
        "retrieved_contexts": ["Paris is a city. It is in France."],
        "reference": "Paris is in France.",
        "labels": {"recall": 1.0},
        "source": {
            "dataset": "wice-dev-oracle-chunks",
            "claim_id": "dev1",
            "chunk": 0,
            "row": 0,
            "label": "supported",
            "labels_by": "human annotators",
            "evidence_idx": [],
            "oracle_idx": [],
        },
    }
    assert [r["id"] for r in records] == ["wice-dev1-0", "wice-dev1-1", "wice-dev2-0"]
    assert "response" not in records[0]


def _wice_rows():
    rows = []
    for n in range(30):
        label = ("supported", "partially_supported", "not_supported")[n % 3]
        rows.extend(_wice(label, f"dev{n:02d}", evidence=(f"E{n} {c}.",)) for c in range(2))
    return rows


def test_wice_limit_balances_labels_one_row_per_claim_in_file_order():
    records = convert.wice_records(_wice_rows(), limit=9, seed=1)
    assert len(records) == 9
    labels = [r["labels"]["recall"] for r in records]
    assert sorted(labels) == [0.0] * 3 + [0.5] * 3 + [1.0] * 3
    assert len({r["source"]["claim_id"] for r in records}) == 9
    rows_no = [r["source"]["row"] for r in records]
    assert rows_no == sorted(rows_no)


def test_wice_sample_is_deterministic_for_a_seed():
    rows = _wice_rows()
    assert convert.wice_records(rows, limit=6, seed=2) == convert.wice_records(
        rows, limit=6, seed=2
    )


# ------------------------------------------------------------------------- trulens


def _ms(query, passage, score, row):
    return {"query": query, "expected_response": passage, "expected_score": score, "_row": row}


def test_trulens_msmarco_groups_by_query_and_drops_contradicting_pairs():
    rows = [
        _ms("q one", "the right passage", "1", 0),
        _ms("q one", "a wrong passage", "0", 1),
        _ms("q two", "same text", "1", 2),
        _ms("q two", "same text", "0", 3),
        _ms("q three", "good", "1", 4),
        _ms("q three", "bad", "0", 5),
    ]
    records = convert.trulens_msmarco_records(rows, seed=0)
    assert [r["id"] for r in records] == ["trulens-msmarco-000", "trulens-msmarco-002"]
    first = records[0]
    label_of = {"the right passage": True, "a wrong passage": False}
    assert sorted(first["retrieved_contexts"]) == sorted(label_of)
    assert first["labels"] == {"relevant": [label_of[c] for c in first["retrieved_contexts"]]}
    assert first["response"] == "the right passage"
    assert first["source"]["response_is_proxy"] is True
    assert first["source"]["rows"] == [
        {"the right passage": 0, "a wrong passage": 1}[c] for c in first["retrieved_contexts"]
    ]


def test_trulens_msmarco_limit_is_seeded_and_ordered():
    rows = []
    for q in range(20):
        rows += [_ms(f"q{q}", f"pos {q}", "1", 2 * q), _ms(f"q{q}", f"neg {q}", "0", 2 * q + 1)]
    a = convert.trulens_msmarco_records(rows, limit=5, seed=4)
    assert a == convert.trulens_msmarco_records(rows, limit=5, seed=4)
    assert len(a) == 5
    assert [r["id"] for r in a] == sorted(r["id"] for r in a)


def test_trulens_golden_groups_maps_levels_and_drops_refusals():
    rows = [
        {"query": "Q1", "context": "weak", "expected_score": 0.4, "_row": 0},
        {"query": "Q2", "context": "I'm really sorry, but I can't assist.", "expected_score": 1},
        {"query": "Q1", "context": "strong", "expected_score": 0.8, "_row": 2},
        {"query": "Q3", "context": "off topic", "expected_score": 0.2, "_row": 3},
        {"query": "Q3", "context": "fair", "expected_score": 0.7, "_row": 4},
    ]
    records = convert.trulens_golden_records(rows)
    assert [r["user_input"] for r in records] == ["Q1", "Q3"]
    assert records[0]["retrieved_contexts"] == ["weak", "strong"]
    assert records[0]["labels"] == {"relevant": [False, True], "levels": ["low", "high"]}
    assert records[0]["response"] == "strong"
    assert records[0]["source"]["rows"] == [0, 2]
    assert records[1]["labels"] == {"relevant": [False, True], "levels": ["none", "medium"]}
    assert records[1]["response"] == "fair"
    kept = convert.trulens_golden_records(rows, drop_refusals=False)
    assert [r["user_input"] for r in kept] == ["Q1", "Q2", "Q3"]
    assert kept[1]["labels"]["levels"] == ["high"]


# ------------------------------------------------------------------------- ragbench


def _rb(n_docs, relevant, utilized, **extra):
    docs = [f"Document {i} text." for i in range(n_docs)]
    row = {
        "id": "42",
        "question": "What is it?",
        "documents": docs,
        "response": "It is a thing.",
        "documents_sentences": [[[f"{i}a", d]] for i, d in enumerate(docs)],
        "all_relevant_sentence_keys": relevant,
        "all_utilized_sentence_keys": utilized,
        "annotating_model_name": "gpt-4o",
        "generation_model_name": "some-llm",
    }
    row.update(extra)
    return row


def test_ragbench_record_parses_keys_into_per_document_labels():
    row = _rb(3, ["0a", "2b.", "general"], ["2b"])
    assert convert.ragbench_record(row, "covidqa", 5) == {
        "id": "ragbench-covidqa-5",
        "user_input": "What is it?",
        "retrieved_contexts": ["Document 0 text.", "Document 1 text.", "Document 2 text."],
        "response": "It is a thing.",
        "labels": {"relevant": [True, False, True], "used": [False, False, True]},
        "source": {
            "dataset": "ragbench-covidqa-test",
            "row_id": "42",
            "row": 5,
            "labels_by": "gpt-4o (an LLM, not people)",
            "response_by": "some-llm",
            "documents_total": 3,
            "truncated": [],
        },
    }


def test_ragbench_two_digit_document_indices(monkeypatch):
    monkeypatch.setattr(convert, "RAGBENCH_MAX_DOCS", 12)
    row = _rb(12, ["10a", "1c"], ["11b"])
    record = convert.ragbench_record(row, "hagrid", 0)
    relevant = record["labels"]["relevant"]
    assert [i for i, v in enumerate(relevant) if v] == [1, 10]
    assert [i for i, v in enumerate(record["labels"]["used"]) if v] == [11]
    assert len(relevant) == len(record["retrieved_contexts"]) == 12


def test_ragbench_keeps_the_first_documents_only():
    row = _rb(10, ["9a", "0a"], ["9a"])
    record = convert.ragbench_record(row, "msmarco", 0)
    assert len(record["retrieved_contexts"]) == convert.RAGBENCH_MAX_DOCS
    assert record["labels"]["relevant"] == [True] + [False] * 7
    assert record["labels"]["used"] == [False] * 8
    assert record["source"]["documents_total"] == 10


def test_ragbench_long_document_keeps_leading_sentences_and_their_labels():
    sentences = [["0a", "A" * 500 + "."], ["0b", "B" * 500 + "."], ["0c", "C" * 500 + "."]]
    row = _rb(
        1,
        ["0c"],
        ["0a"],
        documents=[" ".join(s for _, s in sentences)],
        documents_sentences=[sentences],
    )
    record = convert.ragbench_record(row, "expertqa", 0)
    assert record["retrieved_contexts"] == ["A" * 500 + ". " + "B" * 500 + "."]
    assert record["labels"] == {"relevant": [False], "used": [True]}
    assert record["source"]["truncated"] == [0]


def test_ragbench_record_skips_rows_without_documents_or_response():
    assert convert.ragbench_record(_rb(0, [], []), "x", 0) is None
    assert convert.ragbench_record(_rb(2, [], [], response=" "), "x", 0) is None


def test_ragbench_records_sample_per_subset_or_in_total_deterministically():
    subsets = {
        "b": [_rb(2, ["0a"], []) for _ in range(10)],
        "a": [_rb(2, ["1a"], ["1a"]) for _ in range(10)],
    }
    per = convert.ragbench_records(subsets, limit=3, seed=1)
    assert [r["source"]["dataset"] for r in per] == ["ragbench-a-test"] * 3 + [
        "ragbench-b-test"
    ] * 3
    assert per == convert.ragbench_records(subsets, limit=3, seed=1)
    total = convert.ragbench_records(subsets, total=5, seed=1)
    assert [r["source"]["dataset"] for r in total] == ["ragbench-a-test"] * 3 + [
        "ragbench-b-test"
    ] * 2
    rows_a = [r["source"]["row"] for r in total[:3]]
    assert rows_a == sorted(rows_a)
    assert len(convert.ragbench_records(subsets)) == 20


# ------------------------------------------------------------------------- CLI end to end


def _write_sources(src):
    with gzip.open(src / "llmjudge-dl2023-dev.jsonl.gz", "wt", encoding="utf-8") as f:
        for row in _llmjudge_rows():
            f.write(json.dumps(row) + "\n")
    (src / "wice-dev").mkdir()
    (src / "wice-dev" / "oracle_chunks_claim_dev.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in _wice_rows()), encoding="utf-8"
    )
    (src / "trulens").mkdir()
    with (src / "trulens" / "ms_marco_hard_neg_balanced.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["query", "expected_response", "expected_score"])
        for q in range(4):
            writer.writerows([[f"q{q}", f"pos {q}", "1"], [f"q{q}", f"neg {q}", "0"]])
    (src / "trulens" / "context_relevance_golden_set.json").write_text(
        json.dumps([{"query": "Q", "context": "C", "expected_score": 0.8}]), encoding="utf-8"
    )


def test_main_writes_every_dataset_and_a_gitignore(tmp_path, capsys):
    src = tmp_path / "src"
    src.mkdir()
    _write_sources(src)
    (src / "ragbench").mkdir()
    rows = [_rb(3, ["0a"], ["0a"]) for _ in range(6)]
    pq.write_table(pa.Table.from_pylist(rows), src / "ragbench" / "covidqa-test.parquet")
    out = tmp_path / "out"
    assert convert.main(["all", "--src", str(src), "-o", str(out), "--limit", "4"]) == 0
    assert (out / ".gitignore").read_text() == "*.jsonl\n!.gitignore\n"
    counts = {}
    for name in ("llmjudge", "wice", "trulens-msmarco", "trulens-golden", "ragbench"):
        lines = (out / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
        for line in lines:
            convert.validate(json.loads(line))
        counts[name] = len(lines)
    assert counts == {
        "llmjudge": 4,
        "wice": 4,
        "trulens-msmarco": 4,
        "trulens-golden": 1,
        "ragbench": 4,
    }
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 5
    assert printed[0].startswith("llmjudge: 4 items")
