"""The bundled SmolLM2 GGUF judged through each store's name: Ollama's manifest and blob, the
Hugging Face cache's snapshot link and LM Studio's folder, built in a temporary directory
around one hard-linked copy of the file (as a user's store would hold it), then resolved,
loaded by llama.cpp and asked one real question. The identity stays the file's sha256 whatever
the name, and a store alias whose file changed is refused before anything loads."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from store_layouts import hf_file, lmstudio_file, ollama_model, place

from localjudge import ModelError, load_judge
from localjudge.decisions.shipped import read_shipped
from localjudge.judge.models.registry import builtin_registry, resolve_model
from localjudge.metrics import ContextPosition
from localjudge.run.evaluate.evaluation import score

pytestmark = pytest.mark.model

SMOLLM2 = next(j for j in builtin_registry() if j.alias == "smollm2-135m")
LIB = ("registry.ollama.ai", "library")
FILE = "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF/smollm2-135m-instruct-q4_1.gguf"
SPECS = {"ollama": "ollama:smollm2:135m", "hf": f"hf:{FILE}", "lmstudio": f"lmstudio:{FILE}"}
ITEM: dict[str, Any] = {
    "user_input": "Where is the Eiffel Tower?",
    "retrieved_contexts": ["The Eiffel Tower is in Paris.", "Bananas are yellow."],
    "reference": "The Eiffel Tower is in Paris.",
}


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory, isolated_env: Path) -> Iterator[Path]:
    """The three stores around one copy of SmolLM2 (hard links of it), found through each
    tool's override (LM Studio: its home); yields that copy."""
    tmp = tmp_path_factory.mktemp("stores")
    model = place(resolve_model("smollm2-135m").path, tmp / "smollm2.gguf")
    home = tmp / "home"
    ollama_model(tmp / "ollama", (*LIB, "smollm2", "135m"), model)
    org, repo, file = FILE.split("/")
    hf_file(tmp / "hf", f"{org}/{repo}", file, model)
    lmstudio_file(home / ".lmstudio" / "models", FILE, model)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OLLAMA_MODELS", str(tmp / "ollama"))
        mp.setenv("HF_HUB_CACHE", str(tmp / "hf"))
        mp.setenv("HOME", str(home))
        yield model


@pytest.mark.parametrize("store", list(SPECS))
def test_a_real_judge_call_through_each_stores_name(stores: Path, store: str) -> None:
    resolved = resolve_model(SPECS[store])
    assert resolved.origin is not None
    assert resolved.origin.store == store
    assert resolved.path.samefile(stores)
    judge = load_judge(SPECS[store], n_threads=1, cache=False)
    # the identity is the file's: the same sha256 as the bundled judge's, whatever the name
    assert judge.identity.sha256 == SMOLLM2.sha256
    result = score(ContextPosition(), judge, **ITEM)
    assert [v["index"] for v in result.verdicts] == [0, 1]
    assert 0.0 <= result.value <= 1.0
    assert result.stats is not None
    assert result.stats.completion_tokens > 0


def test_the_name_used_does_not_change_the_identity(stores: Path) -> None:
    by_name = load_judge(SPECS["ollama"], n_threads=1, cache=False)
    by_path = load_judge(str(resolve_model(SPECS["ollama"]).path), n_threads=1, cache=False)
    assert by_name.identity == by_path.identity


def test_eval_by_store_name_and_a_changed_store_file_refused(
    stores: Path,
    tmp_path: Path,
    cli: Callable[..., Any],
    one_error_line: Callable[..., str],
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps(ITEM) + "\n", "utf-8")
    out = tmp_path / "o"
    proc = cli("eval", str(data), "-m", SPECS["hf"], "--metric", "position", "-t", "1",
               "--no-cache", "-o", str(out))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    run = json.loads((out / "summary.json").read_text("utf-8"))["run"]
    assert run["judge"]["sha256"] == SMOLLM2.sha256
    # the judge is known by its file, not its name: a store's copy of SmolLM2 takes the
    # cut-offs the bundled one ships for position, and no neutral cut-off note is given
    ships = next(j for j in read_shipped().judges if j.alias == "smollm2-135m").kinds
    fitted = {k for k, v in ships.items() if k.startswith("position.") and v.status != "neutral"}
    assert fitted, "SmolLM2 ships no fitted position cut-off: this test then shows nothing"
    assert "no fitted cut-offs" not in proc.stderr
    assert "neutral_cutoffs" not in run["settings"]
    position = run["settings"]["metrics"]["position"]
    assert set(position["cutoffs"]) == fitted
    assert all(position["cutoffs_source"][k].startswith("built-in:") for k in fitted)

    registry = Path(os.environ["LOCALJUDGE_MODELS"])  # the isolated one: absent until written
    entry = {"alias": "mine", "store": SPECS["ollama"], "sha256": "0" * 64}
    registry.write_text(json.dumps({"judges": [entry]}), "utf-8")
    try:
        with pytest.raises(ModelError, match="expected 0000"):
            load_judge("mine", n_threads=1, cache=False)
        refused = cli("eval", str(data), "-m", "mine", "--no-cache", "-o", str(tmp_path / "x"))
        assert refused.returncode == 4
        one_error_line(refused, "expected " + "0" * 64)
        assert f"models add {SPECS['ollama']}" in refused.stderr
    finally:
        registry.unlink()
