"""Items/s of `eval --ray` for 1, 2 and 4 local Ray actors, and whether the rows match.

Usage: python benchmarks/speed/ray_actors.py [--address ADDRESS] [--limit N] [--actors 1 2 4]

Without --address a local Ray instance is started on this machine; with one (`auto`,
`ray://HEAD:10001`) the same command measures a real cluster. Each run judges the examples with
the default judge (SmolLM2) and one thread per actor, cache off, and its rows are compared with
the first run's (seconds and evaluated_prompt_tokens aside). On a 2-core machine expect no
speed-up: the point is correctness, and the same command on a cluster.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

import ray

from localjudge.cluster import RAY_CHUNK_SIZE, open_ray_judge
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance
from localjudge.run.evaluate.file_run import eval_file
from localjudge.run.settings import JudgeSettings

ROOT = Path(__file__).resolve().parents[2]


def comparable(path: Path) -> str:
    text = re.sub(r'"seconds":[0-9.e-]+', '"seconds":_', path.read_text("utf-8"))
    return re.sub(r'"evaluated_prompt_tokens":[0-9]+', '"evaluated_prompt_tokens":_', text)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", default=None)
    parser.add_argument("--data", type=Path, default=ROOT / "examples" / "rag.jsonl")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    if args.address:
        ray.init(address=args.address, log_to_driver=False)
    else:
        ray.init(num_cpus=max(args.actors), include_dashboard=False, log_to_driver=False)
    metrics = [ContextRecall(), ContextPosition(), ContextRelevance()]
    first = None
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.actors:
            judge = open_ray_judge(JudgeSettings(n_threads=1, use_cache=False), actors=n)
            start = time.perf_counter()
            outcome = eval_file(
                args.data,
                Path(tmp) / f"actors-{n}",
                judge=judge,
                metrics=metrics,
                limit=args.limit,
                chunk_size=RAY_CHUNK_SIZE,
            )
            seconds = time.perf_counter() - start
            items = outcome.summary["run"]["n_items"]
            rows = comparable(outcome.results_path)
            first = first or rows
            same = "same rows" if rows == first else "ROWS DIFFER"
            print(
                f"{n} actor(s): {items} items x {len(metrics)} metrics in {seconds:.1f} s, "
                f"{items / seconds:.2f} items/s, {same}"
            )
    ray.shutdown()


if __name__ == "__main__":
    main()
