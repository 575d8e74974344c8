"""The Qwen2.5-Coder judges, from their real chunk packages: each is joined into the session's
cache directory to the sha256 and size the registry expects; the 0.5B (an instruct model,
prompted through its chat template) answers one real constrained judge call. The 1.5B is only
joined and checked, never loaded (1.1 GB)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from localjudge import ContextPosition, load_judge
from localjudge.canonical import file_sha256
from localjudge.judge.models.registry import builtin_registry, chunks_of, locate, model_sha256

pytestmark = pytest.mark.model

BUILTIN = {j.alias: j for j in builtin_registry()}
SMALL = "qwen2.5-coder-0.5b"
LARGE = "qwen2.5-coder-1.5b"
ITEM = {
    "user_input": "Where is the Eiffel tower?",
    "retrieved_contexts": [
        "The Eiffel tower stands in Paris, on the Champ de Mars.",
        "Bananas are rich in potassium.",
    ],
    "reference": "The Eiffel tower is in Paris.",
}


@pytest.fixture(scope="module")
def qwen(isolated_env: Path) -> Any:
    # one thread: the machine is shared, and one call is all this module makes
    return load_judge(SMALL, n_threads=1, cache=False)


def test_the_small_qwen_is_joined_to_its_sha256(qwen: Any, isolated_env: Path) -> None:
    judge = BUILTIN[SMALL]
    path = qwen.model.path
    assert path == isolated_env / "models" / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    assert path.stat().st_size == 491_400_064 == sum(c.size or 0 for c in chunks_of(judge))
    expected = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    assert file_sha256(path) == expected == judge.sha256 == qwen.sha256
    assert qwen.identity.model == SMALL
    assert qwen.identity.settings["chat_template"] is True


def test_the_small_qwen_answers_a_constrained_call(qwen: Any, check_call: Any) -> None:
    out = check_call(qwen, ContextPosition(reasons=True), ITEM)  # reasons: off by default
    assert all(g.stats.prompt_tokens > 0 for g in out.generations)
    assert len(out.result.verdicts) == 2
    assert all("reason" in v for v in out.result.verdicts)


def test_the_large_qwen_is_joined_to_its_sha256_and_size(isolated_env: Path) -> None:
    judge = BUILTIN[LARGE]
    path, note = locate(judge)
    assert (path, note) == (isolated_env / "models" / judge.file, "")
    assert path is not None
    try:
        assert path.stat().st_size == 1_117_320_768
        expected = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
        assert file_sha256(path) == expected == judge.sha256 == model_sha256(path)
        with path.open("rb") as f:
            assert f.read(4) == b"GGUF"
    finally:
        path.unlink()  # 1.1 GB the rest of the session does not need
