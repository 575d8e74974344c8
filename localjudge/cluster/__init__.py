"""Judging on a Ray cluster (the ``[ray]`` extra, ``eval --ray`` / ``bench --ray``).

:mod:`~localjudge.cluster.driver` holds the driver side (:class:`RayJudge`, connecting, the
``--ray`` settings), :mod:`~localjudge.cluster.worker` what runs in each actor and the outcomes'
wire format. Ray itself is imported only inside functions, and only the CLI imports this
package, when ``--ray`` is asked for.

May import: judge, run (the judge settings) and the foundation modules; nothing imports it but
the CLI.
"""

from localjudge.cluster.driver import RAY_CHUNK_SIZE, RayConfig, RayJudge, open_ray_judge

__all__ = ["RAY_CHUNK_SIZE", "RayConfig", "RayJudge", "open_ray_judge"]
