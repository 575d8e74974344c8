"""eval_file on a local Ray instance (localjudge.cluster) gives a local run's rows and summary.

The workers run a scripted judge (a picklable factory); Ray's processes talk over loopback only,
so these tests allow sockets to 127.0.0.1 and nothing else.
"""

from __future__ import annotations

import functools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import ray
from click.testing import CliRunner
from pipeline_rules import rule_reply

from localjudge.cli import main
from localjudge.cluster import RAY_CHUNK_SIZE, RayConfig, open_ray_judge
from localjudge.errors import ModelError
from localjudge.judge.cache.caching import CachingJudge
from localjudge.judge.cache.database import Cache, open_cache
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance
from localjudge.run.bench.runner import bench_file
from localjudge.run.evaluate.file_run import eval_file
from localjudge.run.settings import JudgeSettings
from localjudge.testing import ScriptedJudge

pytestmark = [pytest.mark.ray, pytest.mark.allow_hosts(["127.0.0.1"])]

HERE = Path(__file__).parent
N_CTX = 2000


def records():
    good = [
        {
            "id": f"g{i}",
            "user_input": f"Question {i}?",
            "retrieved_contexts": [f"yes fact {i}.", "bananas", f"yes more {i}."][: 1 + i % 3],
            "reference": f"yes fact {i}. Something else {i}.",
            "response": f"yes fact {i}.",
        }
        for i in range(14)
    ]
    long = {
        "id": "long",
        "user_input": "Too long?",
        "retrieved_contexts": ["yes " + "word " * 3000, "yes short."],
        "reference": "yes short.",
        "response": "yes short.",
    }
    lines = [json.dumps(r) for r in good[:5]]
    lines += ['{"id": "broken", "user_input": ', json.dumps(long), ""]
    lines += [json.dumps({"id": "noref", "user_input": "q", "retrieved_contexts": ["yes"]})]
    lines += [json.dumps(r) for r in good[5:]]
    return "\n".join(lines) + "\n"


METRICS = [ContextRecall(), ContextPosition(), ContextRelevance()]


class RecordingJudge(ScriptedJudge):
    """The rule judge, appending one line per model call to ``log`` (calls made on workers);
    with ``die_once`` the worker process exits at its ``die_at``-th call, once per marker file."""

    def __init__(self, log, die_once=None, die_at=3, model="scripted"):
        super().__init__(rule_reply, n_ctx=N_CTX, certain=True, model=model)
        self.log = Path(log)
        self.die_once = Path(die_once) if die_once else None
        self.die_at = die_at

    def generate(self, prompt, schema):
        if self.die_once is not None and len(self.calls) + 1 == self.die_at:
            try:
                self.die_once.touch(exist_ok=False)
            except FileExistsError:
                pass
            else:
                os._exit(1)  # the actor dies mid-batch
        gen = super().generate(prompt, schema)
        with self.log.open("a", encoding="utf-8") as f:
            f.write(json.dumps(prompt[-1]["content"][-80:]) + "\n")
        return gen


@pytest.fixture(scope="module")
def cluster():
    # the workers import this module and pipeline_rules by name, as the driver does
    paths = [str(HERE), str(HERE.parent.parent), os.environ.get("PYTHONPATH", "")]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
    )
    yield
    ray.shutdown()


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text(records(), encoding="utf-8")
    return path


def local_run(data, out, cache, **kwargs):
    judge = CachingJudge(ScriptedJudge(rule_reply, n_ctx=N_CTX, certain=True), Cache(cache))
    return eval_file(data, out, judge=judge, metrics=METRICS, truncate=True, **kwargs), judge


def ray_run(data, out, cache, worker, actors=2, sha256=None, **kwargs):
    judge = open_ray_judge(
        JudgeSettings(cache=cache, n_threads=1),
        worker=worker,
        sha256=sha256,
        actors=actors,
        batch_size=4,
    )
    outcome = eval_file(
        data,
        out,
        judge=judge,
        metrics=METRICS,
        truncate=True,
        chunk_size=RAY_CHUNK_SIZE,
        **kwargs,
    )
    return outcome, judge


def untimed(path):
    """results.jsonl's bytes with the one field that varies between runs (seconds) blanked."""
    return re.sub(r'"seconds":[0-9.e-]+', '"seconds":_', path.read_text("utf-8"))


def logged(log):
    return log.read_text("utf-8").splitlines() if log.exists() else []


def test_ray_run_writes_a_local_runs_files(cluster, tmp_path, data):
    local, local_judge = local_run(data, tmp_path / "local", tmp_path / "a.sqlite")
    log = tmp_path / "calls.log"
    worker = functools.partial(RecordingJudge, log)
    remote, judge = ray_run(data, tmp_path / "ray", tmp_path / "b.sqlite", worker)

    assert untimed(remote.results_path) == untimed(local.results_path)
    rows = [json.loads(line) for line in remote.results_path.read_text("utf-8").splitlines()]
    assert {r["id"] for r in rows if r["error"]} == {"line 6", "noref"}
    assert any(r["details"] and r["details"].get("truncated") for r in rows)  # retried trimmed
    assert len(rows) == len({(r["index"], r["metric"]) for r in rows}) == 17 * 3
    local_summary = json.loads(local.summary_path.read_text("utf-8"))
    assert json.loads(remote.summary_path.read_text("utf-8")) == local_summary
    # every call ran on a worker once, and the driver cached each
    assert len(logged(log)) == judge.calls == local_judge.calls > 0

    # a rerun is answered by the driver's cache: nothing goes out
    again, judge2 = ray_run(data, tmp_path / "ray", tmp_path / "b.sqlite", worker)
    assert judge2.calls == 0
    assert len(logged(log)) == local_judge.calls
    assert untimed(again.results_path) == untimed(local.results_path)


def test_cached_calls_are_not_sent(cluster, tmp_path, data):
    local, local_judge = local_run(data, tmp_path / "local", tmp_path / "c.sqlite")
    _, part = local_run(data, tmp_path / "part", tmp_path / "shared.sqlite", limit=4)
    log = tmp_path / "calls.log"
    remote, judge = ray_run(
        data, tmp_path / "ray", tmp_path / "shared.sqlite", functools.partial(RecordingJudge, log)
    )
    # every call the first four items made is found in the cache; the only other hits are
    # those a local run has too (an item trimmed to fit asks again what already fitted)
    assert part.calls > 0
    assert judge.hits == part.calls + local_judge.hits
    assert len(logged(log)) == judge.calls == local_judge.calls - part.calls
    assert untimed(remote.results_path) == untimed(local.results_path)


def test_a_killed_actor_loses_nothing(cluster, tmp_path, data):
    local, local_judge = local_run(data, tmp_path / "local", tmp_path / "a.sqlite")
    log, marker = tmp_path / "calls.log", tmp_path / "died"
    worker = functools.partial(RecordingJudge, log, die_once=marker, die_at=3)
    remote, judge = ray_run(data, tmp_path / "ray", tmp_path / "b.sqlite", worker)
    assert marker.exists()  # an actor did die, mid-batch
    assert untimed(remote.results_path) == untimed(local.results_path)
    # the driver stored each call once; only the dead actor's unfinished batch was redone
    assert judge.calls == local_judge.calls
    assert local_judge.calls <= len(logged(log)) < local_judge.calls + 4


class BlockingJudge(RecordingJudge):
    """A recording judge whose ``block_at``-th call (on one actor, once per ``reached`` marker)
    creates ``reached`` and then waits, up to a minute, for ``release``, and ends its process:
    the run cannot end before the test has interrupted it, however loaded the machine is."""

    def __init__(self, log, reached, release, block_at=3):
        super().__init__(log)
        self.reached = Path(reached)
        self.release = Path(release)
        self.block_at = block_at

    def generate(self, prompt, schema):
        if len(self.calls) + 1 == self.block_at:
            try:
                self.reached.touch(exist_ok=False)
            except FileExistsError:
                pass
            else:
                deadline = time.monotonic() + 60
                while not self.release.exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
                # the blocked call never completes: a late line in the log (an actor of the
                # stopped job outliving its driver) would be counted as the rerun's call
                os._exit(1)
        return super().generate(prompt, schema)


DRIVER = """
import functools, sys
from pathlib import Path
import ray
sys.path[:0] = [{here!r}]
import test_ray as t
ray.init(address={address!r}, log_to_driver=False, configure_logging=False)
log, data, out, cache, reached, release = (Path(p) for p in sys.argv[1:7])
t.ray_run(data, out, cache, functools.partial(t.BlockingJudge, log, reached, release))
"""


def test_ctrl_c_on_the_driver_stops_and_leaves_a_resumable_run(cluster, tmp_path, data):
    """Ctrl-C while an actor is inside a call: the driver stops with KeyboardInterrupt, never
    exit 0 and never a finished results.jsonl (the trigger is the blocked call, not a race
    with the end of the run), and the rerun sends out only what was missing."""
    local, local_judge = local_run(data, tmp_path / "local", tmp_path / "a.sqlite")
    log, out, cache = tmp_path / "calls.log", tmp_path / "ray", tmp_path / "b.sqlite"
    reached, release = tmp_path / "reached", tmp_path / "release"
    address = ray.get_runtime_context().gcs_address
    script = DRIVER.format(here=str(HERE), address=address)
    args = [str(p) for p in (log, data, out, cache, reached, release)]
    driver = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # a test run started in the background inherits an ignored SIGINT, and so would the
        # driver: it then ignores the Ctrl-C and runs to its end (exit 0)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )
    try:
        deadline = time.monotonic() + 180
        while not reached.exists() and time.monotonic() < deadline and driver.poll() is None:
            time.sleep(0.05)
        assert reached.exists(), driver.communicate(timeout=60)[0] if driver.poll() else "late"
        assert driver.poll() is None, driver.communicate()[0]
        driver.send_signal(signal.SIGINT)
        output, _ = driver.communicate(timeout=60)  # stops while its actor is still blocked
    finally:
        release.touch()
        if driver.poll() is None:
            driver.kill()
            driver.communicate()
    assert driver.returncode != 0, output
    assert "KeyboardInterrupt" in output
    assert not (out / "results.jsonl").exists()  # nothing passed off as a finished run
    with open_cache(cache) as stored:
        kept = len(stored)
    assert kept < local_judge.calls  # the blocked call, at least, was never made
    time.sleep(1)  # the stopped job's actors exit; their calls are not counted below
    before = len(logged(log))

    resumed, judge = ray_run(data, out, cache, functools.partial(RecordingJudge, log))
    # what was kept is found; the other hits are a local run's too (a trimmed item's retry)
    assert judge.hits == kept + local_judge.hits
    assert judge.calls == local_judge.calls - kept  # only what was missing went out
    assert len(logged(log)) - before == judge.calls
    assert untimed(resumed.results_path) == untimed(local.results_path)


def test_a_worker_with_another_model_file_is_refused(cluster, tmp_path, data):
    worker = functools.partial(RecordingJudge, tmp_path / "calls.log")
    with pytest.raises(ModelError) as info:
        ray_run(data, tmp_path / "ray", tmp_path / "b.sqlite", worker, sha256="f" * 64)
    message = str(info.value)
    assert socket.gethostname() in message
    assert "node " in message
    assert "scripted" in message  # the file (the scripted judge's name for its model)
    assert "0" * 64 in message
    assert "f" * 64 in message
    assert not (tmp_path / "ray" / "results.jsonl").exists()


def worker_for(log, settings):
    """What a worker builds from the driver's settings in the CLI and bench tests."""
    return RecordingJudge(log, model=settings.name)


def test_eval_cli_with_ray(cluster, tmp_path, data):
    common = ["eval", str(data), "-t", "1", "-q", "--truncate"]

    def local_judge(settings):
        judge = worker_for(tmp_path / "local.log", settings)
        return CachingJudge(judge, open_cache(settings.cache))

    runner = CliRunner()
    local = runner.invoke(
        main,
        [*common, "-o", str(tmp_path / "local"), "--cache", str(tmp_path / "a.sqlite")],
        obj={"open_judge": local_judge},
    )
    assert local.exit_code == 0, local.output
    log = tmp_path / "ray.log"
    remote = runner.invoke(
        main,
        [
            *common,
            "-o",
            str(tmp_path / "ray"),
            "--cache",
            str(tmp_path / "b.sqlite"),
            "--ray",
            "--ray-actors",
            "2",
        ],
        obj={"ray_worker": functools.partial(worker_for, log)},
    )
    assert remote.exit_code == 0, remote.output
    for name in ("results.jsonl", "summary.json"):
        assert untimed(tmp_path / "ray" / name) == untimed(tmp_path / "local" / name)
    assert len(logged(log)) == len(logged(tmp_path / "local.log")) > 0


def test_ray_options_need_ray(tmp_path, data):
    result = CliRunner().invoke(main, ["eval", str(data), "--ray-actors", "2"])
    assert result.exit_code == 2
    assert "need --ray" in result.output


LABELLED = [
    {
        "id": f"l{i}",
        "user_input": f"Labelled {i}?",
        "retrieved_contexts": [f"yes fact {i}.", "bananas"],
        "reference": f"yes fact {i}. Other {i}.",
        "response": f"yes fact {i}.",
        "labels": {
            "recall": [0.5, 1.0][i % 2],
            "relevant": [True, i % 3 == 0],
            "levels": ["high", ["none", "low"][i % 2]],
        },
    }
    for i in range(6)
]


def untimed_metrics(metrics):
    timing = {"tokens_per_s", "seconds_per_item"}
    return {m: {k: v for k, v in r.items() if k not in timing} for m, r in metrics.items()}


def test_bench_with_ray_gives_the_same_agreement(cluster, tmp_path):
    data = tmp_path / "labelled.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in LABELLED), "utf-8")
    specs = [JudgeSettings(model=m, use_cache=False, n_threads=1) for m in ("one", "two")]
    log = tmp_path / "calls.log"
    local = bench_file(
        data, tmp_path / "local", judges=specs, open_judge=functools.partial(worker_for, log)
    )
    n_local = len(logged(log))
    remote = bench_file(
        data,
        tmp_path / "ray",
        judges=specs,
        ray=RayConfig(actors=2, worker=functools.partial(worker_for, log)),
    )
    assert len(logged(log)) == 2 * n_local > 0  # every call of both judges ran on the workers
    for name in ("one", "two"):
        a, b = local.report["judges"][name], remote.report["judges"][name]
        assert untimed_metrics(b["metrics"]) == untimed_metrics(a["metrics"])
        assert b["identity"] == a["identity"]
        assert b["judge_calls"] == a["judge_calls"]
    assert remote.report["judge_pairs"] == local.report["judge_pairs"]
    assert remote.items_path.read_text("utf-8") == local.items_path.read_text("utf-8")
