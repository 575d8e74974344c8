"""Words that point somewhere point at what exists: every dotted reference in a docstring or a
doc (Sphinx's ``:func:`` / ``:class:`` / ``:mod:`` / ``:meth:`` / ``:data:`` / ``:attr:`` /
``:exc:``, and a backticked ``localjudge.x.y``) resolves against the code (the module
imported, the rest by ``getattr``), and every file path a doc of ``docs/``,
``benchmarks/README.md`` or ``fitting/README.md`` names is in the tree.

History is exempt, and only history: ``CHANGELOG.md`` and ``experiments/`` say what was true
when it was written (each is marked as history at its top)."""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import os
import re
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from benchmark_scripts import ROOT, load

import localjudge

PACKAGE = Path(localjudge.__file__).resolve().parent
#: the docs whose dotted references are checked (the package's, fitting/'s and benchmarks/'s
#: docstrings are too)
DOCS = sorted(
    [
        *ROOT.glob("docs/**/*.md"),
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "benchmarks" / "README.md",
        ROOT / "fitting" / "README.md",
    ]
)
#: the docs whose file paths are checked against the tree
PATH_DOCS = sorted(
    [*ROOT.glob("docs/**/*.md"), ROOT / "benchmarks" / "README.md", ROOT / "fitting" / "README.md"]
)
#: history: what was true when it was written (marked so at its top), so never checked
HISTORY = ("CHANGELOG.md", "experiments/")

ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|exc|obj):`([^`]+)`")
DOTTED = re.compile(r"`{1,2}(localjudge(?:\.[A-Za-z_]\w*)+)(?:\(\))?`{1,2}")
#: ``localjudge.toml`` and the like name files, not code
FILE_SUFFIXES = {"toml", "json", "jsonl", "gz", "md", "py", "txt", "csv", "yaml", "yml", "html"}


def _target(text: str) -> str:
    """A role's target: ``title <target>`` -> target; ``~a.b`` -> a.b; ``a.b()`` -> a.b."""
    if text.endswith(">") and "<" in text:
        text = text[text.rindex("<") + 1 : -1]
    return re.sub(r"\s+", "", text).lstrip("~!").removesuffix("()")  # a name may wrap


def resolve(
    dotted: str, namespace: ModuleType | None = None, classes: tuple[str, ...] = ()
) -> bool:
    """Whether ``dotted`` names something: relative to the classes ``classes`` of
    ``namespace`` (the module whose docstring names it), innermost first, then to the module
    itself (a name it defines or imports, then their attributes), else an importable module
    and attributes of it."""
    parts = dotted.split(".")
    if namespace is not None:
        scopes = [namespace]
        for name in classes:
            scopes.append(getattr(scopes[-1], name, None))
        for scope in reversed(scopes):
            if scope is not None and hasattr(scope, parts[0]):
                return _walk(getattr(scope, parts[0]), parts[1:])
    if len(parts) == 1 and hasattr(builtins, dotted):  # :class:`TypeError`
        return True
    for cut in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        return _walk(module, parts[cut:])
    return False


def _walk(obj: Any, rest: list[str]) -> bool:
    for name in rest:
        if hasattr(obj, name):
            obj = getattr(obj, name)
        elif isinstance(obj, type) and (
            name in getattr(obj, "__annotations__", {}) or name in _instance_attributes(obj)
        ):
            obj = None  # a dataclass field without a default, or one ``__init__`` sets
        elif isinstance(obj, ModuleType):
            try:  # a submodule not imported by its package
                obj = importlib.import_module(f"{obj.__name__}.{name}")
            except ImportError:
                return False
        else:
            return False
    return True


def _instance_attributes(cls: type) -> set[str]:
    """The attributes a class's methods set on ``self``."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):
        return set()
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
        and isinstance(node.ctx, ast.Store)
    }


def _docstrings(path: Path) -> Iterator[tuple[int, tuple[str, ...], str]]:
    """Each docstring of the file at ``path`` (module, classes, functions), with its line and
    the classes it sits in (its names resolve there first), and each ``#:`` comment."""
    text = path.read_text("utf-8")

    def visit(
        node: ast.AST, classes: tuple[str, ...]
    ) -> Iterator[tuple[int, tuple[str, ...], str]]:
        if isinstance(node, ast.ClassDef):
            classes = (*classes, node.name)
        if isinstance(
            node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        ) and (doc := ast.get_docstring(node, clean=False)):
            yield getattr(node, "lineno", 1), classes, doc
        for child in ast.iter_child_nodes(node):
            yield from visit(child, classes)

    tree = ast.parse(text)
    yield from visit(tree, ())
    spans = _class_spans(tree, ())
    for n, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("#:"):
            inside = [names for first, last, names in spans if first <= n <= last]
            yield n, max(inside, key=len, default=()), line


def _class_spans(node: ast.AST, classes: tuple[str, ...]) -> list[tuple[int, int, tuple[str, ...]]]:
    """Each class of ``node``'s tree: its first and last line and the classes it sits in."""
    out = []
    for child in ast.iter_child_nodes(node):
        inner = classes
        if isinstance(child, ast.ClassDef):
            inner = (*classes, child.name)
            out.append((child.lineno, child.end_lineno or child.lineno, inner))
        out += _class_spans(child, inner)
    return out


def references(text: str) -> list[str]:
    """The dotted references in ``text``: roles' targets and backticked ``localjudge.x.y``
    (a file's name, ``localjudge.toml``, is none), each once."""
    found = [_target(m.group(1)) for m in ROLE.finditer(text)]
    found += [
        m.group(1)
        for m in DOTTED.finditer(ROLE.sub("", text))
        if m.group(1).rsplit(".", 1)[1] not in FILE_SUFFIXES
    ]
    return list(dict.fromkeys(found))


def _module_of(path: Path) -> ModuleType:
    """The module a file is: a module of the package, or a script of fitting/ or benchmarks/
    (imported as the tests import them)."""
    relative = path.relative_to(ROOT)
    if relative.parts[0] == "localjudge":
        parts = list(relative.with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        return importlib.import_module(".".join(parts))
    return load(str(relative.with_suffix("")))


def _sources() -> list[Path]:
    return sorted(
        [
            *PACKAGE.rglob("*.py"),
            *(ROOT / "fitting").glob("*.py"),
            *(ROOT / "benchmarks").rglob("*.py"),
        ]
    )


def stale_in_docstrings(path: Path) -> list[str]:
    module = _module_of(path)
    return [
        f"{path.relative_to(ROOT)}:{line}: {ref}"
        for line, classes, doc in _docstrings(path)
        for ref in references(doc)
        if not resolve(ref, module, classes)
    ]


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_dotted_reference_in_a_docstring_resolves(path):
    assert stale_in_docstrings(path) == []


def test_the_reference_check_sees_what_is_not_there():
    assert resolve("localjudge.decisions.decide.hard_value")
    assert resolve("localjudge.decisions.Cutoffs.of")
    assert resolve("localjudge.run.bench.memory.PeakMemory.method")  # set in __init__
    assert not resolve("localjudge.stats.combination_fit.cross_fit")
    assert not resolve("localjudge.decisions.fit.hard")
    assert references(":func:`~a.b` and :meth:`title <c.D.e>` and ``localjudge.x.y()``") == [
        "a.b",
        "c.D.e",
        "localjudge.x.y",
    ]
    assert references("a `localjudge.toml` file") == []


def stale_in_doc(path: Path) -> list[str]:
    text = path.read_text("utf-8")
    return [
        f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {ref}"
        for m in re.finditer(r"[^\n]+", text)
        for ref in references(m.group(0))
        if not resolve(ref)
    ]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_dotted_reference_in_a_doc_resolves(path):
    assert stale_in_doc(path) == []


# --------------------------------------------------------------------------- file paths

#: a backticked or linked path: a word with a file suffix, or with a slash
PATH = re.compile(r"`([\w.~/*-]+(?:/[\w.*-]*)*)`|\]\(([^)#\s]+)(?:#[^)]*)?\)")
TOP = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")}


def _exists(candidate: Path) -> bool:
    """Whether ``candidate`` is in the tree; a part in capitals (``JUDGE``, ``SOURCE.jsonl.gz``)
    or ``*`` stands for any name."""
    relative = os.path.relpath(candidate.resolve(), ROOT)
    if relative.startswith(".."):
        return candidate.exists()
    pattern = re.sub(r"(?<![\w.])[A-Z][A-Z_]+(?=[./]|$)", "*", relative)
    return any(ROOT.glob(pattern)) if "*" in pattern else (ROOT / relative).exists()


#: words that say a line or paragraph speaks of what is gone: history, not a claim on the tree
GONE = ("left the tree", "removed", "deleted")


def _units(text: str) -> Iterator[tuple[int, str]]:
    """``text``'s paragraphs, each table row one of its own, with the line each starts at."""
    start, lines = 1, []
    for n, line in enumerate([*text.splitlines(), ""], start=1):
        if not line.strip() or line.lstrip().startswith("|"):
            if lines:
                yield start, "\n".join(lines)
            lines = []
            if line.strip():
                yield n, line
            start = n + 1
        else:
            lines.append(line)


def paths_named(text: str) -> Iterator[tuple[int, str, bool]]:
    """Each path ``text`` names, with its line and whether it is a link's: a link's target, or
    a backticked word with a slash or a script's or doc's suffix. A paragraph that says what
    it names is gone (:data:`GONE`) names history, and none."""
    for first, unit in _units(text):
        if any(word in " ".join(unit.split()) for word in GONE):
            continue
        for m in PATH.finditer(unit):
            word = m.group(1) or m.group(2)
            if "://" in word or word.startswith("mailto:"):
                continue
            line = first + unit.count("\n", 0, m.start())
            if m.group(2) is not None:
                yield line, word, True
            elif "/" in word or word.rsplit(".", 1)[-1] in ("py", "md", "sh"):
                yield line, word, False


def _ignored(path: Path) -> bool:
    """Whether git ignores ``path``: a file a command writes (``benchmarks/data/``), never
    committed."""
    proc = subprocess.run(
        ["git", "check-ignore", "-q", str(path)], cwd=ROOT, capture_output=True, check=False
    )
    return proc.returncode == 0


def stale_paths(doc: Path, names: set[str], text: str | None = None) -> list[str]:
    """The paths ``doc`` names that are not in the tree: one whose first part is a folder of
    the repository's root (``fitting/build.py``) from there, one beside the doc (a link,
    ``speed/workers.py``) from there, a file named alone (``build.py``) anywhere. Other paths
    are the user's (``out/results.jsonl``, ``~/.cache``, a folder named alone such as
    ``judges/``), outside the checkout (``../shared/data``: a command's path is from the
    root, a link's from the doc) or written by a command (ignored by git)."""
    here = doc.parent
    stale = []
    text = doc.read_text("utf-8") if text is None else text
    for line, raw, link in paths_named(text):
        word = raw.rstrip("/")
        if not word or word.startswith(("~", "/", "$", "<")):
            continue
        first = word.split("/", 1)[0]
        if "/" not in word and not link and (raw.endswith("/") or word in names):
            continue
        candidates = []
        if first in TOP or (first == ".." and not link):  # a command's path, from the root
            candidates.append(ROOT / word)
        if link or "/" not in word or (first != ".." and (here / first).exists()):
            candidates.append(here / word)
        inside = [c for c in candidates if c.resolve().is_relative_to(ROOT.resolve())]
        if not inside or any(_exists(c) or _ignored(c) for c in inside):
            continue
        stale.append(f"{doc.relative_to(ROOT)}:{line}: {raw}")
    return stale


@pytest.fixture(scope="module")
def names() -> set[str]:
    """The name of every file in the tree."""
    return {
        p.name for p in ROOT.rglob("*") if ".git" not in p.parts and "__pycache__" not in p.parts
    }


@pytest.mark.parametrize("path", PATH_DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_path_a_doc_names_is_in_the_tree(path, names):
    assert stale_paths(path, names) == []


def test_the_path_check_sees_what_is_not_there(names):
    doc = ROOT / "benchmarks" / "README.md"
    text = "\n".join(
        [
            "`fitting/build.py`, `speed/workers.py`, `build.py`, [docs](../docs/README.md)",
            "`out/results.jsonl`, `judges/`, `../shared/data`, `benchmarks/data/x.jsonl`",
            "",
            "`fitting/gone.py`, `speed/gone.py`, `gone.py`",
            "[a link](gone.md)",
            "",
            "`fitting/gone.py` was removed",
        ]
    )
    assert [s.split(": ", 1)[1] for s in stale_paths(doc, names, text)] == [
        "fitting/gone.py",
        "speed/gone.py",
        "gone.py",
        "gone.md",
    ]
