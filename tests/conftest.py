"""Settings for the whole suite: hypothesis profiles, and the ``opened`` fixture (the files
a test's code opens, counted by an audit hook).

``HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) derandomises every property test and keeps no
example database, so a CI run is repeatable and writes nothing; the default ``dev`` profile
explores new examples on each run and remembers failures in ``.hypothesis/``.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


#: the paths opened while a test counts them (an audit hook cannot be removed: one, installed
#: once, that counts only while a test holds the counter)
_COUNTING: list[Counter[str]] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _COUNTING and isinstance(args[0], (str, bytes, Path)):
        _COUNTING[-1][str(Path(os.fsdecode(args[0])).resolve())] += 1


sys.addaudithook(_audit)


@pytest.fixture
def opened() -> Iterator[Counter[str]]:
    """The files this process opens (any way: open, Path.open, os.open), by resolved path."""
    counter: Counter[str] = Counter()
    _COUNTING.append(counter)
    try:
        yield counter
    finally:
        _COUNTING.remove(counter)
