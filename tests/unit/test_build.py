"""``fitting/build.py``: what ships is a pure function of the judged rows and the exceptions,
decided by the one storing rule on the validation part, blind to the sealed test part; and
the committed ``cutoffs.json``/``evidence.json`` are what the build makes."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest
from benchmark_scripts import ROOT, load

from localjudge.decisions import Difference, read_shipped, ship_rule
from localjudge.decisions.shipped import SHIPPED_PATH
from localjudge.judge.models.registry import builtin_registry

build = load("fitting/build")
rows = load("fitting/rows")
devsets = load("fitting/devsets")

PARTS = ("choice", "validation", "test")
LANGS = ("en", "de", "zh")


def _row(source, unit, part, kind, label, signal, rng, role="", lang="en", piece=0):
    """A decision whose readings follow ``label`` with strength ``signal`` (0: noise)."""
    high = 3.0 if kind == "relevance.grade" else 1.0
    target = label / high if kind == "relevance.grade" else float(label)
    # the call's own probability is informative but low (a yes reads about 0.45): the neutral
    # cut-off (0.5) misses most yeses, a fitted one does not
    own = min(max(0.15 + 0.3 * signal * target + rng.gauss(0, 0.08), 0.01), 0.99)
    soft = own * high
    judged = soft if kind == "relevance.grade" else math.log(own / (1 - own))
    # the QUESTION after the passage (mean log-probability of its 5 tokens) against after none
    alone = -3.0 + rng.gauss(0, 0.3)
    after = alone + signal * (target - 0.5) * 4 + rng.gauss(0, 0.5)
    return {
        "source": source,
        "id": f"{source}-{unit}-{piece}",
        "unit": unit,
        "part": part,
        "lang": lang,
        "piece": piece,
        "role": role,
        "kind": kind,
        "label": label,
        "soft": soft,
        "readings": {"judged": judged, "question": after - alone, "question_alone": alone},
        "raw": {"read": [after * 5, 5], "alone": [alone * 5, 5]},
    }


def make_rows(signal: float, seed: int = 0, units: int = 24) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for kind, sources in devsets.KIND_SOURCES.items():
        for source in sources:
            for u in range(units):
                part = PARTS[u % 3]
                unit = f"u{u}"
                if source in ("xquad", "xquadshort"):
                    for lang in LANGS:
                        for piece, (role, grade) in enumerate(
                            (("answer", 3), ("same", 1), ("other", 0))
                        ):
                            label = grade if kind == "relevance.grade" else int(grade == 3)
                            out.append(
                                _row(
                                    source, unit, part, kind, label, signal, rng, role, lang, piece
                                )
                            )
                else:
                    for piece in range(4):
                        label = rng.randrange(4) if kind == "relevance.grade" else rng.randrange(2)
                        out.append(_row(source, unit, part, kind, label, signal, rng, piece=piece))
    return out


def write_judge(root: Path, alias: str, found: list[dict], sha: str) -> None:
    folder = root / alias
    folder.mkdir(parents=True)
    (folder / "judge.json").write_text(json.dumps({"alias": alias, "sha256": sha}), "utf-8")
    for source in sorted({r["source"] for r in found}):
        rows.write(folder / f"{source}.jsonl.gz", [r for r in found if r["source"] == source])


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("rows")
    write_judge(root, "good", make_rows(signal=0.9), "a" * 64)
    write_judge(root, "noise", make_rows(signal=0.0, seed=4), "b" * 64)
    none = tmp_path_factory.mktemp("exceptions") / "none.json"
    none.write_text("[]", "utf-8")
    return root, none, build.build(root, none)


def test_an_informative_judge_ships_fits_and_a_noisy_one_the_neutral_cutoffs(built):
    _, _, (shipped, evidence) = built
    good, noise = shipped.judges
    assert (good.alias, noise.alias) == ("good", "noise")
    assert {k.status for k in good.kinds.values()} == {"fitted"}
    assert {k.status for k in noise.kinds.values()} == {"neutral"}
    assert all(k.cutoffs is None for k in noise.kinds.values())
    assert evidence["good"]["position.relevant"]["rule"] == {
        "gain": True,
        "no source worse": True,
        "obvious kept": True,
    }
    assert not evidence["noise"]["position.relevant"]["rule"]["gain"]


def test_the_build_is_a_pure_function_of_its_rows(built):
    root, none, (shipped, evidence) = built
    again = build.build(root, none)
    assert again[0] == shipped
    assert json.dumps(again[1], sort_keys=True) == json.dumps(evidence, sort_keys=True)


def test_the_sealed_test_part_is_never_read(built, tmp_path):
    root, none, (shipped, _) = built
    for alias in ("good", "noise"):
        _, found = rows.of_judge(alias, root)
        scrambled = [
            dict(r, label=1 - r["label"] if r["kind"] != "relevance.grade" else 0)
            if r["part"] == "test"
            else r
            for r in found
        ]
        write_judge(tmp_path, alias, scrambled, "a" * 64 if alias == "good" else "b" * 64)
    other, _ = build.build(tmp_path, none)
    assert [j.kinds for j in other.judges] == [j.kinds for j in shipped.judges]


def test_an_exception_ships_a_refused_fit_with_its_reason(built, tmp_path):
    root, _, _ = built
    path = tmp_path / "exceptions.json"
    exception = {
        "judge": "noise",
        "kind": "position.relevant",
        "ship": "fit",
        "decided": "2026-12-06",
        "reason": "a test",
    }
    path.write_text(json.dumps([exception]), "utf-8")
    shipped, _ = build.build(root, path)
    kind = shipped.judges[1].kinds["position.relevant"]
    assert kind.status == "exception"
    assert kind.cutoffs is not None
    assert kind.why == "exception decided 2026-12-06: a test"
    path.write_text(json.dumps([dict(exception, judge="good")]), "utf-8")
    with pytest.raises(SystemExit, match="shipped by the rule"):
        build.build(root, path)


def test_the_committed_files_are_what_the_build_makes():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "fitting" / "build.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr


def test_the_check_fails_when_the_committed_file_differs(tmp_path, monkeypatch):
    changed = tmp_path / "cutoffs.json"
    text = SHIPPED_PATH.read_text("utf-8")
    changed.write_text(text.replace('"fitted"', '"neutral"', 1), "utf-8")
    evidence = tmp_path / "evidence.json"
    evidence.write_text(build.EVIDENCE_PATH.read_text("utf-8"), "utf-8")
    monkeypatch.setattr(build, "SHIPPED_PATH", changed)
    monkeypatch.setattr(build, "EVIDENCE_PATH", evidence)
    assert build.main(["--check"]) == 1


def test_the_figures_before_and_after_name_what_changed():
    shipped = read_shipped()
    header = 2
    assert len(build.against(shipped, shipped).splitlines()) == header  # nothing changed
    built = [j.alias for j in shipped.judges if j.built.startswith("fitting/build.py")]
    assert built, "no bundled judge is built from rows"
    judge = next(j for j in shipped.judges if j.alias == built[0])
    kind = next(k for k, v in judge.kinds.items() if v.status != "neutral")
    neutral = judge.kinds[kind].model_copy(update={"status": "neutral", "combination": None})
    was = judge.model_copy(update={"kinds": {**judge.kinds, kind: neutral}})
    old = shipped.model_copy(update={"judges": [was if j is judge else j for j in shipped.judges]})
    lines = build.against(old, shipped).splitlines()[header:]
    assert lines
    assert all(f"| {judge.alias} | {kind}" in line for line in lines)
    assert any(f"(neutral -> {judge.kinds[kind].status})" in line for line in lines)


def test_what_ships_is_small_and_typed():
    assert len(SHIPPED_PATH.read_text("utf-8").splitlines()) <= 400
    shipped = read_shipped()
    assert {j.alias for j in shipped.judges} == {
        "qwen2.5-coder-1.5b",
        "qwen2.5-coder-0.5b",
        "gemma3-270m",
        "smollm2-135m",
    }
    # every bundled judge is built from its rows: none is carried from an older registry
    assert {j.alias for j in shipped.judges} == {j.alias for j in builtin_registry()}
    assert all(j.built.startswith("fitting/build.py from rows") for j in shipped.judges)


def test_the_rule_gain_no_source_worse_and_the_obvious():
    up = Difference(0.2, [0.1, 0.3])
    assert ship_rule({"a": up}).ship
    assert not ship_rule({"a": Difference(0.05, [-0.01, 0.1])}).ship  # no gain
    worse = ship_rule({"a": up, "b": Difference(-0.2, [-0.3, -0.1])}, Difference(0.0, [0.01, 0.1]))
    assert worse.why == {"gain": True, "no source worse": False, "obvious kept": True}
    # a wide interval on few units is not "worse"; the same loss on many units is
    assert ship_rule({"a": up, "b": Difference(-0.2, [-0.5, 0.1])}, up).ship
    lost = ship_rule({"a": up}, obvious_lost=["answer relevant"])
    assert lost.why["obvious kept"] is False
    assert lost.line() == "refused: not obvious kept"


sealed = load("fitting/sealed")


def test_the_sealed_figures_measure_what_ships_on_the_test_part_only(built):
    root, _, (shipped, _) = built
    _, found = rows.of_judge("good", root)
    figures = sealed.measure(shipped.judges[0], found)
    llm = figures["position.relevant"]["sources"]["llmjudge"]
    assert llm["ships"]["units"] == 8  # the test part's units only (u2, u5, ...)
    assert llm["ships"]["value"] > llm["neutral"]["value"]
    scrambled = [dict(r, label=0) if r["part"] != "test" else r for r in found]
    assert sealed.measure(shipped.judges[0], scrambled) == figures
    people, says = llm["yes"]["people"], llm["yes"]["ships"]
    assert 0.0 < people < 1.0
    assert 0.0 < says < 1.0


def test_the_sealed_figures_set_what_ships_beside_an_earlier_release(built):
    root, _, (shipped, _) = built
    _, found = rows.of_judge("good", root)
    good, noise = shipped.judges
    same = sealed.measure(good, found, release=good)["position.relevant"]["sources"]["llmjudge"]
    assert same["release"] == same["ships"]
    assert same["ships_minus_release"]["value"] == 0.0
    assert same["yes"]["release"] == same["yes"]["ships"]
    # the noisy judge's neutral entry as the earlier release: what ships now is better
    was = noise.model_copy(update={"alias": "good"})
    now = sealed.measure(good, found, release=was)["position.relevant"]["sources"]["llmjudge"]
    assert now["ships_minus_release"]["value"] > 0
    assert now["release"]["value"] == now["neutral"]["value"]


def test_the_sealed_figures_are_measured_once_per_shipped_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sealed, "SEALED", tmp_path / "sealed.json")
    assert sealed.main(["--date", "2026-12-06"]) == 0
    first = (tmp_path / "sealed.json").read_text("utf-8")
    assert json.loads(first)["cutoffs_sha256"] == sealed.shipped_sha256()
    capsys.readouterr()
    assert sealed.main(["--date", "2099-01-01"]) == 0
    assert "measured once" in capsys.readouterr().out
    assert (tmp_path / "sealed.json").read_text("utf-8") == first


def test_the_committed_held_out_figures_are_those_of_what_ships():
    """The README's held-out figures come from ``fitting/sealed.json``: it must have measured
    the committed ``cutoffs.json`` (a change of what ships is sealed again, once)."""
    stored = json.loads(sealed.SEALED.read_text("utf-8"))
    assert stored["cutoffs_sha256"] == sealed.shipped_sha256()
    assert set(stored["judges"]) == {j.alias for j in read_shipped().judges}
