"""eval_file on a local Ray instance (localjudge.cluster) gives a local run's rows and summary.

The workers run a scripted judge (a picklable factory); Ray's processes talk over loopback only,
so these tests allow sockets to 127.0.0.1 and nothing else.
"""

from __future__ import annotations

import functools
import json
import os
import re
import socket
from pathlib import Path

import pytest
from pipeline_rules import rule_reply

from localjudge.cache import Cache, CachingJudge
from localjudge.errors import ModelError
from localjudge.evaluation import eval_file
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance
from localjudge.settings import JudgeSettings
from localjudge.testing import ScriptedJudge

ray = pytest.importorskip("ray")  # the [ray] extra; installed for the suite

from localjudge.cluster import RAY_CHUNK_SIZE, open_ray_judge  # noqa: E402

pytestmark = pytest.mark.allow_hosts(["127.0.0.1"])

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

    def __init__(self, log, die_once=None, die_at=3):
        super().__init__(rule_reply, n_ctx=N_CTX, certain=True)
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
    assert judge.hits == part.calls > 0
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
