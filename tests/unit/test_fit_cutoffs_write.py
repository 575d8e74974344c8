"""The fits' ``--write`` (``fitting/common.py``'s ``write_cutoffs``, which ``fit_cutoffs.py``,
``fit_combinations.py`` and ``fit_sources.py`` call): only the registry's ``cutoffs`` object
changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmark_scripts import load

from localjudge.decisions import Cutoffs

SHIPPED = Path(__file__).resolve().parents[2] / "localjudge" / "judge" / "models" / "registry.json"

common = load("fitting/common")


def _outside_cutoffs(text: str) -> str:
    """The registry's text with its cutoffs object's value cut out."""
    key = '"cutoffs": '
    start = text.index(key) + len(key)
    _, length = json.JSONDecoder().raw_decode(text[start:])
    return text[:start] + text[start + length :]


def test_writing_cutoffs_changes_only_the_cutoffs_object(tmp_path: Path) -> None:
    registry = tmp_path / "registry.json"
    before = SHIPPED.read_text("utf-8")
    registry.write_text(before, "utf-8")
    values = {"recall.supported": 0.25, "relevance.grade": [1.0, 2.0, 2.5]}
    entry = {"values": values, "source": "a test"}
    common.write_cutoffs(registry, "f" * 64, entry)
    after = registry.read_text("utf-8")
    assert _outside_cutoffs(after) == _outside_cutoffs(before)  # the judges, byte for byte
    table = json.loads(after)["cutoffs"]
    assert table["f" * 64] == entry
    for sha, old in json.loads(before)["cutoffs"].items():  # the others kept
        assert table[sha] == old
    # what the product reads back
    assert Cutoffs.from_json(table["f" * 64]["values"]).values["relevance.grade"] == (1, 2, 2.5)


def test_writing_cutoffs_into_a_registry_without_any(tmp_path: Path) -> None:
    registry = tmp_path / "registry.json"
    registry.write_text('{\n  "format": 1,\n  "judges": []\n}\n', "utf-8")
    common.write_cutoffs(registry, "e" * 64, {"values": {}, "source": "none shipped"})
    data = json.loads(registry.read_text("utf-8"))
    assert data == {
        "cutoffs": {"e" * 64: {"values": {}, "source": "none shipped"}},
        "format": 1,
        "judges": [],
    }


def test_writing_goes_through_a_temporary_file(tmp_path: Path, monkeypatch) -> None:
    registry = tmp_path / "registry.json"
    registry.write_text('{\n  "format": 1,\n  "judges": []\n}\n', "utf-8")
    before = registry.read_text("utf-8")
    written: list[Path] = []
    real = Path.write_text

    def failing(self: Path, *args: object, **kwargs: object) -> int:
        written.append(self)
        real(self, "{ half", "utf-8")
        raise OSError("disk full")

    monkeypatch.setattr(Path, "write_text", failing)
    with pytest.raises(OSError, match="disk full"):
        common.write_cutoffs(registry, "e" * 64, {"values": {}})
    monkeypatch.undo()
    assert registry.read_text("utf-8") == before  # the package data is never half written
    assert written
    assert registry not in written
    common.write_cutoffs(registry, "e" * 64, {"values": {}})
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != written[0].name) == [
        "registry.json"
    ]


def test_the_shipped_cutoffs_read_back_with_a_provenance_per_kind_and_no_machine_paths() -> None:
    from localjudge.decisions import builtin_cutoffs  # noqa: PLC0415

    table = json.loads(SHIPPED.read_text("utf-8"))["cutoffs"]
    assert table
    for sha, entry in table.items():
        cutoffs = builtin_cutoffs(sha)  # every value is a known kind, in range
        assert set(entry["sources"]) == set(cutoffs.values), sha
        for kind in cutoffs.values:
            source = cutoffs.source(kind)
            assert source.origin == "built-in"
            assert source.file
            assert "/" not in source.file
            assert len(source.sha256) == 64
            assert source.heldout["difference_ci95"][0] > 0  # the rule it shipped under
        for kind, evidence in entry.get("not_shipped", {}).items():
            assert kind not in cutoffs.values
            # not shipped: no gain, or (fit_sources.py's rule) a gain that failed another of
            # its conditions, named in ``why``
            ci, why = evidence["difference_ci95"], evidence.get("why") or {}
            assert ci is None or ci[0] <= 0 or (why and not all(why.values())), (sha, kind)
        text = json.dumps(entry)
        for machine in ("/work", "/home", "/tmp", "/root", "\\\\"):
            assert machine not in text, (sha, machine)


def test_an_entrys_tables_round_trip_and_a_new_judge_gets_empty_ones(tmp_path: Path) -> None:
    registry = tmp_path / "registry.json"
    before = SHIPPED.read_text("utf-8")
    registry.write_text(before, "utf-8")
    sha = next(iter(json.loads(before)["cutoffs"]))
    tables = common.entry_tables(sha, registry)
    assert list(tables) == list(common.TABLES)
    assert tables["values"] == json.loads(before)["cutoffs"][sha]["values"]
    tables["values"]["recall.supported"] = 0.5  # a copy: the file is untouched until written
    assert registry.read_text("utf-8") == before
    common.write_cutoffs(registry, sha, tables)
    assert common.entry_tables(sha, registry)["values"]["recall.supported"] == 0.5
    assert common.entry_tables("d" * 64, registry) == {name: {} for name in common.TABLES}
