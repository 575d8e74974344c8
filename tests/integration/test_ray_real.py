"""A real judge (SmolLM2) on a local Ray instance writes the rows of a local run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import ray

from localjudge.cluster import RAY_CHUNK_SIZE, open_ray_judge
from localjudge.judge.engine.prefix_file import PREFIX_DIR
from localjudge.metrics import ContextPosition, ContextRecall
from localjudge.run.evaluate.file_run import eval_file
from localjudge.run.settings import JudgeSettings, open_judge

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "rag.jsonl"
pytestmark = [pytest.mark.model, pytest.mark.ray, pytest.mark.allow_hosts(["127.0.0.1"])]


def comparable(path):
    """results.jsonl without what depends on the process's history: the seconds a call took and
    the prompt tokens it found already evaluated (llama.cpp's prefix cache)."""
    text = path.read_text("utf-8")
    text = re.sub(r'"seconds":[0-9.e-]+', '"seconds":_', text)
    return re.sub(r'"evaluated_prompt_tokens":[0-9]+', '"evaluated_prompt_tokens":_', text)


def test_smollm2_on_ray_matches_a_local_run(tmp_path, count_calls):
    metrics = [ContextPosition(), ContextRecall()]
    local_judge = open_judge(
        JudgeSettings(model="smollm2-135m", n_threads=1, cache=tmp_path / "a.sqlite")
    )
    local = eval_file(EXAMPLES, tmp_path / "local", judge=local_judge, metrics=metrics, limit=4)
    del local_judge  # one llama.cpp at a time on this machine
    # the local judge stored its instructions (one prefix per system text) beside its cache;
    # the actors store theirs there
    stored = sorted((tmp_path / PREFIX_DIR).glob("*.kv"))
    assert len(stored) == 2  # recall's system text and the passages' (position)
    cells = [path.read_bytes() for path in stored]
    for path in stored:
        path.unlink()

    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        judge = open_ray_judge(
            JudgeSettings(model="smollm2-135m", n_threads=1, cache=tmp_path / "b.sqlite"),
            actors=2,
            batch_size=2,
        )
        remote = eval_file(
            EXAMPLES,
            tmp_path / "ray",
            judge=judge,
            metrics=metrics,
            limit=4,
            chunk_size=RAY_CHUNK_SIZE,
        )
    finally:
        ray.shutdown()
    records = [json.loads(line) for line in EXAMPLES.read_text("utf-8").splitlines()][:4]
    # every call made on the workers, each cached by the driver
    [reasons] = {m.reasons for m in metrics}  # the metrics' default: the same for both
    assert judge.calls == count_calls(records, [m.name for m in metrics], reasons)
    # the actors', the same cells under the same keys
    assert [path.read_bytes() for path in stored] == cells
    assert comparable(remote.results_path) == comparable(local.results_path)
    assert '"score":null' not in remote.results_path.read_text("utf-8")
