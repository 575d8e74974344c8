"""Installed versions of what can change a verdict or a file (recorded in results and caches)."""

from __future__ import annotations

import platform
from importlib.metadata import PackageNotFoundError, version

#: the distribution name on the package index (``localjudge`` there is an unrelated project)
DISTRIBUTION = "localjudge-rag"
PACKAGES = (DISTRIBUTION, "llama-cpp-python", "llguidance", "pydantic", "numpy")


def package_version(name: str) -> str:
    """The installed version of ``name``, or ``"absent"``."""
    try:
        return version(name)
    except PackageNotFoundError:
        return "absent"


def versions() -> dict[str, str]:
    """Python's version and those of :data:`PACKAGES`."""
    return {"python": platform.python_version(), **{p: package_version(p) for p in PACKAGES}}
