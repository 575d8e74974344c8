"""``fitting/compare.py``: two protocols' rows of one judge side by side, each fitted by the
build's rule, their verdicts on the same validation decisions paired; and the readings the
amended rule gives a protocol-2 support decision (``build.with_passage_readings``)."""

from __future__ import annotations

import copy
import re

from benchmark_scripts import load
from test_build import make_rows, write_judge

from localjudge.metrics.protocols import UNNAMED, protocol_ref

build = load("fitting/build")
compare = load("fitting/compare")


def _rows(kind, readings, piece=0, source="xquad"):
    return {
        "source": source,
        "id": "l1",
        "piece": piece,
        "kind": kind,
        "readings": dict(readings),
    }


def test_a_support_decision_takes_the_question_readings_of_its_own_passage():
    found = [
        _rows("position.relevant", {"judged": 1.0, "question": 0.5, "question_alone": -2.0}),
        _rows("position.relevant", {"judged": 2.0, "question": 0.9, "question_alone": -2.0}, 1),
        _rows("position.relevant_answer", {"judged": -1.0}, piece=1),
        _rows("position.relevant_answer", {"judged": -3.0}, piece=2),  # no reading of its own
        _rows("position.relevant_answer", {"judged": -4.0}, source="xquadshort"),
    ]
    before = copy.deepcopy(found)
    for protocol in ("1", "3"):  # their support decisions read the QUESTION themselves
        assert build.with_passage_readings(found, protocol) is found
    joined = build.with_passage_readings(found, "2")
    assert found == before  # the rows read are not changed
    assert joined[2]["readings"] == {"judged": -1.0, "question": 0.9, "question_alone": -2.0}
    assert joined[3]["readings"] == {"judged": -3.0}  # passage 2 has no question-alone row
    assert joined[4]["readings"] == {"judged": -4.0}  # another source's list is another list
    assert joined[:2] == found[:2]


def _table(tmp_path, first_rows, second_rows):
    roots = {"1": tmp_path / "p1", "2": tmp_path / "p2"}
    write_judge(roots["1"], "j", first_rows, "a" * 64, protocol=UNNAMED)
    write_judge(roots["2"], "j", second_rows, "a" * 64, protocol=protocol_ref("2"))
    return compare.compare("j", "1", "2", roots)


def _cells(lines, kind, source):
    line = next(x for x in lines if x.startswith(f"| `{kind}` | {source} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_the_same_rows_under_two_protocols_decide_alike(tmp_path):
    found = make_rows(signal=0.9, units=12)
    lines = _table(tmp_path, found, found)
    for kind, sources in compare.KIND_SOURCES.items():
        for source in sources:
            cells = _cells(lines, kind, source)
            assert cells[3] == cells[4], cells
            assert cells[5] == "+0.000 [+0.000, +0.000]", cells


def test_a_protocol_that_reads_noise_is_worse_beyond_its_interval(tmp_path):
    lines = _table(
        tmp_path, make_rows(signal=0.9, units=12), make_rows(signal=0.0, seed=3, units=12)
    )
    cells = _cells(lines, "position.relevant", "xquad")
    value, low, high = (float(x) for x in re.findall(r"[+-]\d\.\d+", cells[5]))
    assert value < 0
    assert high < 0
    assert low <= value
    assert float(cells[4]) < float(cells[3])
    assert re.search(r"answer \d\.\d\d -> \d\.\d\d; same", cells[6])
    grade = _cells(lines, "relevance.grade", "xquad")[6]
    assert "levels none/low/medium/high: people 0.33/0.33/0.00/0.33" in grade


def test_a_kind_with_a_source_missing_is_not_compared(tmp_path):
    found = make_rows(signal=0.9, units=12)
    lines = _table(tmp_path, found, [r for r in found if r["source"] != "wice"])
    assert "| `recall.supported` | not compared: protocol 2 has no wice rows |" in "\n".join(lines)
    assert _cells(lines, "position.relevant", "xquad")[5] == "+0.000 [+0.000, +0.000]"
