"""localjudge.run.report.junit: any ids, reasons and messages give a file a real JUnit parser
reads with the right counts; the write is whole or nothing."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from hypothesis import given
from hypothesis import strategies as st
from junitparser import Error, Failure, JUnitXml, Skipped

from localjudge.run.report.junit import RUN_SUITE, junit_xml, write_junit

# any text, control characters and lone surrogates included (a JSON file can hold them)
TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=12) | st.sampled_from(
    ["\x00", "\x1b[31m", "\ud800", "]]>", "<script>&amp;", "\r\n"]
)
ROW = st.fixed_dictionaries(
    {
        "id": TEXT,
        "metric": st.sampled_from(["recall", "position"]),
        "score": st.none() | st.floats(0, 1),
        "seconds": st.none() | st.floats(0, 100),
        "error": st.none() | st.fixed_dictionaries({"kind": TEXT, "message": TEXT, "hint": TEXT}),
        "reason": st.none() | TEXT,
    }
)


def kind(row: dict, threshold: float) -> type | None:
    if row["error"] is not None:
        return Error
    if row["score"] is None:
        return Skipped
    return Failure if row["score"] < threshold else None


@given(rows=st.lists(ROW, max_size=8), threshold=st.floats(0, 1), stopped=st.none() | TEXT)
def test_any_rows_parse_with_the_right_counts(tmp_path_factory, rows, threshold, stopped):
    path = tmp_path_factory.mktemp("j") / "junit.xml"
    root = junit_xml(
        rows, metrics=["recall"], fail_under={"recall": threshold}, properties={"model": "m\x07"},
        stopped=stopped,
    )  # fmt: skip
    write_junit(path, root)
    xml = JUnitXml.fromfile(str(path))
    got = {suite.name: suite for suite in xml}
    expected_names = ["localjudge.recall"] + (["localjudge.position"] if any(
        r["metric"] == "position" for r in rows) else [])  # fmt: skip
    assert list(got) == expected_names + ([RUN_SUITE] if stopped is not None else [])
    for metric in ("recall", "position"):
        mine = [r for r in rows if r["metric"] == metric]
        if not mine:
            continue
        suite = got[f"localjudge.{metric}"]
        held = threshold if metric == "recall" else -1.0  # no threshold: nothing fails
        kinds = [kind(r, held) for r in mine]
        assert suite.tests == len(mine)
        assert suite.failures == kinds.count(Failure)
        assert suite.errors == kinds.count(Error)
        assert suite.skipped == kinds.count(Skipped)
        cases = list(suite)
        assert [type(c.result[0]) if c.result else None for c in cases] == kinds
        for case, row in zip(cases, mine, strict=True):
            if row["id"].isprintable() and row["id"].strip() == row["id"]:
                assert case.name == row["id"]
    assert xml.tests == len(rows) + (stopped is not None)
    assert xml.errors == sum(r["error"] is not None for r in rows) + (stopped is not None)


def test_the_write_is_whole_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "junit.xml"
    write_junit(path, junit_xml([], metrics=["recall"]))
    before = path.read_bytes()

    def torn(self, file, **kwargs):
        file.write(b"<?xml version='1.0'?><testsuites><testsu")
        raise OSError("the disk went away")

    monkeypatch.setattr(ET.ElementTree, "write", torn)
    with pytest.raises(OSError, match="went away"):
        write_junit(path, junit_xml([{"id": "a", "metric": "recall", "score": 1.0}]))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junit.xml"]  # no temporary left
