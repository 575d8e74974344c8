"""eval_file(): a dataset file in, ``results.jsonl`` and ``summary.json`` out.

The one public function behind ``localjudge eval``. Results are streamed to
``results.jsonl.partial`` as chunks finish and renamed to ``results.jsonl`` when the run completes;
every judge call is in the cache the moment it returns, so an interrupted run, started again with
the same command, re-judges nothing it had finished.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localjudge.cache import CACHE_FILENAME, Cache, CachingJudge, default_cache_dir
from localjudge.dataset import LIST_FIELDS, Record, file_sha256, read_records
from localjudge.errors import (
    ConstraintError,
    DataError,
    InvalidItemError,
    LocalJudgeError,
    ModelError,
    UsageError,
)
from localjudge.items import ALIASES, FIELDS
from localjudge.judge import Judge
from localjudge.metrics import METRICS, Metric
from localjudge.results import FORMAT_VERSION, MetricSummary, dumps_row, result_row
from localjudge.runner import ItemResult, RecordLike, evaluate
from localjudge.versions import versions

RESULTS_FILE = "results.jsonl"
SUMMARY_FILE = "summary.json"


@dataclass(frozen=True)
class RunOutcome:
    """What an eval run wrote, and its summary."""

    results_path: Path
    summary_path: Path
    summary: dict[str, Any]
    failed_thresholds: list[str] = field(default_factory=list)


def read(data: Path, *, fmt: str | None, mapping: Mapping[str, str]) -> Iterator[Record]:
    """The dataset's records; a mapped contexts column is parsed as a list in CSV too."""
    extra = {mapping["retrieved_contexts"]} if "retrieved_contexts" in mapping else set()
    return read_records(data, fmt=fmt, list_fields=set(LIST_FIELDS) | extra)


def detect_metrics(
    data: Path, *, fmt: str | None = None, mapping: Mapping[str, str], limit: int | None
) -> list[str]:
    """Every metric whose required fields some record of the data has."""
    present: set[str] = set()
    for n, rec in enumerate(read(data, fmt=fmt, mapping=mapping)):
        if limit is not None and n >= limit:
            break
        if rec.data is None:
            continue
        for ours in FIELDS:
            names = [mapping.get(ours, ours), *(a for a, t in ALIASES.items() if t == ours)]
            if any(rec.data.get(name) not in (None, "", []) for name in names):
                present.add(ours)
    return [name for name, cls in METRICS.items() if set(cls.required) <= present]


def open_cache(cache: Path | None) -> Cache:
    """The SQLite cache at ``cache``: a file, or a directory to hold it (default: the user cache
    directory, or ``$LOCALJUDGE_CACHE_DIR``)."""
    path = cache if cache is not None else default_cache_dir()
    if path.is_dir() or path.suffix not in (".sqlite", ".sqlite3", ".db"):
        path = path / CACHE_FILENAME
    return Cache(path)


def eval_file(
    data: Path,
    out_dir: Path,
    *,
    judge: Judge,
    metrics: Sequence[Metric],
    mapping: Mapping[str, str] | None = None,
    fmt: str | None = None,
    limit: int | None = None,
    fail_under: Mapping[str, float] | None = None,
    settings: Mapping[str, Any] | None = None,
    on_result: Callable[[ItemResult], None] | None = None,
) -> RunOutcome:
    """Score ``data`` with ``metrics`` and write ``results.jsonl`` and ``summary.json`` to
    ``out_dir``. ``fail_under`` maps metric names to thresholds for their mean.

    Pass the metrics built on a :class:`CachingJudge` (and that judge) to cache and resume."""
    mapping = dict(mapping or {})
    unknown = set(fail_under or {}) - {m.name for m in metrics}
    if unknown:
        raise UsageError(
            f"--fail-under names metrics that are not run: {', '.join(sorted(unknown))}"
        )
    data_sha = file_sha256(data)
    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = out_dir / RESULTS_FILE
    partial = out_dir / (RESULTS_FILE + ".partial")
    tallies = {m.name: MetricSummary() for m in metrics}
    settings_by_metric = {m.name: m.settings() for m in metrics}
    n_items = calls = 0
    last_index = None
    with partial.open("w", encoding="utf-8", newline="\n") as f:
        for res in evaluate(
            _records(read(data, fmt=fmt, mapping=mapping), limit),
            metrics,
            mapping=mapping,
            on_result=on_result,
        ):
            row = result_row(res, judge.identity, settings_by_metric[res.metric])
            f.write(dumps_row(row) + "\n")
            f.flush()
            tallies[res.metric].add(row)
            n_items += res.index != last_index
            last_index = res.index
            calls += row["prompt_tokens"] is not None
    partial.replace(results_path)
    caching = judge if isinstance(judge, CachingJudge) else None
    metric_stats = {name: t.as_dict() for name, t in tallies.items()}
    summary: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "metrics": metric_stats,
        "run": {
            "data": str(data),
            "data_sha256": data_sha,
            "n_items": n_items,
            "judge": judge.identity.as_dict(),
            "settings": {
                **(settings or {}),
                "metrics": settings_by_metric,
                "limit": limit,
                "map": mapping,
            },
            "versions": versions(),
            "judge_calls": caching.calls if caching is not None else calls,
            "cache_hits": caching.hits if caching is not None else 0,
        },
    }
    summary_path = out_dir / SUMMARY_FILE
    tmp = summary_path.with_suffix(".json.tmp")
    tmp.write_text(
        json.dumps(summary, indent=2, ensure_ascii=False, allow_nan=False) + "\n", "utf-8"
    )
    tmp.replace(summary_path)
    failed = [
        f"{name} mean {metric_stats[name]['mean']} < {threshold}"
        for name, threshold in (fail_under or {}).items()
        if metric_stats[name]["mean"] is None or metric_stats[name]["mean"] < threshold
    ]
    return RunOutcome(results_path, summary_path, summary, failed)


def _records(records: Iterator[Record], limit: int | None) -> Iterator[RecordLike]:
    for n, rec in enumerate(records):
        if limit is not None and n >= limit:
            return
        if rec.error is not None or rec.data is None:
            where = f"line {rec.line}" if rec.line is not None else f"#{rec.index}"
            yield InvalidItemError(rec.error or "unreadable record", item_id=where)
        else:
            yield rec.data


# --------------------------------------------------------------------------- bench


@dataclass(frozen=True)
class JudgeSpec:
    """How to load one judge for a bench run (it runs in a process of its own)."""

    model: str | None
    n_ctx: int = 8192
    n_threads: int | None = None
    seed: int = 0
    cache: Path | None = None
    use_cache: bool = True

    @property
    def name(self) -> str:
        return self.model or "smollm2-135m"


@dataclass(frozen=True)
class BenchOutcome:
    """What a bench run wrote, and its report."""

    bench_path: Path
    items_path: Path
    report: dict[str, Any]


def bench_file(
    data: Path,
    out_dir: Path,
    *,
    judges: Sequence[JudgeSpec],
    metrics: Sequence[str] | None = None,
    limit: int | None = None,
    on_judge: Callable[[str], None] | None = None,
) -> BenchOutcome:
    """Run every judge on the labelled ``data`` and compare each with the human labels.

    Each judge runs in a fresh process, one after another (judges never share the cores), which
    also gives its own cold-start time and peak memory. Its results go to
    ``out_dir/judges/<n>-<name>/`` as an ordinary eval run; ``bench.json`` and
    ``bench_items.jsonl`` hold the comparison.
    """
    from localjudge import bench  # noqa: PLC0415

    labelled: dict[int, dict[str, Any]] = {}
    for n, rec in enumerate(read_records(data)):
        if (limit is not None and n >= limit) or rec.data is None or "labels" not in rec.data:
            continue
        contexts = rec.data.get("retrieved_contexts", rec.data.get("context"))
        n_pieces = len(contexts) if isinstance(contexts, list) else None
        problem = bench.label_problem(rec.data["labels"], n_pieces)
        if problem is not None:  # checked before any judge runs: no wasted benchmark
            where = f"line {rec.line}" if rec.line is not None else f"record #{rec.index}"
            raise DataError(f"{data}: {where}: {problem}", hint="fix the labels (README, 'bench')")
        labelled[rec.index] = dict(rec.data["labels"])
    if not labelled:
        raise UsageError(
            f"{data} has no records with a 'labels' object", hint="see README, 'bench'"
        )
    if metrics is None:
        metrics = [
            m for m in METRICS if any(bench.applicable(m, labels) for labels in labelled.values())
        ]
    names = [spec.name for spec in judges]
    if len(set(names)) != len(names):
        raise UsageError(f"judges repeated: {names}")
    runs: dict[str, dict[str, Any]] = {}
    rows_by_judge: dict[str, list[dict[str, Any]]] = {}
    for n, spec in enumerate(judges):
        if on_judge is not None:
            on_judge(spec.name)
        judge_dir = out_dir / "judges" / f"{n}-{_safe(spec.name)}"
        runs[spec.name] = _run_judge_process(spec, data, judge_dir, list(metrics), limit)
        with (judge_dir / RESULTS_FILE).open(encoding="utf-8") as f:
            rows_by_judge[spec.name] = [json.loads(line) for line in f]
    comparison = bench.compare(labelled, rows_by_judge, metrics)
    report: dict[str, Any] = {
        "format": bench.FORMAT_VERSION,
        "data": str(data),
        "data_sha256": file_sha256(data),
        "n_labelled": len(labelled),
        "metrics": list(metrics),
        "versions": versions(),
        "judges": {name: {**runs[name], "metrics": comparison[name]} for name in names},
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    bench_path = out_dir / "bench.json"
    bench_path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", "utf-8")
    items_path = out_dir / "bench_items.jsonl"
    with items_path.open("w", encoding="utf-8") as f:
        for row in bench.item_rows(labelled, rows_by_judge, metrics):
            f.write(dumps_row(row) + "\n")
    return BenchOutcome(bench_path, items_path, report)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(name).name)[:60]


def _run_judge_process(
    spec: JudgeSpec, data: Path, out_dir: Path, metrics: list[str], limit: int | None
) -> dict[str, Any]:
    import multiprocessing  # noqa: PLC0415

    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        result: dict[str, Any] = pool.apply(_judge_worker, (spec, data, out_dir, metrics, limit))
    if "error" in result:
        exc_type = {c.__name__: c for c in (ModelError, ConstraintError, DataError, UsageError)}
        raise exc_type.get(result["error"]["type"], LocalJudgeError)(
            f"judge {spec.name}: {result['error']['message']}", hint=result["error"]["hint"]
        )
    return result


def _judge_worker(
    spec: JudgeSpec, data: Path, out_dir: Path, metrics: list[str], limit: int | None
) -> dict[str, Any]:
    """Runs in the child process: load the judge, eval, report load time and peak memory."""
    import resource  # noqa: PLC0415
    import time  # noqa: PLC0415

    from localjudge.llama import load_judge  # noqa: PLC0415

    try:
        start = time.perf_counter()
        judge: Judge = load_judge(
            spec.model, n_ctx=spec.n_ctx, n_threads=spec.n_threads, seed=spec.seed
        )
        load_seconds = time.perf_counter() - start
        if spec.use_cache:
            judge = CachingJudge(judge, open_cache(spec.cache))
        built = [METRICS[m](judge) for m in metrics]
        start = time.perf_counter()
        outcome = eval_file(data, out_dir, judge=judge, metrics=built, limit=limit)
    except LocalJudgeError as exc:
        return {"error": {"type": type(exc).__name__, "message": exc.message, "hint": exc.hint}}
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "identity": judge.identity.as_dict(),
        "load_seconds": load_seconds,
        "wall_seconds": time.perf_counter() - start,
        "peak_rss_mb": peak_kb / 1024,
        "judge_calls": outcome.summary["run"]["judge_calls"],
        "cache_hits": outcome.summary["run"]["cache_hits"],
        "results": str(outcome.results_path),
    }
