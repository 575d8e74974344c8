"""The scripts of benchmarks/ and fitting/ as modules, for the unit tests of their pure parts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
FITTING = ROOT / "fitting"


def load(path: str) -> ModuleType:
    """``<path>.py`` from the repository's root (``"fitting/convert"``,
    ``"benchmarks/speed/workers"``), imported as ``scripts_<path with _ for />``, with its
    folder on the import path (its own imports of the modules beside it)."""
    folder = str((ROOT / path).parent)
    if folder not in sys.path:  # a script imports the modules beside it, as when run
        sys.path.append(folder)
    name = "scripts_" + path.replace("/", "_")
    spec = importlib.util.spec_from_file_location(name, ROOT / f"{path}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
