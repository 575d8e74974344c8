"""Store names resolved without the stores: Ollama's manifests and blobs, the Hugging Face
cache's snapshots and LM Studio's folders built in tmp_path around tiny GGUF headers, resolved,
listed and refused as a user's store would make them (``localjudge.judge.models.external``), and
``resolve_model`` taking them with the file's sha256 as the judge's identity."""

from __future__ import annotations

from pathlib import Path

import pytest
from store_layouts import hf_file, lmstudio_file, ollama_model, tiny_gguf

from localjudge.canonical import file_sha256
from localjudge.errors import ModelError
from localjudge.judge.models.external import (
    find_models,
    is_store_spec,
    resolve_store,
    store_roots,
)
from localjudge.judge.models.registry import resolve_model

LIB = ("registry.ollama.ai", "library")


@pytest.fixture
def stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The three stores' roots in tmp_path, as each tool's override (LM Studio: its home)."""
    home = tmp_path / "home"
    roots = {
        "ollama": tmp_path / "ollama",
        "hf": tmp_path / "hf" / "hub",
        "lmstudio": home / ".lmstudio" / "models",
    }
    for root in roots.values():
        root.mkdir(parents=True)
    monkeypatch.setenv("OLLAMA_MODELS", str(roots["ollama"]))
    monkeypatch.setenv("HF_HUB_CACHE", str(roots["hf"]))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("LOCALJUDGE_MODELS", str(tmp_path / "models.json"))
    monkeypatch.setenv("LOCALJUDGE_CACHE_DIR", str(tmp_path / "cache"))
    return roots


# ------------------------------------------------------------------------------ spellings


@pytest.mark.parametrize(
    ("spec", "store"),
    [
        ("ollama:qwen2.5:7b", True),
        ("hf:org/repo/f.gguf", True),
        ("lmstudio:p/r/f.gguf", True),
        ("C:\\models\\x.gguf", False),
        ("c:/models/x.gguf", False),
        ("D:x.gguf", False),
        ("hf:", False),
        ("Ollama:qwen", False),
        ("./ollama:qwen", False),
        ("qwen2.5-coder-1.5b", False),
    ],
)
def test_only_the_three_words_are_prefixes(spec: str, store: bool) -> None:
    assert is_store_spec(spec) is store


def test_a_windows_path_is_a_path_not_a_store(stores: dict[str, Path]) -> None:
    with pytest.raises(ModelError, match="neither a registered alias nor an existing file"):
        resolve_model("C:\\models\\x.gguf")


# ---------------------------------------------------------------------------------- roots


def test_the_roots_follow_each_tools_override() -> None:
    env = {"OLLAMA_MODELS": "/o", "HF_HUB_CACHE": "/h", "HF_HOME": "/ignored"}
    assert store_roots("ollama", env, Path("/u"), "Linux") == [Path("/o")]
    assert store_roots("hf", env, Path("/u"), "Linux") == [Path("/h")]
    assert store_roots("hf", {"HF_HOME": "/hh"}, Path("/u"), "Linux") == [Path("/hh/hub")]
    xdg = {"XDG_CACHE_HOME": "/x"}
    assert store_roots("hf", xdg, Path("/u"), "Linux") == [Path("/x/huggingface/hub")]


@pytest.mark.parametrize("system", ["Linux", "Darwin", "Windows"])
def test_the_documented_defaults(system: str) -> None:
    home = Path("/u")
    ollama = [home / ".ollama" / "models"]
    if system == "Linux":  # the install script's service keeps them there
        ollama.append(Path("/usr/share/ollama/.ollama/models"))
    assert store_roots("ollama", {}, home, system) == ollama
    assert store_roots("hf", {}, home, system) == [home / ".cache" / "huggingface" / "hub"]
    assert store_roots("lmstudio", {}, home, system) == [
        home / ".lmstudio" / "models",
        home / ".cache" / "lm-studio" / "models",
    ]


def test_lmstudio_reads_its_home_pointer_and_downloads_folder(tmp_path: Path) -> None:
    lm_home = tmp_path / "elsewhere"
    lm_home.mkdir()
    (tmp_path / ".lmstudio-home-pointer").write_text(f"{lm_home}\n")
    (lm_home / "settings.json").write_text('{"downloadsFolder": "/big/disk/models"}')
    assert store_roots("lmstudio", {}, tmp_path, "Linux") == [
        Path("/big/disk/models"),
        lm_home / "models",
        tmp_path / ".cache" / "lm-studio" / "models",
    ]


# --------------------------------------------------------------------------------- Ollama


def test_ollama_names_as_ollama_spells_them(stores: dict[str, Path], tmp_path: Path) -> None:
    root = stores["ollama"]
    files = {k: tiny_gguf(tmp_path / f"{k}.gguf", k) for k in ("lib", "latest", "user", "hf")}
    ollama_model(root, (*LIB, "qwen2.5", "7b"), files["lib"])
    ollama_model(root, (*LIB, "qwen2.5", "latest"), files["latest"])
    ollama_model(root, ("registry.ollama.ai", "user", "judge", "latest"), files["user"])
    ollama_model(root, ("hf.co", "Org", "Repo-GGUF", "Q4_K_M"), files["hf"])
    cases = {
        "ollama:qwen2.5:7b": ("lib", "qwen2.5:7b"),
        "ollama:qwen2.5": ("latest", "qwen2.5:latest"),
        "ollama:user/judge": ("user", "user/judge:latest"),
        "ollama:hf.co/Org/Repo-GGUF:Q4_K_M": ("hf", "hf.co/Org/Repo-GGUF:Q4_K_M"),
        "ollama:QWEN2.5:7B": ("lib", "qwen2.5:7b"),  # Ollama's names ignore case
    }
    for spec, (which, name) in cases.items():
        found = resolve_store(spec)
        digest = file_sha256(files[which])
        assert found.path == root / "blobs" / f"sha256-{digest}", spec
        assert found.digest == digest
        assert found.spec == f"ollama:{name}"
    manifest = resolve_store("ollama:qwen2.5:7b").where
    assert manifest == root / "manifests" / "registry.ollama.ai" / "library" / "qwen2.5" / "7b"


def test_ollama_skips_a_projector_and_refuses_an_adapter(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    root = stores["ollama"]
    model = tiny_gguf(tmp_path / "m.gguf", "vision")
    ollama_model(root, (*LIB, "llava", "7b"), model, extra_layers=(("projector", b"GGUFproj"),))
    ollama_model(root, (*LIB, "tuned", "1b"), model, extra_layers=(("adapter", b"GGUFlora"),))
    found = resolve_store("ollama:llava:7b")
    assert found.path.read_bytes() == model.read_bytes()
    assert [n.split(" ")[0] for n in found.notes] == ["projector"]
    with pytest.raises(ModelError, match="adapter layer") as refused:
        resolve_store("ollama:tuned:1b")
    assert "merged" in refused.value.hint


def test_ollama_refuses_a_missing_an_unfinished_and_a_non_gguf_blob(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    root = stores["ollama"]
    gone = tiny_gguf(tmp_path / "gone.gguf", "gone")
    ollama_model(root, (*LIB, "gone", "latest"), gone, blob=False)
    with pytest.raises(ModelError, match=r"names blob sha256-.*which is not in") as missing:
        resolve_store("ollama:gone")
    assert "ollama pull gone:latest" in missing.value.hint
    (root / "blobs" / f"sha256-{file_sha256(gone)}-partial").write_bytes(b"GG")
    with pytest.raises(ModelError, match="download that did not finish"):
        resolve_store("ollama:gone")
    text = tmp_path / "text.bin"
    text.write_text("{{ .Prompt }}")
    ollama_model(root, (*LIB, "text", "latest"), text)
    with pytest.raises(ModelError, match="is not a GGUF file"):
        resolve_store("ollama:text")


def test_an_unknown_ollama_name_names_the_root_and_what_is_there(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    ollama_model(stores["ollama"], (*LIB, "qwen2.5", "7b"), tiny_gguf(tmp_path / "a.gguf"))
    with pytest.raises(ModelError) as missing:
        resolve_model("ollama:llama3")
    assert missing.value.message == f"ollama:llama3 is not in {stores['ollama']}"
    assert "found there: ollama:qwen2.5:7b" in missing.value.hint
    assert missing.value.exit_code == 4


@pytest.mark.parametrize("name", ["a/b/c/d", "qwen@sha256:abc", "../x", "x:"])
def test_names_ollama_would_not_take_are_refused(stores: dict[str, Path], name: str) -> None:
    with pytest.raises(ModelError):
        resolve_store(f"ollama:{name}")


# ---------------------------------------------------------------------- Hugging Face cache


def test_hf_resolves_the_main_snapshot_and_a_revision(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    root = stores["hf"]
    old = tiny_gguf(tmp_path / "old.gguf", "old")
    new = tiny_gguf(tmp_path / "new.gguf", "new")
    hf_file(root, "Org/Repo-GGUF", "judge-q4.gguf", old, commit="1" * 40, main=False)
    hf_file(root, "Org/Repo-GGUF", "judge-q4.gguf", new, commit="2" * 40)
    repo = root / "models--Org--Repo-GGUF"
    found = resolve_store("hf:Org/Repo-GGUF/judge-q4.gguf")
    assert found.path == repo / "blobs" / file_sha256(new)  # the link followed
    assert found.where == repo / "snapshots" / ("2" * 40) / "judge-q4.gguf"
    assert found.digest == file_sha256(new)
    for spec in ("hf:Org/Repo-GGUF/judge-q4.gguf@1111", "hf:Org/Repo-GGUF@1111/judge-q4.gguf"):
        assert resolve_store(spec).digest == file_sha256(old)
    assert resolve_store("hf:Org/Repo-GGUF/judge-q4.gguf@main").digest == file_sha256(new)
    with pytest.raises(ModelError, match="no snapshot 'v9'") as missing:
        resolve_store("hf:Org/Repo-GGUF/judge-q4.gguf@v9")
    assert "111111111111" in missing.value.hint


def test_hf_a_file_in_a_folder_and_one_only_in_another_snapshot(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    root = stores["hf"]
    hf_file(root, "o/r", "q8/judge.gguf", tiny_gguf(tmp_path / "a.gguf", "a"), commit="c" * 40)
    assert resolve_store("hf:o/r/q8/judge.gguf").spec == "hf:o/r/q8/judge.gguf"
    hf_file(root, "o/r", "other.gguf", tiny_gguf(tmp_path / "b.gguf", "b"), commit="d" * 40)
    (root / "models--o--r" / "refs" / "main").write_text("c" * 40)
    with pytest.raises(ModelError, match=r"other\.gguf is not in snapshot") as elsewhere:
        resolve_store("hf:o/r/other.gguf")
    assert "dddddddddddd (add @REV)" in elsewhere.value.hint


def test_hf_refuses_a_split_an_unfinished_and_a_projector(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    root = stores["hf"]
    part = tiny_gguf(tmp_path / "p.gguf", "part")
    hf_file(root, "o/big-GGUF", "big-00001-of-00003.gguf", part)
    with pytest.raises(ModelError, match="one part of a split GGUF") as split:
        resolve_store("hf:o/big-GGUF/big-00001-of-00003.gguf")
    assert "llama-gguf-split --merge" in split.value.hint
    with pytest.raises(ModelError, match="multimodal projector"):
        resolve_store("hf:o/big-GGUF/mmproj-f16.gguf")
    link = hf_file(root, "o/late-GGUF", "late.gguf", tiny_gguf(tmp_path / "l.gguf", "late"))
    blob = link.resolve()
    blob.rename(blob.with_name(blob.name + ".incomplete"))  # the link now leads nowhere
    with pytest.raises(ModelError, match="download did not finish"):
        resolve_store("hf:o/late-GGUF/late.gguf")


# ----------------------------------------------------------------------------- LM Studio


def test_lmstudio_resolves_and_refuses(stores: dict[str, Path], tmp_path: Path) -> None:
    root = stores["lmstudio"]
    model = tiny_gguf(tmp_path / "m.gguf", "lm")
    lmstudio_file(root, "pub/Repo-GGUF/judge-Q4_K_M.gguf", model)
    found = resolve_store("lmstudio:pub/Repo-GGUF/judge-Q4_K_M.gguf")
    assert (found.path, found.digest) == (root / "pub/Repo-GGUF/judge-Q4_K_M.gguf", None)
    lmstudio_file(root, "pub/Repo-GGUF/late.gguf.part", model)
    with pytest.raises(ModelError, match=r"late\.gguf is a download that did not finish"):
        resolve_store("lmstudio:pub/Repo-GGUF/late.gguf")
    with pytest.raises(ModelError, match="is not an LM Studio file name"):
        resolve_store("lmstudio:judge.gguf")


def test_lmstudio_in_its_configured_folder(stores: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "disk" / "models"
    settings = stores["lmstudio"].parent / "settings.json"
    settings.write_text(f'{{"downloadsFolder": "{folder}"}}')
    lmstudio_file(folder, "p/r/f.gguf", tiny_gguf(tmp_path / "f.gguf"))
    assert resolve_store("lmstudio:p/r/f.gguf").path == folder / "p/r/f.gguf"


# ------------------------------------------------------------------------------- listing


def test_find_models_lists_each_store_and_names_what_it_skips(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    model = tiny_gguf(tmp_path / "m.gguf", "m")
    ollama_model(stores["ollama"], (*LIB, "qwen2.5", "7b"), model)
    ollama_model(
        stores["ollama"], (*LIB, "tuned", "latest"), model, extra_layers=(("adapter", b"x"),)
    )
    hf_file(stores["hf"], "o/r-GGUF", "judge.gguf", model)
    hf_file(stores["hf"], "o/r-GGUF", "j-00001-of-00002.gguf", model)
    late = tiny_gguf(tmp_path / "l", "l")
    hf_file(stores["hf"], "o/late-GGUF", "late.gguf", late, finished=False)
    lmstudio_file(stores["lmstudio"], "p/r/judge.gguf", model)
    lmstudio_file(stores["lmstudio"], "p/r/late.gguf.download", model)
    (stores["lmstudio"] / "p" / "r" / "README.md").write_text("not a model")
    found = find_models()
    assert sorted(m.spec for m in found.models) == [
        "hf:o/r-GGUF/judge.gguf",
        "lmstudio:p/r/judge.gguf",
        "ollama:qwen2.5:7b",
    ]
    skipped = {s.spec: s.reason for s in found.skipped}
    assert "adapter layer" in skipped["ollama:tuned:latest"]
    assert "split GGUF" in skipped["hf:o/r-GGUF/j-00001-of-00002.gguf"]
    [late] = [r for s, r in skipped.items() if s.startswith("hf:o/late-GGUF blob")]
    assert "did not finish" in late
    assert "did not finish" in skipped["lmstudio:p/r/late.gguf.download"]
    assert len(skipped) == 4
    assert found.roots == {k: [v] for k, v in stores.items()}
    assert all(m.path.is_file() for m in found.models)


def test_find_models_with_no_store_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"OLLAMA_MODELS": str(tmp_path / "no"), "HF_HUB_CACHE": str(tmp_path / "no")}
    monkeypatch.setenv("HOME", str(tmp_path))
    found = find_models(env)
    assert (found.models, found.skipped) == ([], [])
    assert found.roots == {"ollama": [], "hf": [], "lmstudio": []}


# ---------------------------------------------------------------- resolve_model and aliases


def test_resolve_model_keeps_the_file_and_where_it_was_named(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    model = tiny_gguf(tmp_path / "m.gguf", "m")
    manifest = ollama_model(stores["ollama"], (*LIB, "judge", "latest"), model)
    resolved = resolve_model("ollama:judge")
    assert resolved.alias is None
    assert resolved.path.read_bytes() == model.read_bytes()
    # Ollama files a blob under its sha256: a blob that does not match it is refused at load
    assert resolved.expected_sha256 == file_sha256(model)
    assert resolved.origin is not None
    assert (resolved.origin.spec, resolved.origin.where) == ("ollama:judge:latest", manifest)
    assert "fetch ollama:judge:latest again" in resolved.mismatch_hint()
    lmstudio_file(stores["lmstudio"], "p/r/m.gguf", model)
    assert resolve_model("lmstudio:p/r/m.gguf").expected_sha256 is None


def test_a_store_folder_closed_to_the_user_is_not_searched(
    stores: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the Linux service's /usr/share/ollama is often closed to users: a stat there fails
    ollama_model(stores["ollama"], (*LIB, "judge", "latest"), tiny_gguf(tmp_path / "m.gguf"))
    closed = stores["ollama"]
    real_is_dir, real_exists = Path.is_dir, Path.exists

    def refuse(real):
        def check(self: Path) -> bool:
            if self == closed or closed in self.parents:
                raise PermissionError(13, "Permission denied", str(self))
            return bool(real(self))

        return check

    monkeypatch.setattr(Path, "is_dir", refuse(real_is_dir))
    monkeypatch.setattr(Path, "exists", refuse(real_exists))
    assert find_models().roots["ollama"] == []
    with pytest.raises(ModelError, match=f"ollama:judge is not in {closed}"):
        resolve_store("ollama:judge")
