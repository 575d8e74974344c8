"""The options that judge on a Ray cluster (:mod:`localjudge.cluster`), shared by ``eval`` and
``bench``, their values (:class:`RayArgs`) and the cluster they ask for. Ray itself loads only
with ``--ray``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from localjudge.cli.options import option_group
from localjudge.errors import UsageError

if TYPE_CHECKING:
    from localjudge.cluster import RayConfig

#: judging on a Ray cluster (localjudge.cluster): eval and bench share them
ray_options = option_group(
    click.option(
        "--ray",
        "ray_address",
        is_flag=False,
        flag_value="",
        default=None,
        metavar="[ADDRESS]",
        help="Judge on a Ray cluster: ADDRESS (auto, ray://HOST:10001), or alone: $RAY_ADDRESS "
        "or a new local instance. Needs the [ray] extra.",
    ),
    click.option(
        "--ray-actors",
        type=click.IntRange(min=1),
        default=None,
        help="With --ray: judges loaded at once, one per actor (default: one per node).",
    ),
    click.option(
        "--ray-gpus",
        type=click.FloatRange(min=0),
        default=None,
        help="With --ray: GPUs per actor (default: 1 when -ngl offloads explicitly, else 0).",
    ),
)


@dataclass(frozen=True, kw_only=True)
class RayArgs:
    """The values of :data:`ray_options`, as Click passes them (``eval`` and ``bench``)."""

    ray_address: str | None
    ray_actors: int | None
    ray_gpus: float | None

    def ray_config(self, ctx_obj: Any) -> RayConfig | None:
        """The cluster to judge on (None without --ray); ``ctx_obj``: Click's context object,
        whose ``ray_worker`` builds each actor's judge (tests)."""
        if self.ray_address is None:
            if self.ray_actors is not None or self.ray_gpus is not None:
                raise UsageError("--ray-actors and --ray-gpus need --ray")
            return None
        from localjudge.cluster import RayConfig  # noqa: PLC0415 (ray loads only with --ray)

        worker = ctx_obj.get("ray_worker") if isinstance(ctx_obj, dict) else None
        return RayConfig(
            address=self.ray_address or None,
            actors=self.ray_actors,
            num_gpus=self.ray_gpus,
            worker=worker,
        )
