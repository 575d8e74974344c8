"""fitting/common.py: the halves, the product's passage calls and kappa the fits share."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from benchmark_scripts import load

common = load("fitting/common")


def test_halves_are_the_first_half_of_the_groups_in_sha256_order() -> None:
    groups = [f"q{n}" for n in range(25)]
    half = common.half_of([*groups, *groups])  # repeats count once
    assert sorted(half) == sorted(groups)
    assert sum(h == "A" for h in half.values()) == 12
    assert common.half_of(reversed(groups)) == half  # the order given does not matter


def test_the_passage_calls_are_the_products_and_the_answer_adds_its_phrasing() -> None:
    passages = ["Neil Armstrong walked on the Moon in 1969.", "Paris is in France."]
    asks = common.passage_asks("Who first walked on the Moon?", passages)
    kinds = [a.decision.kind if a.decision else None for a in asks if not a.baseline]
    # position's baseline and the grade's: one request, which the product asks once
    assert sum(a.baseline for a in asks) == 2
    assert kinds == ["position.relevant"] * 2 + ["relevance.grade"] * 2
    with_answer = common.passage_asks("Who first walked on the Moon?", passages, "Armstrong")
    assert len(with_answer) == len(asks) + 2
    assert {a.decision.kind for a in with_answer[len(asks) :]} == {"position.relevant_answer"}


def test_kappa_is_none_where_it_says_nothing_and_weights_grades() -> None:
    assert common.kappa([1, 1, 1], [1, 1, 1], graded=False) is None
    assert common.kappa([0, 1, 0, 1], [0, 1, 0, 1], graded=False) == 1.0
    near = common.kappa([0, 1, 2, 3], [0, 1, 2, 2], graded=True)
    far = common.kappa([0, 1, 2, 3], [0, 1, 2, 0], graded=True)
    assert near is not None
    assert far is not None
    assert near > far


def test_read_jsonl_reads_plain_and_gzipped_files(tmp_path: Path) -> None:
    rows = [{"id": 1}, {"id": 2}]
    text = "\n".join(json.dumps(r) for r in rows) + "\n\n"
    (tmp_path / "a.jsonl").write_text(text, "utf-8")
    with gzip.open(tmp_path / "a.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(text)
    assert common.read_jsonl(tmp_path / "a.jsonl") == rows
    assert common.read_jsonl(tmp_path / "a.jsonl.gz") == rows


def test_rows_and_their_digest_follow_folder_and_name_order(tmp_path: Path) -> None:
    import hashlib  # noqa: PLC0415

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "y.json").write_text('[{"n": 2}]'), (a / "x.json").write_text('[{"n": 1}]')
    (b / "z.json").write_text('[{"n": 3}]'), (b / "notes.txt").write_text("not rows")
    assert [r["n"] for r in common.load_rows(a)] == [1, 2]
    expected = hashlib.sha256(b'[{"n": 1}][{"n": 2}][{"n": 3}]').hexdigest()
    assert common.rows_digest(a, b) == expected
    assert common.rows_digest(b, a) != expected


def test_judge_each_writes_each_job_once_and_skips_what_only_leaves_out(tmp_path: Path) -> None:
    calls: list[str] = []

    def job(name: str) -> list[dict[str, str]]:
        calls.append(name)
        return [{"job": name}]

    jobs = {n: (lambda n=n: job(n)) for n in ("a", "b", "c")}
    common.judge_each(tmp_path / "rows", jobs, ["a", "b"])
    assert calls == ["a", "b"]
    assert json.loads((tmp_path / "rows" / "a.json").read_text("utf-8")) == [{"job": "a"}]
    assert not (tmp_path / "rows" / "c.json").exists()
    common.judge_each(tmp_path / "rows", jobs)  # a stopped run resumes: only c is judged
    assert calls == ["a", "b", "c"]
