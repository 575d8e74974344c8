"""The options that judge on a Ray cluster (:mod:`localjudge.cluster`), shared by ``eval`` and
``bench``, and the cluster they ask for. Ray itself loads only with ``--ray``.
"""

from __future__ import annotations

from typing import Any

import click

from localjudge.cli.options import option_group
from localjudge.errors import UsageError

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


def ray_config(options: dict[str, Any], ctx_obj: Any) -> Any:
    """The cluster to judge on, popped from ``options`` (None without --ray)."""
    address = options.pop("ray_address")
    actors, gpus = options.pop("ray_actors"), options.pop("ray_gpus")
    if address is None:
        if actors is not None or gpus is not None:
            raise UsageError("--ray-actors and --ray-gpus need --ray")
        return None
    from localjudge.cluster import RayConfig  # noqa: PLC0415 (ray loads only with --ray)

    worker = ctx_obj.get("ray_worker") if isinstance(ctx_obj, dict) else None
    return RayConfig(address=address or None, actors=actors, num_gpus=gpus, worker=worker)
