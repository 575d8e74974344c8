"""Settings for the whole suite: hypothesis profiles.

``HYPOTHESIS_PROFILE=ci`` (set by ``.ci/run``) derandomises every property test and keeps no
example database, so a CI run is repeatable and writes nothing; the default ``dev`` profile
explores new examples on each run and remembers failures in ``.hypothesis/``.
"""

from __future__ import annotations

import os

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
