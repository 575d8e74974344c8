"""run/'s rooms, checked as judge/'s are: the run's files at the top of ``localjudge.run`` import
no room, and each room imports only the top and the rooms it is allowed (:data:`RUN_ROOMS`)."""

from __future__ import annotations

import importlib
from pathlib import Path

from test_layering import PACKAGE, import_graph

#: per room of ``localjudge.run`` (``""``: the run's files at its top), the rooms it may import
#: besides its own
RUN_ROOMS: dict[str, set[str]] = {
    "": set(),
    "evaluate": {""},
    "report": {""},
    "bench": {"", "evaluate"},
    "calibrate": {"", "evaluate"},
}


def _room(module: str) -> str | None:
    """The room of ``localjudge.run`` a module is in (None outside run/)."""
    parts = module.split(".")
    if parts[1:2] != ["run"]:
        return None
    return parts[2] if len(parts) > 3 or (len(parts) == 3 and parts[2] in RUN_ROOMS) else ""


def run_rule_breaks(graph: dict[str, dict[str, int]]) -> list[str]:
    """Every import inside run/ from one room into another it may not import."""
    breaks = []
    for source, edges in sorted(graph.items()):
        come = _room(source)
        if come is None:
            continue
        for target, line in sorted(edges.items()):
            into = _room(target)
            if into is None or into == come or into in RUN_ROOMS.get(come, set()):
                continue
            breaks.append(f"{source} -> {target} (line {line}): {come or 'the top'} imports {into}")
    return breaks


def test_the_rooms_of_run_are_imported_by_the_rule():
    assert run_rule_breaks(import_graph(PACKAGE)) == []


def test_every_subpackage_of_run_is_a_room():
    found = {p.name for p in (PACKAGE / "run").iterdir() if (p / "__init__.py").is_file()}
    assert found == {name for name in RUN_ROOMS if name}


def test_each_room_of_run_says_what_it_owns_and_offers():
    for name in sorted(n for n in RUN_ROOMS if n):
        package = importlib.import_module(f"localjudge.run.{name}")
        doc = " ".join((package.__doc__ or "").split())
        assert "Owns" in doc, name
        assert "Offers" in doc, name
        modules = {p.stem for p in (PACKAGE / "run" / name).glob("*.py")} - {"__init__"}
        unnamed = [m for m in sorted(modules) if f"localjudge.run.{name}.{m}`" not in doc]
        assert unnamed == [], name


def test_the_run_rule_sees_each_kind_of_break(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    files = {
        "__init__.py": "",
        "run/__init__.py": "",
        "run/results.py": "def f():\n    from pkg.run.evaluate import runner\n",
        "run/evaluate/__init__.py": "",
        "run/evaluate/runner.py": "from pkg.run import results\n",
        "run/report/__init__.py": "",
        "run/report/html.py": "from pkg.run.evaluate import runner\n",
        "run/bench/__init__.py": "",
        "run/bench/judges.py": (
            "from pkg.run.evaluate.runner import f\nimport pkg.run.calibrate.fit\n"
        ),
        "run/calibrate/__init__.py": "",
        "run/calibrate/fit.py": "from pkg.run.results import f\n",
    }
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text, "utf-8")
    breaks = run_rule_breaks(import_graph(pkg))
    assert [b.split(" (")[0] for b in breaks] == [
        "pkg.run.bench.judges -> pkg.run.calibrate.fit",
        "pkg.run.report.html -> pkg.run.evaluate.runner",
        "pkg.run.results -> pkg.run.evaluate.runner",
    ]
