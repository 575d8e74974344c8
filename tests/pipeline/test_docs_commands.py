"""The README and docs/ as a newcomer uses them: every command works as written, every link lands.

Every line of every ```bash block in README.md, CONTRIBUTING.md, models/README.md and docs/*.md
is either run here (the cheap ones: no model, no network, no install) and must exit 0, or
skipped with a reason from :data:`SKIPS`. A command that is neither fails the test, so a new
command in the docs gets a decision. The model-running commands are covered elsewhere: CI runs
the README's main command and its test command (``.ci/run``), and tests/integration runs the
real judge. Every relative link must point at a file that exists, and every ``#anchor`` at a
heading of that file (GitHub's anchors).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from localjudge.cli import main
from localjudge.data.item import make_item
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted(
    [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "models" / "README.md",
        *(ROOT / "docs").glob("*.md"),
    ]
)
FENCE = re.compile(r"^```(\w*)\s*$")


def blocks(path: Path, language: str) -> Iterator[str]:
    """The text of each fenced block of that language, in order."""
    inside, lines = False, None
    for line in path.read_text("utf-8").splitlines():
        if line.startswith("```"):
            if not inside:
                fence = FENCE.match(line)
                lines = [] if fence and fence.group(1) == language else None
            elif lines is not None:
                yield "\n".join(lines)
            inside = not inside
        elif inside and lines is not None:
            lines.append(line)


def commands(path: Path) -> list[list[str]]:
    """The commands of the file's bash blocks, split as the shell would (comments dropped,
    continuation lines joined, ``a && b`` as two commands)."""
    found = []
    for block in blocks(path, "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            while words:
                cut = words.index("&&") if "&&" in words else len(words)
                found.append(words[:cut])
                words = words[cut + 1 :]
    return [argv for argv in found if argv]


ALL = sorted({(str(p.relative_to(ROOT)), shlex.join(argv)) for p in DOCS for argv in commands(p)})

# ------------------------------------------------------------------------------ what runs

#: the built-in judge whose GGUF file is one file in an installed package: `models info` reads
#: its metadata without joining anything (a chunked judge's first use joins 0.5 to 1.1 GB)
SMALL_JUDGE = "smollm2-135m"


def cheap(argv: list[str]) -> bool:
    """Commands that need no model, no network and no install, run here."""
    if argv[0] != "localjudge":
        return False
    args = argv[1:]
    if "--help" in args or "--show-config" in args:
        return True
    if args in (["models"], ["models", "list"], ["models", "list", "--found"]):
        return True
    if args == ["models", "info", SMALL_JUDGE]:
        return True
    return bool(args) and args[0] == "cache" and args[1:2] != ["clear"]


#: what is not run, and why; the first predicate that matches a command names its reason
SKIPS: list[tuple[Callable[[list[str]], bool], str]] = [
    (lambda a: a[0] == "make", "installs packages or runs the suite itself: CI runs them"),
    (lambda a: "pip" in a, "installs packages (network, minutes)"),
    (lambda a: a[0] == "ray", "starts a Ray cluster"),
    (lambda a: "--ray" in a, "judges on a Ray cluster (tests/pipeline/test_ray.py covers it)"),
    (
        lambda a: (
            a[:2] in (["localjudge", "eval"], ["localjudge", "bench"], ["localjudge", "calibrate"])
        ),
        "runs a judge model (CI runs the README's main command; tests/integration the rest)",
    ),
    (lambda a: a[:2] == ["localjudge", "doctor"], "loads the judge and makes a real call"),
    (
        lambda a: a[:2] == ["localjudge", "models"] and a[2:3] in (["add"], ["rm"], ["info"]),
        "names an example file or alias that is not on this machine",
    ),
    (lambda a: a[:3] == ["localjudge", "cache", "clear"], "deletes the cache (asks first)"),
]


def skip_reason(argv: list[str]) -> str | None:
    return next((why for match, why in SKIPS if match(argv)), None)


def test_the_docs_have_commands_both_run_and_skipped() -> None:
    # the extraction itself: a broken parser that finds nothing would pass every test below
    argvs = [shlex.split(c) for _, c in ALL]
    assert ["localjudge", "eval", "examples/rag.jsonl", "-o", "runs/example"] in argvs
    assert ["make", "check"] in argvs
    assert sum(cheap(a) for a in argvs) >= 10


@pytest.mark.parametrize(("doc", "command"), ALL)
def test_every_docs_command_is_run_or_skipped_with_a_reason(doc: str, command: str) -> None:
    argv = shlex.split(command)
    assert cheap(argv) or skip_reason(argv), (
        f"{doc}: `{command}` is neither run nor skipped: add it to cheap() or SKIPS"
    )


@pytest.mark.parametrize(("doc", "command"), [(d, c) for d, c in ALL if cheap(shlex.split(c))])
def test_the_cheap_docs_commands_exit_0(doc: str, command: str, tmp_path, monkeypatch) -> None:
    # a fresh user: an empty cache, registry and model stores, the examples in the cwd
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    env = {
        "LOCALJUDGE_CACHE_DIR": str(tmp_path / "cache"),
        "LOCALJUDGE_MODELS": str(tmp_path / "models.json"),
        "HOME": str(tmp_path / "home"),
        "OLLAMA_MODELS": str(tmp_path / "ollama"),
        "HF_HUB_CACHE": str(tmp_path / "hf"),
        "HF_HOME": str(tmp_path / "hf-home"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "xdg-config"),
    }
    result = CliRunner().invoke(main, shlex.split(command)[1:], env=env)
    assert result.exit_code == 0, f"{doc}: `{command}`: {result.output}"


def test_ci_runs_the_readmes_fresh_machine_commands() -> None:
    # the README's two set-up commands are what .ci/run runs: install and the main command,
    # then the checks; a README that drifts from CI fails here
    readme = commands(ROOT / "README.md")
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    main_command = ["localjudge", "eval", "examples/rag.jsonl", "-o", "runs/example"]
    for argv in (["make", "install"], main_command, ["make", "check"]):
        assert argv in readme, argv
        assert shlex.join(argv) in ci, argv


def test_the_readme_names_the_unrelated_package_before_install() -> None:
    text = (ROOT / "README.md").read_text("utf-8")
    first_install = text.index("pip install .")
    assert "`localjudge-rag`" in text[:first_install]
    assert "unrelated" in text[:first_install]


# ------------------------------------------------------------------------------ links

LINK = re.compile(r"\]\(([^)\s]+)\)")


def prose(path: Path) -> str:
    """The file without its fenced blocks (a link in a code block is not a link)."""
    out, inside = [], False
    for line in path.read_text("utf-8").splitlines():
        if line.startswith("```"):
            inside = not inside
        elif not inside:
            out.append(line)
    return "\n".join(out)


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for the file's headings: lower case, punctuation dropped, spaces as
    dashes, a repeated anchor numbered."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose(path).splitlines():
        heading = re.match(r"^#{1,6} (.+)$", line)
        if not heading:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1)).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(f"{slug}-{count}" if count else slug)
    return found


LINKS = sorted(
    {
        (str(p.relative_to(ROOT)), target)
        for p in DOCS
        for target in LINK.findall(prose(p))
        if not re.match(r"[a-z]+:", target)
    }
)


def test_the_docs_have_links_with_and_without_anchors() -> None:
    assert any("#" in t for _, t in LINKS)
    assert any(t.startswith("docs/") for _, t in LINKS)


@pytest.mark.parametrize(("doc", "target"), LINKS)
def test_every_relative_link_lands(doc: str, target: str) -> None:
    where, _, anchor = target.partition("#")
    path = (ROOT / doc).parent / where if where else ROOT / doc
    assert path.exists(), f"{doc}: link to {target}: {path} does not exist"
    if anchor:
        assert path.suffix == ".md", f"{doc}: {target}: an anchor into a file that is not Markdown"
        assert anchor in anchors(path), f"{doc}: {target}: no heading with that anchor"


def test_anchors_follow_githubs_rules(tmp_path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Cut-offs: `calibrate`\n## The README's main command\n## Notes\n## Notes\n"
        "```\n# not a heading\n```\n",
        "utf-8",
    )
    assert anchors(page) == {
        "cut-offs-calibrate",
        "the-readmes-main-command",
        "notes",
        "notes-1",
    }


# ------------------------------------------------------------------------------ the README's data


def test_the_readmes_three_lines_are_items_every_metric_can_ask_about() -> None:
    (block,) = [b for b in blocks(ROOT / "README.md", "json") if b.count("\n") == 2]
    records = [json.loads(line) for line in block.splitlines()]
    for index, record in enumerate(records):
        item = make_item(record, index=index)
        for metric in (ContextRecall(), ContextPosition(), ContextRelevance()):
            asks = metric.build(item)  # an invalid item raises, an empty list would not ask
            assert isinstance(asks, list), (item.id, metric)
            assert asks, (item.id, metric)
