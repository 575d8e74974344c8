"""``fitting/carry.py``: a row judged under an earlier protocol stands for a later one's only
where the later one asks that decision by the same request (and the same baseline); the rows
come, in the order ``judge.py`` writes them, from the newest such protocol, their readings made
again from what the judge answered."""

from __future__ import annotations

import json

import pytest
from benchmark_scripts import ROOT, load

from localjudge.metrics.base import PROTOCOL_NAMES

carry = load("fitting/carry")
row_files = load("fitting/row_files")

LIST = {
    "source": "xquad",
    "id": "xquad-l1",
    "unit": "article",
    "part": "choice",
    "lang": "en",
    "question": "Which is the highest mountain in Japan?",
    "passages": ["Mount Fuji is Japan's highest mountain.", "Tokyo is Japan's capital."],
    "answer": "Mount Fuji",
    "grades": [3, 1],
    "relevant": [1, 0],
}
KINDS = ("position.relevant", "relevance.grade", "position.relevant_answer")


def _found(*protocols: str, drop: tuple = ()) -> dict:
    """Rows of every kind of LIST judged under each of ``protocols``, each naming its own."""
    return {
        p: {
            (LIST["id"], piece, kind): {
                "kind": kind,
                "piece": piece,
                "from": p,
                "soft": 0.75,
                "readings": {"retired": 1.0},
                "raw": {"read": [-6.0, 3], "alone": [-9.0, 3]},
            }
            for kind in KINDS
            for piece in range(2)
            if (p, piece, kind) not in drop
        }
        for p in protocols
    }


def test_each_row_comes_from_the_newest_protocol_that_asked_it_alike():
    rows, kinds = carry.carry_source("xquad", [LIST], "3", _found("1", "2"))
    # protocol 3 asks position alone and the grade as protocol 2 did, the answer as protocol 1
    assert kinds == {
        "position.relevant": "2",
        "position.relevant_answer": "1",
        "relevance.grade": "2",
    }
    for r in rows:  # the readings judge.py makes today, from the soft value and raw readings
        judged = r["soft"] if r["kind"] == "relevance.grade" else pytest.approx(1.0986, abs=1e-4)
        assert r["readings"] == {"judged": judged, "question": 1.0, "question_alone": -3.0}
    assert [(r["kind"], r["piece"], r["from"]) for r in rows] == [
        ("position.relevant", 0, "2"),
        ("position.relevant", 1, "2"),
        ("relevance.grade", 0, "2"),
        ("relevance.grade", 1, "2"),
        ("position.relevant_answer", 0, "1"),
        ("position.relevant_answer", 1, "1"),
    ]


def test_a_row_that_no_earlier_protocol_asked_alike_is_not_carried():
    # protocol 1 asked position alone in other words, so its row does not stand for protocol 3's
    with pytest.raises(SystemExit, match=r"xquad-l1 piece 1 position\.relevant: no protocol"):
        carry.carry_source("xquad", [LIST], "3", _found("1", "2", drop=(("2", 1, KINDS[0]),)))
    with pytest.raises(SystemExit, match=r"position\.relevant_answer"):
        carry.carry_source("xquad", [LIST], "3", _found("2"))  # protocol 2 read the answer first


def test_protocol_2_carries_nothing_of_protocol_1_that_it_asks_otherwise():
    with pytest.raises(SystemExit, match=r"position\.relevant: no protocol before 2"):
        carry.carry_source("xquad", [LIST], "2", _found("1"))


def test_every_later_protocols_rows_name_it_and_say_where_carried_rows_came_from():
    folders = sorted(ROOT.glob("fitting/rows-p*/*/judge.json"))
    assert folders  # protocol 2's judged rows and protocol 3's carried ones
    for meta_path in folders:
        meta = json.loads(meta_path.read_text("utf-8"))
        protocol = row_files.protocol_of(meta, meta_path.parent)  # a known one, or refused
        assert meta_path.parts[-3] == f"rows-p{protocol.name}"
        sources = {p.name.removesuffix(".jsonl.gz") for p in meta_path.parent.glob("*.jsonl.gz")}
        carried = meta.get("carried", {})
        assert set(carried) <= sources
        for kinds in carried.values():
            assert set(kinds.values()) <= set(PROTOCOL_NAMES[: PROTOCOL_NAMES.index(protocol.name)])
