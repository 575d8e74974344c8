"""Judging on a Ray cluster, the driver side: the same run, its judge calls spread over actors.

:class:`RayJudge` implements the judge interface's ``generate_many`` by sending its requests
through Ray Data (``from_items(...).map_batches(JudgeActor, compute=ActorPoolStrategy(size=N))``):
one loaded judge per actor, the batched engine inside it. Everything else stays on the driver:
records are read with localjudge's own readers, the driver's
:class:`~localjudge.judge.cache.caching.CachingJudge` wraps the RayJudge (so cache hits never leave
the driver, and every finished call is stored the moment its batch comes back), and the driver
writes ``results.jsonl`` and ``summary.json``.

Generations travel as plain data (raw text, stats, soft decisions) and are validated again on
the driver with :func:`~localjudge.judge.schemas.parse_output`, so values are those of a local run.
The RayJudge's identity is the workers' judge's identity, so cache keys and rows are those of a
local run too. Each worker refuses a model file whose sha256 differs from the driver's, naming
itself.

Ray is an optional extra (``pip install 'localjudge[ray]'``): this module imports it only inside
functions, and nothing else in localjudge imports this module unless ``--ray`` is asked for.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import signal
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from localjudge.cluster.worker import (
    JudgeActor,
    WorkerFactory,
    decode_outcome,
    open_uncached,
    worker_identity,
)
from localjudge.errors import (
    ContextOverflowError,
    LocalJudgeError,
    ModelError,
    UsageError,
)
from localjudge.judge.protocol import (
    Generation,
    Judge,
    JudgeIdentity,
    JudgeRequest,
    M,
    OnOutcome,
    Outcome,
    Prompt,
    as_messages,
)
from localjudge.run.settings import JudgeSettings

__all__ = [
    "RAY_CHUNK_SIZE",
    "RayConfig",
    "RayJudge",
    "open_ray_judge",
]

#: items per chunk of a Ray run: each chunk x metric is one Ray Data execution (an actor pool
#: that loads its judges), so chunks are far larger than a local run's; results do not depend
#: on it (rows come out in item order whatever the chunk)
RAY_CHUNK_SIZE = 1024
#: the most requests one actor call judges (a batch is retried whole when its actor dies)
MAX_BATCH = 32


def driver_sha256(settings: JudgeSettings) -> str:
    """The sha256 of the model file ``settings`` name, as the driver resolves it."""
    from localjudge.judge.models import model_sha256, resolve_model  # noqa: PLC0415

    return model_sha256(resolve_model(settings.model).path)


def gpus_per_actor(settings: JudgeSettings) -> float:
    """One GPU per actor when layers are offloaded explicitly (``-ngl all|-1|N>0``), else none."""
    layers = settings.n_gpu_layers
    if layers == "all" or (isinstance(layers, int) and layers != 0):
        return 1.0
    return 0.0


# --------------------------------------------------------------------------- the driver side


def _local_cause(exc: BaseException) -> LocalJudgeError | None:
    """The localjudge error a Ray exception carries from a worker, if any."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, LocalJudgeError):
            return e
        todo += [e.__cause__, e.__context__, getattr(e, "cause", None)]
        as_cause = getattr(e, "as_instanceof_cause", None)
        if callable(as_cause):
            try:
                todo.append(as_cause())
            except Exception:  # noqa: BLE001,S112 (not a wrapped task error after all)
                continue
    return None


def _quiet_ray_data() -> None:
    import ray.data  # noqa: PLC0415

    with warnings.catch_warnings():  # Ray's own context warns of its own defaults
        warnings.simplefilter("ignore", DeprecationWarning)
        ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    # a worker whose judge cannot load fails the run at once, not after retries
    ctx.max_consecutive_actor_init_deaths = 0
    logging.getLogger("ray.data").setLevel(logging.WARNING)


class RayJudge:
    """A judge whose calls run on a Ray cluster's actors (see the module's notes).

    ``worker`` builds each actor's judge (a picklable callable); ``sha256`` is the model file's
    as the driver has it (None: the first worker's is taken as the reference). ``actors`` judges
    run at once, each holding ``num_gpus`` GPUs and ``num_cpus`` CPUs. ``max_retries``: how often
    Ray restarts a dead actor and retries its batch."""

    def __init__(
        self,
        worker: WorkerFactory,
        *,
        sha256: str | None,
        actors: int = 1,
        num_gpus: float = 0.0,
        num_cpus: float = 1.0,
        batch_size: int | None = None,
        max_retries: int = 3,
    ) -> None:
        import ray  # noqa: PLC0415

        if actors < 1:
            raise UsageError(f"--ray-actors must be at least 1, got {actors}")
        self.worker = worker
        self.sha256 = sha256
        self.actors = actors
        self.num_gpus = num_gpus
        self.num_cpus = num_cpus
        self.batch_size = batch_size
        self.max_retries = max_retries
        _quiet_ray_data()
        probe = ray.remote(worker_identity).options(
            num_cpus=num_cpus, num_gpus=num_gpus, max_retries=0
        )
        try:
            found = ray.get(probe.remote(worker, sha256))
        except Exception as exc:
            raise _local_cause(exc) or exc from exc
        self._identity_dict: dict[str, Any] = found
        self._identity = JudgeIdentity(**found)
        self.sha256 = found["sha256"]

    @property
    def identity(self) -> JudgeIdentity:
        return self._identity

    @property
    def batch_invariant(self) -> bool:
        """Batches are cut anew on the cluster anyway: a partly cached batch is not resent."""
        return True

    def generate(self, prompt: Prompt, schema: type[M]) -> Generation[M]:
        [outcome] = self.generate_many([JudgeRequest(list(as_messages(prompt)), schema)])
        if isinstance(outcome, ContextOverflowError):
            raise outcome
        return outcome  # type: ignore[return-value]

    def _batch(self, n: int) -> int:
        if self.batch_size is not None:
            return self.batch_size
        return max(1, min(math.ceil(n / self.actors), MAX_BATCH))

    def generate_many(
        self, requests: Sequence[JudgeRequest], *, on_outcome: OnOutcome | None = None
    ) -> list[Outcome]:
        """The requests judged by the actor pool; ``on_outcome`` fires as each batch returns.
        A row returned twice (a retried batch) is taken once."""
        if not requests:
            return []
        import ray.data  # noqa: PLC0415
        from ray import cloudpickle  # noqa: PLC0415

        classes: dict[type[BaseModel], int] = {}
        for r in requests:
            classes.setdefault(r.schema, len(classes))
        schemas = [cloudpickle.dumps(c) for c in classes]  # type: ignore[no-untyped-call]
        rows = [
            {
                "i": i,
                "messages": json.dumps([dict(m) for m in r.messages]),
                "schema": classes[r.schema],
                "shared": r.shared_chars,
                "read": json.dumps(r.read_chars),
                "branches": json.dumps(list(r.branch_chars)),
            }
            for i, r in enumerate(requests)
        ]
        batch = self._batch(len(requests))
        n_batches = math.ceil(len(requests) / batch)
        with warnings.catch_warnings():
            # Ray 2.60 deprecates passing max_restarts/max_task_retries this way but has no
            # other spelling; without them its actor pools retry a dying batch forever
            warnings.simplefilter("ignore", DeprecationWarning)
            # one block per batch: blocks are what actors share out
            ds = ray.data.from_items(rows, override_num_blocks=n_batches).map_batches(
                JudgeActor,
                fn_constructor_kwargs={
                    "worker": self.worker,
                    "sha256": self.sha256,
                    "identity": self._identity_dict,
                    "schemas": schemas,
                },
                compute=ray.data.ActorPoolStrategy(size=min(self.actors, n_batches)),
                batch_size=batch,
                num_cpus=self.num_cpus,
                num_gpus=self.num_gpus,
                max_restarts=self.max_retries,
                max_task_retries=self.max_retries,
            )
        outcomes: list[Outcome | None] = [None] * len(requests)
        try:
            for row in ds.iter_rows():
                i = int(row["i"])
                if outcomes[i] is not None:
                    continue
                outcome = decode_outcome(row["outcome"], requests[i].schema)
                outcomes[i] = outcome
                if on_outcome is not None:
                    on_outcome(i, outcome)
        except (KeyboardInterrupt, LocalJudgeError):
            raise
        except Exception as exc:
            cause = _local_cause(exc)
            if cause is None:
                raise
            raise cause from exc
        missing = [i for i, o in enumerate(outcomes) if o is None]
        if missing:
            raise ModelError(
                f"the Ray cluster returned no outcome for {len(missing)} of {len(requests)} "
                "requests",
                hint="run again: finished calls are cached and are not sent out again",
            )
        return [o for o in outcomes if o is not None]


def connect(address: str | None) -> None:
    """Join the Ray cluster at ``address`` (``auto``, ``ray://host:10001``; None: ``RAY_ADDRESS``
    or a new local instance), unless this process already has."""
    import ray  # noqa: PLC0415

    if ray.is_initialized():
        return
    # ray.init makes SIGTERM a SystemExit(15) in the driver: keep this process's own handler
    # (the CLI's stops a run as Ctrl-C does: finished work kept, exit 130)
    main = threading.current_thread() is threading.main_thread()
    on_term = signal.getsignal(signal.SIGTERM) if main else None
    try:
        ray.init(address=address or None, log_to_driver=False, configure_logging=False)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise UsageError(
            f"cannot connect to the Ray cluster at {address or 'RAY_ADDRESS/local'}: {exc}",
            hint="start it with `ray start --head` (workers: `ray start --address HEAD:6379`)",
        ) from exc
    finally:
        if main and on_term is not None:
            signal.signal(signal.SIGTERM, on_term)


def _ray_missing() -> UsageError:
    return UsageError(
        "--ray needs Ray, which is not installed",
        hint="pip install 'localjudge[ray]'",
    )


def open_ray_judge(
    settings: JudgeSettings,
    *,
    address: str | None = None,
    actors: int | None = None,
    num_gpus: float | None = None,
    batch_size: int | None = None,
    max_retries: int = 3,
    worker: WorkerFactory | None = None,
    sha256: str | None = None,
) -> Judge:
    """The judge ``settings`` describe, its calls run on the Ray cluster at ``address``, wrapped
    in the driver's cache unless ``use_cache`` is off: what ``eval --ray`` and ``bench --ray``
    use. ``actors`` defaults to one per live node; ``num_gpus`` (per actor) to one when
    ``n_gpu_layers`` offloads explicitly. ``worker`` replaces the judge each actor builds from
    ``settings`` (tests pass a scripted one); ``sha256`` is then the reference model hash
    (None: the first worker's)."""
    try:
        import ray  # noqa: PLC0415
    except ImportError:
        raise _ray_missing() from None
    from localjudge.judge.cache import (  # noqa: PLC0415
        CachingJudge,
        open_cache,
    )

    connect(address)
    if worker is None:
        worker = functools.partial(open_uncached, settings)
        sha256 = sha256 or driver_sha256(settings)
    if actors is None:
        nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
        actors = max(1, len([n for n in nodes if n.get("Alive")]))
    judge: Judge = RayJudge(
        worker,
        sha256=sha256,
        actors=actors,
        num_gpus=gpus_per_actor(settings) if num_gpus is None else num_gpus,
        num_cpus=float(settings.n_threads or 1),
        batch_size=batch_size,
        max_retries=max_retries,
    )
    if settings.use_cache:
        judge = CachingJudge(judge, open_cache(settings.cache))
    return judge


@dataclass(frozen=True)
class RayConfig:
    """Where and how ``eval --ray`` and ``bench --ray`` judge (picklable: bench's jobs carry
    it). ``address`` None: ``RAY_ADDRESS`` or a new local instance."""

    address: str | None = None
    actors: int | None = None
    num_gpus: float | None = None
    batch_size: int | None = None
    #: builds each actor's judge from the settings instead of :func:`open_uncached` (tests)
    worker: Callable[[JudgeSettings], Judge] | None = None
    #: the reference model sha256 with ``worker`` (None: the first worker's)
    sha256: str | None = None
    #: items per chunk (:data:`RAY_CHUNK_SIZE`)
    chunk_size: int = RAY_CHUNK_SIZE

    def open(self, settings: JudgeSettings) -> Judge:
        """The judge ``settings`` describe, on this cluster (:func:`open_ray_judge`)."""
        return open_ray_judge(
            settings,
            address=self.address,
            actors=self.actors,
            num_gpus=self.num_gpus,
            batch_size=self.batch_size,
            worker=functools.partial(self.worker, settings) if self.worker else None,
            sha256=self.sha256,
        )
