"""``localjudge models`` (list), ``models add``, ``models rm`` and ``models info``: the user
registry in a temporary file, metadata read from the bundled SmolLM2 GGUF and from tiny GGUF
files written here (no llama.cpp runs), and ``eval -m NAME`` using what was registered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest
from click.testing import CliRunner, Result
from pipeline_rules import rule_reply

from localjudge.canonical import file_sha256
from localjudge.cli import main
from localjudge.judge.models.ggufmeta import file_type_name, human_count
from localjudge.judge.models.registry import builtin_registry, resolve_model
from localjudge.run.settings import JudgeSettings
from localjudge.testing import ScriptedJudge

SMOLLM2 = next(j for j in builtin_registry() if j.alias == "smollm2-135m")


@pytest.fixture(autouse=True)
def registry_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user registry and cache directory of this test's own."""
    path = tmp_path / "config" / "models.json"
    monkeypatch.setenv("LOCALJUDGE_MODELS", str(path))
    monkeypatch.setenv("LOCALJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LOCALJUDGE_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)
    return path


@pytest.fixture(scope="module")
def smollm2() -> Path:
    return resolve_model("smollm2-135m").path


def write_gguf(path: Path, *, chat_template: bool = True, weights: int = 40) -> Path:
    """A small but valid GGUF file: llama architecture, context 2048, Q8_0, ``weights``+3
    weights in two tensors."""
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(2048)
    writer.add_file_type(int(gguf.LlamaFileType.MOSTLY_Q8_0))
    if chat_template:
        writer.add_chat_template("{% for m in messages %}{{ m.content }}{% endfor %}")
    writer.add_tensor("a", np.zeros((weights,), dtype=np.float32))
    writer.add_tensor("b", np.ones((3,), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def invoke(*args: str, factory: Any = None) -> Result:
    obj = {"open_judge": factory} if factory is not None else None
    return CliRunner().invoke(main, list(args), obj=obj, catch_exceptions=False)


def ok(*args: str, factory: Any = None) -> Result:
    result = invoke(*args, factory=factory)
    assert result.exit_code == 0, result.stderr
    return result


def info(model: str) -> dict[str, Any]:
    return json.loads(ok("models", "info", model, "--json").stdout)  # type: ignore[no-any-return]


def error_line(result: Result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("localjudge: error:")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


# ---------------------------------------------------------------- info


def test_info_of_the_built_in_default(smollm2: Path) -> None:
    got = info("smollm2-135m")
    # what the model card and the registry say of SmolLM2-135M-Instruct Q4_1
    assert (got["alias"], got["registry"], got["path"]) == (
        "smollm2-135m",
        "built-in",
        str(smollm2),
    )
    assert got["architecture"] == "llama"
    assert got["context_length"] == 8192
    assert got["chat_template"] is True
    assert got["quantization"] == "Q4_1"
    assert got["size_label"] == "135M"
    assert human_count(got["parameters"]) == "135M"
    assert got["size_bytes"] == smollm2.stat().st_size
    assert got["sha256"] == got["expected_sha256"] == SMOLLM2.sha256
    assert got["sha256_ok"] is True


def test_info_says_what_ships_for_the_judge(smollm2: Path) -> None:
    from localjudge.decisions import read_shipped  # noqa: PLC0415

    entry = next(j for j in read_shipped().judges if j.alias == "smollm2-135m")
    got = info("smollm2-135m")["ships"]
    assert got["kinds"] == entry.model_dump(mode="json")["kinds"]
    assert got["calibrated_by_you"] == []
    assert got["protocol"] == entry.model_dump(mode="json")["protocol"]
    lines = ok("models", "info", "smollm2-135m").stdout.splitlines()
    first = lines.index(f"ships: {entry.built}")
    for n, (kind, k) in enumerate(entry.kinds.items(), start=first + 1):
        assert lines[n].startswith(f"  {kind}: {k.status}")
        assert lines[n].endswith(k.why)


def test_info_names_the_protocols_even_of_a_fit_a_run_would_refuse(
    tmp_path: Path, registry_file: Path
) -> None:
    from localjudge.decisions import Cutoffs, store_cutoffs  # noqa: PLC0415
    from localjudge.metrics.protocols import current_protocol  # noqa: PLC0415

    path = write_gguf(tmp_path / "tiny.gguf")
    sha = file_sha256(path)
    store_cutoffs(sha, Cutoffs.from_json({"recall.supported": 0.3}, "mine"))
    data = json.loads(registry_file.read_text("utf-8"))
    data["cutoffs"][sha]["protocol"] = {"name": "1", "fingerprint": "ab" * 32}
    registry_file.write_text(json.dumps(data), "utf-8")
    got = info(str(path))
    assert got["protocol"] == current_protocol().as_json()
    assert got["ships"]["calibrated_by_you"] == ["recall.supported"]
    assert got["ships"]["calibrated_protocol"] == {"name": "1", "fingerprint": "ab" * 32}
    lines = ok("models", "info", str(path)).stdout.splitlines()
    now = current_protocol()
    assert f"protocol: 1 ({now.fingerprint[:12]}), the prompts this release asks by" in lines
    assert (
        "  recall.supported: replaced by your own (localjudge calibrate, protocol 1 (abababababab))"
    ) in lines


def test_info_of_a_path_in_text(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "tiny.gguf", chat_template=False)
    lines = ok("models", "info", str(path)).stdout.splitlines()
    assert "alias: (not registered)" in lines
    assert f"path: {path}" in lines
    assert f"sha256: {file_sha256(path)}" in lines
    assert "architecture: llama" in lines
    assert "trained context: 2048" in lines
    assert "chat template: no" in lines
    assert "quantization: Q8_0" in lines
    assert "parameters: 43 (43)" in lines
    assert f"file size: 0.0 MB ({path.stat().st_size} bytes)" in lines


# ---------------------------------------------------------------- add, list, eval -m


def test_add_registers_path_sha256_and_metadata_and_eval_uses_it(
    smollm2: Path, registry_file: Path, tmp_path: Path
) -> None:
    result = ok("models", "add", str(smollm2), "--alias", "mine")
    assert f"added mine -> {smollm2}" in result.stdout
    [entry] = json.loads(registry_file.read_text("utf-8"))["judges"]
    assert entry == {
        "alias": "mine",
        "path": str(smollm2),
        "sha256": SMOLLM2.sha256,
        "instruct": True,
        "description": "Smollm2 135M 8k Lc100K Mix1 Ep2, Q4_1, 135M parameters, ctx 8192",
    }
    listed = ok("models").stdout
    assert "mine\tpresent\tSmollm2 135M" in listed
    assert listed == ok("models", "list").stdout
    got = info("mine")
    assert (got["registry"], got["sha256_ok"]) == ("user", True)

    resolved = resolve_model("mine")
    assert (resolved.path, resolved.expected_sha256) == (smollm2, SMOLLM2.sha256)
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"user_input": "q?", "retrieved_contexts": ["yes a."],
                                "reference": "yes a."}) + "\n", "utf-8")  # fmt: skip
    seen: list[JudgeSettings] = []

    def factory(settings: JudgeSettings) -> ScriptedJudge:
        seen.append(settings)
        return ScriptedJudge(rule_reply, model=settings.name)

    ok("eval", str(data), "-m", "mine", "-o", str(tmp_path / "o"), "-q", "--no-cache",
       factory=factory)  # fmt: skip
    assert [s.model for s in seen] == ["mine"]


def test_a_registered_file_that_changed_is_refused_by_eval(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "tiny.gguf")
    ok("models", "add", str(path), "--alias", "tiny", "--description", "a tiny one")
    assert "tiny\tpresent\ta tiny one" in ok("models").stdout
    registered = file_sha256(path)
    with path.open("ab") as f:
        f.write(b"\0" * 32)
    data = tmp_path / "d.jsonl"
    data.write_text('{"user_input": "q", "retrieved_contexts": ["a"], "reference": "a"}\n')
    result = CliRunner(env={"LOCALJUDGE_IN_PROCESS": "1"}).invoke(
        main, ["eval", str(data), "-m", "tiny", "--no-cache", "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 4
    assert f"model file {path} has sha256 {file_sha256(path)}, expected {registered}" in (
        error_line(result)
    )
    assert info("tiny")["sha256_ok"] is False


def test_an_existing_alias_needs_overwrite(tmp_path: Path, registry_file: Path) -> None:
    first, second = write_gguf(tmp_path / "one.gguf"), write_gguf(tmp_path / "two.gguf", weights=8)
    ok("models", "add", str(first), "--alias", "judge")
    again = invoke("models", "add", str(second), "--alias", "judge")
    assert again.exit_code == 2
    assert f"alias 'judge' is already registered (user: {first})" in error_line(again)
    assert "--overwrite" in again.stderr
    ok("models", "add", str(second), "--alias", "judge", "--overwrite")
    [entry] = json.loads(registry_file.read_text("utf-8"))["judges"]
    assert (entry["path"], entry["sha256"]) == (str(second), file_sha256(second))


def test_add_force_the_old_spelling_of_overwrite_is_refused(
    tmp_path: Path, registry_file: Path
) -> None:
    first, second = write_gguf(tmp_path / "one.gguf"), write_gguf(tmp_path / "two.gguf", weights=8)
    ok("models", "add", str(first), "--alias", "judge")
    old = invoke("models", "add", str(second), "--alias", "judge", "--force")
    assert old.exit_code == 2
    assert "No such option: --force" in old.stderr
    [entry] = json.loads(registry_file.read_text("utf-8"))["judges"]
    assert entry["path"] == str(first)


def test_a_built_in_alias_is_shadowed_only_with_overwrite_and_comes_back_on_rm(
    tmp_path: Path,
) -> None:
    path = write_gguf(tmp_path / "tiny.gguf")
    refused = invoke("models", "add", str(path), "--alias", "smollm2-135m")
    assert refused.exit_code == 2
    assert "already registered (built-in" in error_line(refused)
    ok("models", "add", str(path), "--alias", "smollm2-135m", "--overwrite")
    assert resolve_model("smollm2-135m").path == path
    ok("models", "rm", "smollm2-135m")
    assert resolve_model("smollm2-135m").path != path
    assert info("smollm2-135m")["registry"] == "built-in"


def test_add_keeps_the_other_entries_of_a_hand_written_registry(
    tmp_path: Path, registry_file: Path
) -> None:
    registry_file.parent.mkdir(parents=True)
    other = {"alias": "by-hand", "path": "/models/x.gguf", "license": "MIT"}
    registry_file.write_text(json.dumps({"judges": [other], "note": "mine"}), "utf-8")
    ok("models", "add", str(write_gguf(tmp_path / "t.gguf")), "--alias", "t")
    data = json.loads(registry_file.read_text("utf-8"))
    assert data["note"] == "mine"
    assert [j["alias"] for j in data["judges"]] == ["by-hand", "t"]
    assert data["judges"][0] == other


# ---------------------------------------------------------------- rm


def test_rm_removes_a_user_alias_and_refuses_built_in_and_unknown_ones(
    tmp_path: Path, registry_file: Path
) -> None:
    path = write_gguf(tmp_path / "tiny.gguf")
    ok("models", "add", str(path), "--alias", "tiny")
    assert f"removed tiny ({path})" in ok("models", "rm", "tiny").stdout
    assert json.loads(registry_file.read_text("utf-8"))["judges"] == []
    assert path.is_file()  # the file itself is kept
    assert "tiny" not in ok("models").stdout

    builtin = invoke("models", "rm", "gemma3-270m")
    assert builtin.exit_code == 2
    assert "'gemma3-270m' is a built-in judge and cannot be removed" in error_line(builtin)
    unknown = invoke("models", "rm", "tiny")
    assert unknown.exit_code == 4
    assert f"no user alias 'tiny' in {registry_file}" in error_line(unknown)


# ---------------------------------------------------------------- bad files and names


def test_a_non_gguf_file_is_a_model_error_naming_it(tmp_path: Path, registry_file: Path) -> None:
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"this is not a model, just text\n" * 10)
    for args in (["add", str(garbage), "--alias", "g"], ["info", str(garbage)]):
        result = invoke("models", *args)
        assert result.exit_code == 4
        assert f"model file {garbage} is not a GGUF file" in error_line(result)
    assert not registry_file.exists()


@pytest.mark.parametrize("keep", [300, 24, -24])
def test_a_truncated_gguf_is_a_model_error_naming_it(
    tmp_path: Path, registry_file: Path, keep: int
) -> None:
    whole = write_gguf(tmp_path / "whole.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[:keep])
    result = invoke("models", "add", str(cut), "--alias", "cut")
    assert result.exit_code == 4
    assert f"model file {cut} is truncated" in error_line(result)
    assert not registry_file.exists()


def test_a_truncated_copy_of_the_bundled_model_is_refused(smollm2: Path, tmp_path: Path) -> None:
    cut = tmp_path / "smol-cut.gguf"
    with smollm2.open("rb") as f:
        cut.write_bytes(f.read(smollm2.stat().st_size - 4096))
    result = invoke("models", "info", str(cut))
    assert result.exit_code == 4
    assert f"model file {cut} is truncated" in error_line(result)


def test_a_missing_file_is_a_model_error(tmp_path: Path) -> None:
    result = invoke("models", "add", str(tmp_path / "nope.gguf"), "--alias", "nope")
    assert result.exit_code == 4
    assert f"model file {tmp_path / 'nope.gguf'} does not exist" in error_line(result)


@pytest.mark.parametrize("alias", ["a b", "../x", "-x", "", "x" * 65])
def test_bad_aliases_are_usage_errors(tmp_path: Path, alias: str) -> None:
    path = write_gguf(tmp_path / "t.gguf")
    result = invoke("models", "add", str(path), "--alias", alias)
    assert result.exit_code == 2
    assert "is not allowed" in error_line(result)


@pytest.mark.parametrize(
    ("n", "text"), [(43, "43"), (1_500, "1.5K"), (134_515_008, "135M"), (2_600_000_000, "2.6B")]
)
def test_human_count(n: int, text: str) -> None:
    assert human_count(n) == text


def test_file_type_names() -> None:
    assert file_type_name(int(gguf.LlamaFileType.MOSTLY_Q4_K_M)) == "Q4_K_M"
    assert file_type_name(int(gguf.LlamaFileType.ALL_F32)) == "F32"
    assert file_type_name(9999) == "file type 9999"
