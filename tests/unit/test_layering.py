"""Layering, checked cheaply: the package and its CLI's help stay free of the model stack, the
scoring core imports only the standard library and numpy, every import between localjudge's
modules points down the layers (:data:`LAYERS`), there is no import cycle, and one module starts
child processes."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import localjudge
import localjudge.scoring

#: the model stack, Ray (the [ray] extra: loaded only by --ray), and the frameworks the
#: adapters in localjudge.integrations wrap (loaded only when one is imported)
HEAVY = ("llama_cpp", "outlines", "llguidance", "ray", "ragas", "deepeval", "langchain_core")


def run_python(code):
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


REPORT = """
import json, sys
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(%r))
print("\\n" + json.dumps(heavy))
""" % (HEAVY,)  # noqa: UP031


def heavy_modules(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


def test_import_localjudge_does_not_load_the_model_stack():
    out = run_python("import localjudge\nassert localjudge.LlamaJudge\n" + REPORT)
    assert heavy_modules(out) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["eval", "--help"],
        ["bench", "--help"],
        ["models", "--help"],
        ["calibrate", "--help"],
        ["diff", "--help"],
        ["cache", "ls", "--help"],
    ],
)
def test_cli_help_does_not_load_the_model_stack(argv):
    code = f"""
    import sys
    from localjudge.cli import main
    try:
        main({argv!r})
    except SystemExit as exc:
        assert exc.code == 0, exc.code
    else:
        raise AssertionError("click should exit")
    """
    out = run_python(textwrap.dedent(code) + REPORT)
    assert heavy_modules(out) == []
    assert "Usage:" in out


def test_eval_without_ray_never_imports_ray(tmp_path):
    data = tmp_path / "data.jsonl"
    record = {"user_input": "q", "retrieved_contexts": ["yes"], "response": "yes"}
    data.write_text(json.dumps(record) + "\n", "utf-8")
    code = f"""
    from localjudge.cli import main
    from localjudge.testing import ScriptedJudge
    # the item's baseline call (no passage), the decision, then its reason
    reply = [{{"grade": 0}}, {{"relevant": "yes"}}, {{"reason": "r"}}]
    try:
        main(
            ["eval", {str(data)!r}, "--metric", "position", "-o", {str(tmp_path / "out")!r},
             "--no-cache", "-q"],
            obj={{"open_judge": lambda settings: ScriptedJudge(reply)}},
            standalone_mode=False,
        )
    except SystemExit as exc:
        assert not exc.code, exc.code
    """
    out = run_python(textwrap.dedent(code) + REPORT)
    assert (tmp_path / "out" / "results.jsonl").is_file()
    assert heavy_modules(out) == []


def test_cli_help_lists_the_commands():
    code = """
    from localjudge.cli import main
    try:
        main(["--help"])
    except SystemExit:
        pass
    """
    out = run_python(code)
    assert "eval" in out
    assert "models" in out


def _imported_roots(path):
    tree = ast.parse(Path(path).read_text("utf-8"))
    roots = set()
    for node in ast.walk(tree):  # every import, at any depth (function-level ones too)
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "scoring.py must not import relatively"
            roots.add(node.module.split(".")[0])
    return roots


def test_scoring_imports_only_the_standard_library_and_numpy():
    roots = _imported_roots(localjudge.scoring.__file__)
    assert "numpy" in roots
    outside = {r for r in roots if r not in sys.stdlib_module_names and r != "__future__"}
    assert outside == {"numpy"}


def test_the_import_check_sees_function_level_imports(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import math\n\ndef f():\n    from localjudge import judge\n", "utf-8")
    assert _imported_roots(sample) == {"math", "localjudge"}


def test_scoring_runs_without_the_rest_of_the_package():
    # the module is importable on its own, as a file, without localjudge/__init__.py
    code = f"""
    import importlib.util, sys
    spec = importlib.util.spec_from_file_location("scoring_alone", {localjudge.scoring.__file__!r})
    mod = importlib.util.module_from_spec(spec)
    sys.modules["scoring_alone"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    assert mod.recall_score([1, 0]) == 0.5
    assert not any(m == "localjudge" or m.startswith("localjudge.") for m in sys.modules)
    assert "pydantic" not in sys.modules
    print("ok")
    """
    assert run_python(code).strip() == "ok"


# --------------------------------------------------------------------------- the layers

PACKAGE = Path(localjudge.__file__).resolve().parent

#: the layers, lowest first: a module may import modules of its own layer and of the layers
#: below it, never above. A layer is a top-level module or a subpackage of localjudge (its
#: first name after ``localjudge.``); the package itself re-exports the public API, above all.
LAYERS: list[set[str]] = [
    # the foundation: errors, canonical JSON and hashing, versions, console tables, the pure math
    {"errors", "canonical", "versions", "console", "scoring"},
    # the input records and their readers
    {"data"},
    # the judge: protocol, schemas, engine, llama.cpp, registry, cache, the supervised child
    {"judge"},
    # the metrics: prompts, schemas, verdicts -> scores
    {"metrics"},
    # statistics of scores and labels
    {"stats"},
    # the decisions core: kinds, readings, cut-offs, decide, the fit, the storing rule, the
    # clear-case checks (role targets, contrast items), the cut-offs in the registries
    {"decisions"},
    # a run and its files: settings, runner, results, report, diff, bench
    {"run"},
    # the public fake judge, and the extras (imported lazily, by users or the CLI only)
    {"testing", "integrations", "cluster"},
    # the machine check behind ``localjudge doctor``
    {"doctor"},
    # the command line
    {"cli"},
    # ``localjudge/__init__.py``: the public API
    {""},
]
RANK = {name: rank for rank, names in enumerate(LAYERS) for name in names}


def _module_files(package: Path) -> dict[str, Path]:
    """Every module of ``package`` by dotted name (a package by its own name)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = (package.name, *path.relative_to(package).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """The package's modules that ``name`` imports, with the line: every import statement at
    any depth (function-level ones too), relative ones resolved, ``from a import b`` naming
    module ``a.b`` when there is one. Importing ``a.b`` runs ``a/__init__.py`` too; that implied
    arrow is left out (a package's ``__init__`` may re-export its own modules)."""
    root = name.split(".", maxsplit=1)[0]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            if target.split(".")[0] == root and target in modules and target != name:
                yield target, node.lineno


def import_graph(package: Path) -> dict[str, dict[str, int]]:
    """module -> {imported module: line of the first such import}, within ``package``."""
    modules = _module_files(package)
    graph: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        edges = graph.setdefault(name, {})
        for target, line in _imports(name, path, modules):
            edges.setdefault(target, line)
    return graph


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (each holds a cycle)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer(module: str) -> str:
    """A module's layer name: its first name inside the package (``""`` for the package)."""
    return module.split(".")[1] if "." in module else ""


def test_every_module_has_a_layer():
    unplaced = sorted(m for m in import_graph(PACKAGE) if layer(m) not in RANK)
    assert unplaced == [], "add them to LAYERS"


def test_imports_point_down_the_layers():
    graph = import_graph(PACKAGE)
    upward = [
        f"{source} -> {target} (line {line})"
        for source, edges in sorted(graph.items())
        for target, line in sorted(edges.items())
        if RANK.get(layer(target), -1) > RANK.get(layer(source), len(LAYERS))
    ]
    assert upward == []


def test_no_import_cycle_between_modules():
    assert cycles(import_graph(PACKAGE)) == []


def test_the_layer_check_sees_upward_and_cyclic_function_level_imports(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "low").mkdir(parents=True)
    (pkg / "__init__.py").write_text("", "utf-8")
    (pkg / "low" / "__init__.py").write_text("", "utf-8")
    (pkg / "low" / "a.py").write_text("def f():\n    from pkg.high import b\n", "utf-8")
    (pkg / "low" / "c.py").write_text("from . import a\nfrom .a import f\n", "utf-8")
    (pkg / "high.py").write_text("import pkg.low.a\n\nb = 1\n", "utf-8")
    graph = import_graph(pkg)
    assert graph["pkg.low.a"] == {"pkg.high": 2}
    assert graph["pkg.low.c"] == {"pkg.low.a": 1}
    assert graph["pkg.high"] == {"pkg.low.a": 1}
    assert cycles(graph) == [["pkg.high", "pkg.low.a"]]


# --------------------------------------------------------------------------- judge/'s rooms

#: the subpackages of ``localjudge.judge``, lowest first after its top (``""``: the judge
#: interface, its value types and the child process). Inside judge/ a module imports its own
#: room and the rooms below it.
JUDGE_ROOMS: list[set[str]] = [{""}, {"engine", "cache"}, {"models"}, {"llama"}]
JUDGE_RANK = {name: rank for rank, names in enumerate(JUDGE_ROOMS) for name in names}
#: the composition points: the only modules outside judge/ that may import one of its
#: subpackages, and then only the names it offers (the subpackage, never a module inside it).
#: A name ending in ``.`` stands for every module under it.
COMPOSITION = (
    "",
    "decisions.cutoff_registry",
    "run.settings",
    "doctor",
    "integrations",
    "cluster.driver",
    "cli.",
)


def _room(module: str, rooms: set[str]) -> str | None:
    parts = module.split(".")
    if parts[1:2] != ["judge"]:
        return None
    return parts[2] if len(parts) > 2 and parts[2] in rooms else ""


def _composes(module: str) -> bool:
    inner = module.partition(".")[2]
    return any(
        inner == c.rstrip(".") or (c.endswith(".") and inner.startswith(c)) for c in COMPOSITION
    )


def judge_rule_breaks(graph: dict[str, dict[str, int]], rank: dict[str, int]) -> list[str]:
    """Every import that breaks judge/'s rule: within judge/, an arrow up or across its rooms;
    from outside, a subpackage imported by a module that is no composition point, or a module
    inside a subpackage imported at all."""
    rooms = {name for name in rank if name}
    breaks = []
    for source, edges in sorted(graph.items()):
        for target, line in sorted(edges.items()):
            into = _room(target, rooms)
            if not into:
                continue
            where = f"{source} -> {target} (line {line})"
            come = _room(source, rooms)
            if come is not None:
                if into != come and rank[into] >= rank[come]:
                    breaks.append(f"{where}: {come or 'the top'} may not import {into}")
            elif not _composes(source):
                breaks.append(f"{where}: only the composition points import judge.{into}")
            elif target.count(".") > 2:
                breaks.append(f"{where}: import what localjudge.judge.{into} offers")
    return breaks


def test_judge_subpackages_are_imported_by_the_rule():
    assert judge_rule_breaks(import_graph(PACKAGE), JUDGE_RANK) == []


def test_every_subpackage_of_judge_has_a_room():
    found = {p.name for p in (PACKAGE / "judge").iterdir() if (p / "__init__.py").is_file()}
    assert found == {name for name in JUDGE_RANK if name}


def test_the_judge_rule_sees_each_kind_of_break(tmp_path):
    pkg = tmp_path / "pkg"
    files = {
        "__init__.py": "",
        "judge/__init__.py": "",
        "judge/protocol.py": "def f():\n    from pkg.judge import llama\n",
        "judge/cache/__init__.py": "from pkg.judge.cache.database import Cache\n",
        "judge/cache/database.py": "import pkg.judge.protocol\n\nCache = 1\n",
        "judge/llama/__init__.py": "",
        "judge/llama/judge.py": "from pkg.judge.cache import Cache\n",
        "judge/models/__init__.py": "from pkg.judge.llama import judge\n",
        "metrics/__init__.py": "from pkg.judge.cache import Cache\n",
        "cli/__init__.py": "from pkg.judge.cache.database import Cache\n",
        "cli/models.py": "from pkg.judge.llama import judge\n",
    }
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text, "utf-8")
    breaks = judge_rule_breaks(import_graph(pkg), JUDGE_RANK)
    assert [b.split(" (")[0] for b in breaks] == [
        "pkg.cli -> pkg.judge.cache.database",
        "pkg.cli.models -> pkg.judge.llama.judge",
        "pkg.judge.models -> pkg.judge.llama.judge",
        "pkg.judge.protocol -> pkg.judge.llama",
        "pkg.metrics -> pkg.judge.cache",
    ]


def test_each_room_of_judge_says_what_it_owns_and_offers():
    for name in sorted(n for n in JUDGE_RANK if n):
        package = importlib.import_module(f"localjudge.judge.{name}")
        doc = package.__doc__ or ""
        assert "Owns" in doc, name
        assert "Offers:" in doc, name
        offers = doc.split("Offers:", 1)[1]
        unnamed = [n for n in package.__all__ if f"{n}`" not in offers]
        assert unnamed == [], name
        assert all(hasattr(package, n) for n in package.__all__), name
    for path in sorted((PACKAGE / "judge").glob("*.py")):
        if path.name != "__init__.py":
            module = importlib.import_module(f"localjudge.judge.{path.stem}")
            assert "any layer may use it" in " ".join((module.__doc__ or "").split()), path.name


def test_the_public_api_has_one_judge_constructor():
    """``load_judge`` is the library's one way to load a judge; the CLI's settings-driven
    composition (``run.settings.open_judge``) is not public and goes through it."""
    constructors = sorted(n for n in localjudge.__all__ if n.endswith("_judge"))
    assert constructors == ["load_judge"]
    assert "JudgeSettings" not in localjudge.__all__


#: what starts a process: the modules, and the os functions
SPAWNING_MODULES = {"multiprocessing", "subprocess", "concurrent.futures.process"}
SPAWNING_OS = ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "popen", "spawn", "exec")


def _spawns(name: str) -> bool:
    return (
        name.split(".", maxsplit=1)[0] in SPAWNING_MODULES
        or name in SPAWNING_MODULES
        or name == "concurrent.futures.ProcessPoolExecutor"
        or (name.startswith("os.") and name[3:].startswith(SPAWNING_OS))
    )


def _starts_processes(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
            if node.module == "os":
                names += [f"os.{alias.name}" for alias in node.names]
            if node.module == "concurrent.futures":
                names += [f"concurrent.futures.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            names = [f"{node.value.id}.{node.attr}"]
        else:
            continue
        if any(_spawns(name) for name in names):
            lines.append(node.lineno)
    return lines


def test_one_module_starts_child_processes():
    # the supervised judge child: eval, bench and doctor all start theirs through it
    spawning = {
        name: lines
        for name, path in _module_files(PACKAGE).items()
        if (lines := _starts_processes(path))
    }
    assert list(spawning) == ["localjudge.judge.isolation"]


# --------------------------------------------------------------------------- fitting/, benchmarks/

REPO = PACKAGE.parent
FITTING = REPO / "fitting"


def script_graph(*folders: Path) -> dict[str, dict[str, int]]:
    """The scripts of ``folders`` (relative paths) -> the scripts they import by plain name:
    one beside them, or one of ``fitting/`` (what ``sys.path`` holds when they run)."""
    scripts = sorted(p for folder in folders for p in folder.rglob("*.py"))
    graph: dict[str, dict[str, int]] = {}
    for path in scripts:
        edges = graph.setdefault(str(path.relative_to(REPO)), {})
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module]
            else:
                continue
            for target in targets:
                for where in (path.parent, FITTING):
                    found = where / f"{target.split('.')[0]}.py"
                    if found.is_file() and found != path:
                        edges.setdefault(str(found.relative_to(REPO)), node.lineno)
                        graph.setdefault(str(found.relative_to(REPO)), {})
                        break
    return graph


def test_no_script_of_fitting_edits_the_import_path():
    files = sorted(FITTING.glob("*.py"))
    edits = [p.name for p in files if "sys.path.insert" in p.read_text("utf-8")]
    assert edits == []


def test_no_import_cycle_in_fitting_or_benchmarks():
    graph = script_graph(FITTING, REPO / "benchmarks")
    assert "fitting/build.py" in graph
    assert "fitting/row_files.py" in graph["fitting/build.py"]  # the check sees plain imports
    assert cycles(graph) == []
