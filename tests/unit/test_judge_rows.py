"""``fitting/judge.py``: the judged rows of a list are the product's own calls read through the
decisions core, one row per decision, labelled from the source, with the log-probabilities the
readings are made of."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from benchmark_scripts import load

from localjudge.metrics.instructions import NO_PASSAGE
from localjudge.metrics.protocols import current_protocol
from localjudge.testing import ScriptedJudge, prompt_data

judge = load("fitting/judge")

PASSAGES = [
    "Paris is the capital and largest city of France.",
    "The Nile flows north through eleven countries.",
    "Tokyo has the largest metropolitan economy.",
]


def reply(messages: list[dict[str, str]], schema: type[Any]) -> Any:
    passage = prompt_data(messages).get("PASSAGE", "")
    yes = "Paris" in passage
    name = schema.__name__
    if name == "GradeDecision":
        return {"grade": 3 if yes else 0}
    key = "supported" if name == "SupportedDecision" else "relevant"
    return {key: "yes" if yes else "no"}


def read(messages: list[dict[str, str]], span: str) -> float:
    """The QUESTION reads best after the passage that answers it, worst after none."""
    passage = prompt_data(messages).get("PASSAGE", "")
    if passage == NO_PASSAGE:
        return -4.0
    return -1.0 if "Paris" in passage else -3.0 + 0.1 * len(passage.split())


def xquad_list() -> dict[str, Any]:
    return {
        "source": "xquad",
        "id": "xquad-en-1",
        "unit": "France",
        "lang": "en",
        "question": "What is the capital of France?",
        "passages": PASSAGES,
        "relevant": ["1", "0", "0"],
        "grades": ["3", "0", "1"],
        "answer": "Paris",
        "part": "choice",
    }


@pytest.fixture(scope="module")
def found() -> list[dict[str, Any]]:
    return judge.judge_rows([xquad_list()], ScriptedJudge(reply, certain=True, reading=read))


def test_one_row_per_decision_labelled_from_the_source(found):
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for row in found:
        by_kind.setdefault(row["kind"], []).append(row)
    assert set(by_kind) == {"position.relevant", "position.relevant_answer", "relevance.grade"}
    for kind, rows in by_kind.items():
        assert [r["piece"] for r in rows] == [0, 1, 2], kind
        assert [r["role"] for r in rows] == ["answer", "other", "same"], kind
    assert [r["label"] for r in by_kind["position.relevant"]] == [1, 0, 0]
    assert [r["label"] for r in by_kind["relevance.grade"]] == [3, 0, 1]
    assert [r["soft"] for r in by_kind["position.relevant"]] == [1.0, 0.0, 0.0]
    assert {(r["unit"], r["part"], r["lang"]) for r in found} == {("France", "choice", "en")}


def test_the_raw_log_probabilities_make_the_readings(found):
    position = [r for r in found if r["kind"] == "position.relevant"]
    means = [r["raw"]["read"][0] / r["raw"]["read"][1] for r in position]
    assert means[0] == pytest.approx(-1.0)
    for row, mean in zip(position, means, strict=True):
        logprob, tokens = row["raw"]["alone"]
        assert logprob / tokens == pytest.approx(-4.0)
        assert row["readings"]["question"] == pytest.approx(mean + 4.0)
        assert row["readings"]["question_alone"] == pytest.approx(-4.0)


def test_judge_json_names_the_protocol_the_rows_are_judged_under(tmp_path):
    meta = judge.judge_meta(tmp_path, "j", "a" * 64, ["xquad"], overwrite=False)
    assert meta == {
        "alias": "j",
        "sha256": "a" * 64,
        "reasons": False,
        "protocol": current_protocol().as_json(),
    }


def test_rows_kept_from_another_protocol_are_refused(tmp_path):
    other = {"name": "1", "fingerprint": "ab" * 32}
    meta = {"alias": "j", "sha256": "a" * 64, "reasons": False, "protocol": other}
    (tmp_path / "judge.json").write_text(json.dumps(meta), "utf-8")
    (tmp_path / "wice.jsonl.gz").write_bytes(b"")
    (tmp_path / "xquad.jsonl.gz").write_bytes(b"")
    with pytest.raises(SystemExit, match=r"wice were judged under protocol 1 \(abababababab\)"):
        judge.judge_meta(tmp_path, "j", "a" * 64, ["xquad"], overwrite=True)
    with pytest.raises(SystemExit, match=re.escape(str(current_protocol()))):
        judge.judge_meta(tmp_path, "j", "a" * 64, ["xquad", "wice"], overwrite=False)
    # judged again, every source: one protocol in the folder
    done = judge.judge_meta(tmp_path, "j", "a" * 64, ["xquad", "wice"], overwrite=True)
    assert done["protocol"] == current_protocol().as_json()
