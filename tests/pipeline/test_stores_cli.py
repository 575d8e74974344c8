"""The judges other tools keep, through the CLI: ``models list --found`` lists them with their
GGUF metadata and names what it skips, ``models add ollama:NAME --alias A`` registers one,
``models info`` and ``doctor`` say where a name resolved, a store file that changed after it was
registered is refused (exit 4, one line), and a judge with no fitted cut-offs is told so.

The stores are built in tmp_path around small GGUF files written here (no llama.cpp runs; the
judge of ``eval`` is the scripted one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from pipeline_rules import rule_reply
from store_layouts import hf_file, lmstudio_file, ollama_model
from test_models_cli import write_gguf

from localjudge import doctor
from localjudge.canonical import file_sha256
from localjudge.cli import main
from localjudge.judge.models.registry import resolve_model
from localjudge.testing import ScriptedJudge

LIB = ("registry.ollama.ai", "library")
RECORD = {"user_input": "q?", "retrieved_contexts": ["yes a."], "reference": "yes a."}


@pytest.fixture
def stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Empty stores in tmp_path (their tools' overrides; LM Studio's home), a registry and
    cache directory of this test's own."""
    home = tmp_path / "home"
    roots = {
        "ollama": tmp_path / "ollama",
        "hf": tmp_path / "hf",
        "lmstudio": home / ".lmstudio" / "models",
    }
    for root in roots.values():
        root.mkdir(parents=True)
    monkeypatch.setenv("OLLAMA_MODELS", str(roots["ollama"]))
    monkeypatch.setenv("HF_HUB_CACHE", str(roots["hf"]))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LOCALJUDGE_MODELS", str(tmp_path / "config" / "models.json"))
    monkeypatch.setenv("LOCALJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LOCALJUDGE_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    return roots


def invoke(*args: str, factory: Any = None, env: dict[str, str] | None = None) -> Result:
    obj = {"open_judge": factory} if factory is not None else None
    runner = CliRunner(env=env)
    return runner.invoke(main, list(args), obj=obj, catch_exceptions=False)


def ok(*args: str, factory: Any = None) -> Result:
    result = invoke(*args, factory=factory)
    assert result.exit_code == 0, result.stderr
    return result


def test_list_found_shows_each_judge_with_its_metadata_and_what_it_skips(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    chat = write_gguf(tmp_path / "chat.gguf")
    plain = write_gguf(tmp_path / "plain.gguf", chat_template=False, weights=8)
    ollama_model(stores["ollama"], (*LIB, "qwen2.5", "7b"), chat)
    ollama_model(
        stores["ollama"], (*LIB, "llava", "latest"), chat, extra_layers=(("adapter", b"x"),)
    )
    hf_file(stores["hf"], "org/judge-GGUF", "judge-q8_0.gguf", plain)
    hf_file(stores["hf"], "org/judge-GGUF", "judge-00001-of-00002.gguf", plain)
    lmstudio_file(stores["lmstudio"], "pub/judge-GGUF/judge.gguf", chat)
    lmstudio_file(stores["lmstudio"], "pub/judge-GGUF/new.gguf.part", chat)
    text = ok("models", "list", "--found").stdout.splitlines()
    size = f"{chat.stat().st_size / 1e9:.2f} GB"
    assert (
        f"ollama:qwen2.5:7b\tllama, 43 parameters, Q8_0, {size}, ctx 2048, chat template yes"
        in (text)
    )
    assert any(
        line.startswith("hf:org/judge-GGUF/judge-q8_0.gguf\tllama, 11 parameters")
        and line.endswith("chat template no")
        for line in text
    )
    assert any(line.startswith("lmstudio:pub/judge-GGUF/judge.gguf\tllama") for line in text)
    skipped = [line for line in text if line.startswith("skipped ")]
    assert len(skipped) == 3, text
    assert any("ollama:llava:latest: " in s and "adapter layer" in s for s in skipped)
    assert any("judge-00001-of-00002.gguf" in s and "split GGUF" in s for s in skipped)
    assert any("new.gguf.part" in s and "did not finish" in s for s in skipped)
    assert f"ollama: {stores['ollama']}" in text

    listed = json.loads(ok("models", "list", "--found", "--json").stdout)
    by_name = {j["name"]: j for j in listed["judges"]}
    assert set(by_name) == {
        "ollama:qwen2.5:7b",
        "hf:org/judge-GGUF/judge-q8_0.gguf",
        "lmstudio:pub/judge-GGUF/judge.gguf",
    }
    got = by_name["hf:org/judge-GGUF/judge-q8_0.gguf"]
    assert (got["store"], got["architecture"], got["parameters"]) == ("hf", "llama", 11)
    assert (got["quantization"], got["context_length"], got["chat_template"]) == (
        "Q8_0",
        2048,
        False,
    )
    assert got["size_bytes"] == plain.stat().st_size
    assert len(listed["skipped"]) == 3
    assert listed["roots"]["hf"] == [str(stores["hf"])]


def test_list_found_with_nothing_found(stores: dict[str, Path]) -> None:
    assert "no GGUF judge found" in ok("models", "list", "--found").stdout


def test_add_by_store_name_then_a_new_pull_is_refused(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    first = write_gguf(tmp_path / "first.gguf")
    manifest = ollama_model(stores["ollama"], (*LIB, "qwen2.5", "7b"), first)
    added = ok("models", "add", "ollama:qwen2.5:7b", "--alias", "q7")
    blob = stores["ollama"] / "blobs" / f"sha256-{file_sha256(first)}"
    assert f"added q7 -> {blob}" in added.stdout
    assert f"store: ollama:qwen2.5:7b ({manifest})" in added.stdout
    [entry] = json.loads((tmp_path / "config" / "models.json").read_text("utf-8"))["judges"]
    assert (entry["store"], entry["path"], entry["sha256"]) == (
        "ollama:qwen2.5:7b",
        str(blob),
        file_sha256(first),
    )
    assert "q7\tpresent" in ok("models").stdout
    info = json.loads(ok("models", "info", "q7", "--json").stdout)
    assert (info["alias"], info["store"], info["sha256_ok"]) == ("q7", "ollama:qwen2.5:7b", True)
    assert resolve_model("q7").path == blob

    # `ollama pull` again: the tag's manifest now names another blob
    second = write_gguf(tmp_path / "second.gguf", weights=9)
    ollama_model(stores["ollama"], (*LIB, "qwen2.5", "7b"), second)
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps(RECORD) + "\n", "utf-8")
    refused = invoke(
        "eval", str(data), "-m", "q7", "--no-cache", "-o", str(tmp_path / "o"),
        env={"LOCALJUDGE_IN_PROCESS": "1"},
    )  # fmt: skip
    assert refused.exit_code == 4
    errors = [line for line in refused.stderr.splitlines() if line.startswith("localjudge: error:")]
    assert len(errors) == 1, refused.stderr
    assert f"has sha256 {file_sha256(second)}, expected {file_sha256(first)}" in errors[0]
    assert "localjudge models add ollama:qwen2.5:7b --alias q7 --overwrite" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert json.loads(ok("models", "info", "q7", "--json").stdout)["sha256_ok"] is False


def test_info_and_doctor_say_where_a_name_resolved(stores: dict[str, Path], tmp_path: Path) -> None:
    model = write_gguf(tmp_path / "m.gguf")
    link = hf_file(stores["hf"], "org/judge-GGUF", "judge.gguf", model)
    lines = ok("models", "info", "hf:org/judge-GGUF/judge.gguf").stdout.splitlines()
    assert f"store: hf:org/judge-GGUF/judge.gguf ({link})" in lines
    assert f"path: {link.resolve()}" in lines
    assert "alias: (not registered)" in lines

    manifest = ollama_model(stores["ollama"], (*LIB, "judge", "latest"), model)
    check = doctor._judge_file("ollama:judge")  # the doctor's judge line (no llama.cpp here)
    assert check.status == "ok", check
    assert check.detail.startswith(f"ollama:judge: ollama:judge:latest via {manifest} -> ")
    assert check.detail.endswith("matches its store's digest")


def test_a_judge_without_fitted_cutoffs_is_told_so_and_recorded(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps(RECORD) + "\n", "utf-8")

    def factory(settings: Any) -> ScriptedJudge:
        return ScriptedJudge(rule_reply, model="mine")

    neutral = ok(
        "eval", str(data), "-m", "mine", "-o", str(tmp_path / "a"), "--no-cache", factory=factory
    )
    notes = [line for line in neutral.stderr.splitlines() if "no fitted cut-offs" in line]
    assert notes == [
        "localjudge: note: judge mine has no fitted cut-offs: its decisions use the neutral ones "
        "(the larger probability); fit them on your labels with `localjudge calibrate`, check "
        "them with `localjudge bench`"
    ]
    summary = json.loads((tmp_path / "a" / "summary.json").read_text("utf-8"))
    assert summary["run"]["settings"]["neutral_cutoffs"] is True
    quiet = ok(
        "eval",
        str(data),
        "-m",
        "mine",
        "-o",
        str(tmp_path / "q"),
        "-q",
        "--no-cache",
        factory=factory,
    )
    assert "no fitted cut-offs" not in quiet.stderr  # -q: recorded, not printed

    # the same judge with cut-offs of its own (the scripted judge's sha256 is 64 zeros)
    fitted = {"values": {"recall.supported": 0.4}, "source": "a test"}
    registry = tmp_path / "config" / "models.json"
    registry.parent.mkdir(parents=True, exist_ok=True)
    registry.write_text(json.dumps({"judges": [], "cutoffs": {"0" * 64: fitted}}), "utf-8")
    told = ok(
        "eval", str(data), "-m", "mine", "-o", str(tmp_path / "b"), "--no-cache", factory=factory
    )
    assert "no fitted cut-offs" not in told.stderr
    summary = json.loads((tmp_path / "b" / "summary.json").read_text("utf-8"))
    assert "neutral_cutoffs" not in summary["run"]["settings"]
