"""The stored instruction prefix: a file is trusted only whole, for exactly its key; and the
points at which a request's evaluation is cut (where a stored or kept prefix may end)."""

from __future__ import annotations

from pathlib import Path

import pytest

from localjudge.judge.engine.prefix_file import MAGIC, MAX_FILES, PrefixStore
from localjudge.judge.engine.values import GRID, EngineRequest
from localjudge.judge.protocol import JudgeRequest
from localjudge.judge.schemas import StrictModel

IDENTITY = {"sha256": "a" * 64, "backend": "llama-cpp-python 0.3.36", "settings": {"ngl": 0}}
TOKENS = list(range(300))
PAYLOAD = bytes(range(256)) * 40


def test_a_saved_prefix_loads_back_exactly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = PrefixStore(tmp_path, IDENTITY)
    assert store.load(TOKENS) is None  # missing: silent
    store.save(TOKENS, PAYLOAD)
    assert store.load(TOKENS) == PAYLOAD
    assert PrefixStore(tmp_path, IDENTITY).load(TOKENS) == PAYLOAD  # another process
    assert [p.name for p in tmp_path.iterdir()] == [store.path(TOKENS).name]  # no temporary left
    assert store.path(TOKENS).read_bytes().startswith(MAGIC)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b[:-1] + bytes([b[-1] ^ 1]),  # one bit of the payload
        lambda b: b"GGUF" + b[4:],  # not ours
        lambda b: b[: len(MAGIC)] + b"\xff\xff\x00\x00" + b[len(MAGIC) + 4 :],  # header size
        lambda b: b"",
    ],
)
def test_a_damaged_file_is_ignored_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: object
) -> None:
    store = PrefixStore(tmp_path, IDENTITY)
    store.save(TOKENS, PAYLOAD)
    path = store.path(TOKENS)
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    assert store.load(TOKENS) is None
    assert store.load(TOKENS) is None
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1  # once per process, however often it is asked
    assert str(path) in lines[0]
    store.save(TOKENS, PAYLOAD)  # what the engine does next
    assert store.load(TOKENS) == PAYLOAD


def test_another_model_setting_or_prefix_never_reads_the_file(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path, IDENTITY)
    store.save(TOKENS, PAYLOAD)
    for identity in (
        {**IDENTITY, "sha256": "b" * 64},
        {**IDENTITY, "backend": "llama-cpp-python 0.3.37"},
        {**IDENTITY, "settings": {"ngl": -1}},
    ):
        assert PrefixStore(tmp_path, identity).load(TOKENS) is None
    assert store.load([*TOKENS[:-1], 7]) is None
    # a file renamed to another key's name is refused for its header
    other = PrefixStore(tmp_path, {**IDENTITY, "sha256": "c" * 64})
    store.path(TOKENS).rename(other.path(TOKENS))
    assert other.load(TOKENS) is None


def test_old_files_are_pruned(tmp_path: Path) -> None:
    for i in range(MAX_FILES + 5):
        PrefixStore(tmp_path, {**IDENTITY, "n": i}).save(TOKENS, b"x")
    assert len(list(tmp_path.glob("*.kv"))) == MAX_FILES


def test_a_store_that_cannot_be_written_costs_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    PrefixStore(blocker / "sub", IDENTITY).save(TOKENS, PAYLOAD)  # no exception
    assert PrefixStore(blocker / "sub", IDENTITY).load(TOKENS) is None


def test_requests_are_cut_at_their_instructions_shared_part_or_a_grid() -> None:
    marked = EngineRequest(tokens=list(range(500)), fixed=200, shared=350, grammar="", max_tokens=1)
    assert marked.points() == [200, 350]
    plain = EngineRequest(tokens=list(range(500)), fixed=200, grammar="", max_tokens=1)
    assert plain.points() == [200, *range(200 + GRID, 500, GRID)]
    assert all(p < 500 for p in plain.points())  # at least one token is left to evaluate
    assert EngineRequest(tokens=[1, 2], fixed=0, grammar="", max_tokens=1).points() == []


def test_branch_points_cut_a_request_too() -> None:
    branched = EngineRequest(
        tokens=list(range(500)),
        fixed=200,
        shared=250,
        branches=(250, 320),
        grammar="",
        max_tokens=1,
    )
    assert branched.points() == [200, 250, 320]
    assert EngineRequest(
        tokens=list(range(500)), fixed=200, branches=(300,), grammar="", max_tokens=1
    ).points() == sorted({200, 300, *range(200 + GRID, 500, GRID)})


def test_branch_points_must_be_positive_and_ascending() -> None:
    messages = [{"role": "user", "content": "QUESTION: q\nPASSAGE: p\nIs it?"}]
    assert JudgeRequest(messages, StrictModel, branch_chars=(12, 23)).branch_chars == (12, 23)
    for bad in [(0, 5), (12, 12), (23, 12), (-1,)]:
        with pytest.raises(ValueError, match="branch_chars"):
            JudgeRequest(messages, StrictModel, branch_chars=bad)
