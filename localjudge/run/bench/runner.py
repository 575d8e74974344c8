"""``localjudge bench``: run judges on labelled data and compare each with the human labels.

:func:`bench_file` validates the labels, runs each judge on the data as an ordinary eval run
(each in a fresh process, one after another, so judges never share the cores and each gets its
own cold start and peak memory), reads the runs back through :mod:`localjudge.run.results` and
compares them (:mod:`localjudge.run.bench.compare`) with :mod:`localjudge.stats.agreement`'s
statistics. Judges are compared on the items every judge scored; the items a judge failed are
counted and listed, never silently dropped.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localjudge.canonical import file_sha256
from localjudge.console import number
from localjudge.data.readers import read_records
from localjudge.errors import (
    CacheError,
    ConstraintError,
    DataError,
    InternalError,
    JudgeDiedError,
    LocalJudgeError,
    ModelError,
    UsageError,
    internal_error,
)
from localjudge.judge.isolation import Reporter, death_line, supervise
from localjudge.judge.protocol import Judge
from localjudge.metrics import METRICS
from localjudge.run.bench.compare import compare, item_rows, judges_agreement
from localjudge.run.bench.memory import PeakMemory
from localjudge.run.evaluate.file_run import eval_file
from localjudge.run.labels import (
    applicable,
    canonical,
    item_where,
    label_problem,
    n_pieces,
    refuse_labels,
)
from localjudge.run.options import BenchOptions, EvalOptions
from localjudge.run.results import (
    BENCH,
    RESULTS,
    BenchReport,
    read_bench,
    read_results,
    write_bench,
)
from localjudge.run.rundir import output_lock, refuse_replacing
from localjudge.run.settings import JudgeSettings, build_metrics, open_judge
from localjudge.versions import versions

__all__ = ["BenchOutcome", "JudgeFactory", "bench_file", "bench_table"]

#: opens a judge from its settings; the default loads the real model in a fresh process
JudgeFactory = Callable[[JudgeSettings], Judge]


#: judge names longer than this are shown by their end (a path's file name)
NAME_WIDTH = 24


def _name(name: str) -> str:
    return name if len(name) <= NAME_WIDTH else "…" + name[-(NAME_WIDTH - 1) :]


def bench_table(report: Mapping[str, Any], *, terminal: bool = False) -> str:
    """The console table: one line per judge x metric with the headline numbers, and one per
    pair of judges x metric with their agreement (plain text unless ``terminal``)."""
    from localjudge.console import Column, TextTable, render  # noqa: PLC0415

    rows = []
    for name, judge in report["judges"].items():
        for metric, m in judge["metrics"].items():
            v = next(iter(m["verdicts"].values()), None) if m["verdicts"] else None
            s = m["scores"] or {}
            soft = m.get("soft_scores") or {}
            rows.append(
                [
                    _name(name),
                    metric,
                    str(m["n_common"]),
                    str(m["n_failed"]),
                    number(v and v["accuracy"]["value"]),
                    number(v and v["kappa"]["value"]),
                    number(s.get("spearman", {}).get("value")),
                    number(s.get("mae", {}).get("value")),
                    number(s.get("roc_auc", {}).get("value")),
                    number(soft.get("spearman", {}).get("value")),
                    number(soft.get("roc_auc", {}).get("value")),
                    number((m.get("top_pattern") or {}).get("share"), 2),
                    number(m["seconds_per_item"], 2),
                    number(m["tokens_per_s"], 1),
                    number(judge["load_seconds"], 2),
                    number(judge["peak_rss_mb"], 0),
                ]
            )
    numbers = ("n", "fail", "acc", "kappa", "rho", "mae", "auc", "~rho", "~auc", "top",
               "s/item", "tok/s", "load s", "MB")  # fmt: skip
    tables = [
        TextTable([Column("judge"), Column("metric"), *(Column(h, True) for h in numbers)], rows)
    ]
    pairs = report.get("judge_pairs") or {}
    if any(pairs.values()):
        pair_rows = []
        for label, by_metric in pairs.items():
            for metric, m in by_metric.items():
                v = next(iter(m["verdicts"].values()), None) if m["verdicts"] else None
                pair_rows.append(
                    [
                        label,
                        metric,
                        str(m["n_items"]),
                        number(v and v["kappa"]["value"]),
                        number((m["spearman"] or {}).get("value")),
                        number((m["mae"] or {}).get("value")),
                        number((m.get("alpha") or {}).get("value")),
                    ]
                )
        tables.append(
            TextTable(
                [
                    Column("judge vs judge"),
                    Column("metric"),
                    *(Column(h, True) for h in ("n", "kappa", "rho", "mae")),
                ],
                pair_rows,
            )
        )
    return render(tables, terminal=terminal)


# --------------------------------------------------------------------------- running judges


@dataclass(frozen=True)
class BenchOutcome:
    """What a bench run wrote, and its report."""

    bench_path: Path
    items_path: Path
    report: BenchReport


@dataclass(frozen=True)
class _Job:
    """One judge's eval run inside a bench (picklable: it crosses into a worker process)."""

    judge: JudgeSettings
    data: Path
    out_dir: Path
    #: the bench's options (its metrics, their settings, the Ray cluster)
    bench: BenchOptions
    #: the judge's eval run's options (the bench's limit, truncate and overwrite, its items)
    options: EvalOptions
    #: items to judge, for a progress bar on stderr (None: no bar)
    progress_total: float | None = None


def bench_file(
    data: Path,
    out_dir: Path,
    *,
    judges: Sequence[JudgeSettings],
    options: BenchOptions | None = None,
    open_judge: JudgeFactory | None = None,
    on_judge: Callable[[str], None] | None = None,
    **keywords: Any,
) -> BenchOutcome:
    """Run every judge on the labelled ``data`` and compare each with the human labels, with
    ``options`` (:class:`~localjudge.run.options.BenchOptions`), or the same names as keyword
    arguments (they replace the fields of ``options``): ``metrics``, ``metric_settings``,
    ``limit``, ``truncate``, ``overwrite``, ``ray``, ``progress``.

    Each judge's results go to ``out_dir/judges/<n>-<name>/`` as an ordinary eval run;
    ``bench.json`` and ``bench_items.jsonl`` hold the comparison. By default each judge runs in
    a fresh process; with ``open_judge`` (a factory of judges) they run in this one;
    ``on_judge`` is called with each judge's name as its run starts.
    ``progress`` draws a bar per judge on stderr (items judged, items/s, ETA). With ``ray``
    (a :class:`localjudge.cluster.RayConfig`) each judge in turn runs on that Ray cluster, its
    items spread over the cluster's actors, driven from this process.

    A finished bench in ``out_dir`` of other data, metrics or judges, or a judge's finished run
    of other settings, is refused (:class:`~localjudge.errors.UsageError`) unless
    ``overwrite``; the same bench again resumes or rewrites it (as :func:`eval_file` does).
    """
    options = BenchOptions.given(options, keywords)
    limit, metrics = options.limit, options.metrics
    labelled: dict[int, dict[str, Any]] = {}
    n_records = 0
    problems: list[str] = []
    for n, rec in enumerate(read_records(data)):
        if limit is not None and n >= limit:
            break
        n_records += 1
        if rec.data is None or "labels" not in rec.data:
            continue
        problem = label_problem(rec.data["labels"], n_pieces(rec.data))
        if problem is not None:
            problems.append(f"{item_where(rec.data, rec.index, rec.line)}: {problem}")
        else:
            labelled[rec.index] = canonical(rec.data["labels"])
    # checked before any judge runs: no wasted benchmark
    refuse_labels(problems, data, error=DataError)
    if not labelled:
        raise UsageError(
            f"{data} has no records with a 'labels' object", hint="see README, 'bench'"
        )
    if metrics is None:
        metrics = [m for m in METRICS if any(applicable(m, labels) for labels in labelled.values())]
    # a metric judges only the items whose labels it can be compared with: a claim-only item
    # (recall labels) costs no position or relevance call
    covered = {
        m: tuple(i for i, labels in labelled.items() if applicable(m, labels)) for m in metrics
    }
    names = [spec.name for spec in judges]
    if len(set(names)) != len(names):
        raise UsageError(f"judges repeated: {names}")
    with output_lock(out_dir):  # the judges' runs lock their own directories below it
        data_sha = file_sha256(data)
        if not options.overwrite:
            refuse_replacing(
                out_dir, _bench_differences(out_dir, data_sha, metrics, names), "bench"
            )
        runs: dict[str, dict[str, Any]] = {}
        rows_by_judge: dict[str, list[Any]] = {}
        for n, spec in enumerate(judges):
            if on_judge is not None:
                on_judge(spec.name)
            job = _Job(
                judge=spec,
                data=data,
                out_dir=out_dir / "judges" / f"{n}-{_safe(spec.name)}",
                bench=dataclasses.replace(options, metrics=tuple(metrics)),
                options=options.eval_options(only=covered, settings=spec.recorded()),
                progress_total=(
                    sum(map(len, covered.values())) / len(metrics) if options.progress else None
                ),
            )
            runs[spec.name] = _dispatch(job, open_judge, list(runs))
            rows_by_judge[spec.name] = list(read_results(job.out_dir / RESULTS.name))
        comparison = compare(labelled, rows_by_judge, metrics)
        report: BenchReport = {
            "format": BENCH.version,
            "data": str(data),
            "data_sha256": data_sha,
            "n_labelled": len(labelled),
            "metrics": list(metrics),
            "versions": versions(),
            "judges": {name: {**runs[name], "metrics": comparison[name]} for name in names},
            "judge_pairs": judges_agreement(rows_by_judge, metrics),
        }
        items = item_rows(labelled, rows_by_judge, metrics)
        bench_path = write_bench(out_dir, report, items)
        return BenchOutcome(bench_path, bench_path.with_name("bench_items.jsonl"), report)


def _bench_differences(
    out_dir: Path, data_sha256: str, metrics: Sequence[str], judges: Sequence[str]
) -> list[str]:
    """What differs between the finished bench in ``out_dir`` (if any) and this one."""
    path = out_dir / BENCH.name
    if not path.is_file():
        return []
    try:
        previous: Mapping[str, Any] = read_bench(path)
    except DataError:
        return ["an unreadable bench.json"]
    out = []
    if previous.get("data_sha256") != data_sha256:
        out.append("data (sha256)")
    if list(previous.get("metrics") or []) != list(metrics):
        out.append("metrics")
    if list(previous.get("judges") or {}) != list(judges):
        out.append("judges")
    return out


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(name).name)[:60]


def _dispatch(
    job: _Job, open_judge: JudgeFactory | None, finished: Sequence[str] = ()
) -> dict[str, Any]:
    """``job`` on its Ray cluster, with the given factory here, or else in a fresh process."""
    if job.bench.ray is not None:
        factory: JudgeFactory = job.bench.ray.open
        return _judge_job(job, factory)
    return _run_job(job, finished) if open_judge is None else _judge_job(job, open_judge)


def _run_job(job: _Job, finished: Sequence[str]) -> dict[str, Any]:
    """``job`` in a supervised child process (:mod:`localjudge.judge.isolation`); a library error
    there is raised here, a death by a signal is a :class:`JudgeDiedError` naming the judge,
    and an interrupt is a ``KeyboardInterrupt`` (the child keeps what it finished)."""
    ended = supervise(_worker, job)
    if ended.signal is not None:
        kept = f"the runs of {', '.join(finished)}, " if finished else ""
        partial = job.out_dir / f"{RESULTS.name}.partial"
        raise JudgeDiedError(
            death_line(
                ended,
                f"{kept}{partial} and the judge-call cache",
                who=f"the process of judge {job.judge.name}",
            ),
            exit_code=ended.code,
        )
    if ended.interrupted or ended.code == 130:
        raise KeyboardInterrupt
    result: dict[str, Any] | None = ended.value
    if result is None:
        raise InternalError(
            f"judge {job.judge.name}: its process ended with exit code {ended.code} and no result",
            hint="see the lines above; run again with LOCALJUDGE_DEBUG=1 for a traceback",
        )
    if "error" in result:
        exc_type = {
            c.__name__: c
            for c in (ModelError, ConstraintError, DataError, UsageError, CacheError, InternalError)
        }
        raise exc_type.get(result["error"]["type"], LocalJudgeError)(
            f"judge {job.judge.name}: {result['error']['message']}", hint=result["error"]["hint"]
        )
    return result


def _worker(job: _Job, reporter: Reporter) -> dict[str, Any]:
    """Runs in the judge's child process: the job, with errors returned rather than raised."""
    try:
        return _judge_job(job, open_judge, reporter)
    except LocalJudgeError as exc:
        return {"error": {"type": type(exc).__name__, "message": exc.message, "hint": exc.hint}}
    except Exception as exc:  # noqa: BLE001 (reported by the parent as one line)
        error = internal_error(exc)
        return {"error": {"type": "InternalError", "message": error.message, "hint": error.hint}}


@contextmanager
def _bar(job: _Job) -> Iterator[Callable[[Any], None] | None]:
    """A tqdm bar on stderr for one judge's run, named after the judge (none without a total)."""
    if job.progress_total is None:
        yield None
        return
    import sys  # noqa: PLC0415

    from tqdm import tqdm  # noqa: PLC0415

    from localjudge.console import BAR_FORMAT  # noqa: PLC0415

    step = 1.0 / max(len(job.bench.metrics or ()), 1)
    with tqdm(
        total=job.progress_total,
        desc=job.judge.name,
        unit="item",
        file=sys.stderr,
        dynamic_ncols=True,
        bar_format=BAR_FORMAT,
    ) as bar:
        yield lambda _result: bar.update(step)


def _judge_job(
    job: _Job, factory: JudgeFactory, reporter: Reporter | None = None
) -> dict[str, Any]:
    """Load the judge, run the eval, report load time, wall time and peak memory (see
    :mod:`localjudge.run.bench.memory` for what is measured). ``reporter``: the supervised child's
    record of the items in flight, for the crash line."""
    with PeakMemory() as memory, _bar(job) as on_bar:

        def on_result(res: Any) -> None:
            if on_bar is not None:
                on_bar(res)
            if reporter is not None:
                reporter.done(res.index, res.metric)

        start = time.perf_counter()
        judge = factory(job.judge)
        load_seconds = time.perf_counter() - start
        start = time.perf_counter()
        outcome = eval_file(
            job.data,
            job.out_dir,
            judge=judge,
            metrics=build_metrics(job.bench.metrics or (), job.bench.metric_settings),
            options=job.options,
            on_result=on_result,
            on_judging=reporter.judging if reporter is not None else None,
        )
        wall_seconds = time.perf_counter() - start
    return {
        "identity": judge.identity.as_dict(),
        "load_seconds": load_seconds,
        "wall_seconds": wall_seconds,
        "peak_rss_mb": memory.mb,
        "peak_rss_method": memory.method,
        "judge_calls": outcome.summary["run"]["judge_calls"],
        "cache_hits": outcome.summary["run"]["cache_hits"],
        "results": str(outcome.results_path),
    }
