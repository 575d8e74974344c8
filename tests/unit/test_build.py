"""``fitting/build.py``: what ships is a pure function of the judged rows and the exceptions,
decided by the one storing rule on the validation part, blind to the sealed test part; and
the committed ``cutoffs.json`` and ``fitting/evidence.json`` are what the build makes, and
the wheel carries the first and not the second."""

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
from localjudge.decisions.shipped import SHIPPED_PATH, Shipped
from localjudge.errors import ProtocolError
from localjudge.judge.models.registry import builtin_registry
from localjudge.metrics.protocols import PROTOCOLS, UNNAMED, ProtocolRef

build = load("fitting/build")
row_files = load("fitting/row_files")
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


def write_judge(root: Path, alias: str, found: list[dict], sha: str, protocol=UNNAMED) -> None:
    folder = root / alias
    folder.mkdir(parents=True)
    meta = {"alias": alias, "sha256": sha}
    if protocol is not None:
        meta["protocol"] = protocol if isinstance(protocol, dict) else protocol.as_json()
    (folder / "judge.json").write_text(json.dumps(meta), "utf-8")
    for source in sorted({r["source"] for r in found}):
        row_files.write(folder / f"{source}.jsonl.gz", [r for r in found if r["source"] == source])


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


def test_what_ships_and_its_evidence_name_the_rows_protocol(built):
    _, _, (shipped, evidence) = built
    for judge in shipped.judges:
        assert judge.protocol is not None
        assert judge.protocol.model_dump() == UNNAMED.as_json()
        assert evidence[judge.alias]["protocol"] == UNNAMED.as_json()
    dumped = shipped.model_dump(mode="json")["judges"][0]
    assert list(dumped)[:3] == ["alias", "sha256", "protocol"]


def test_the_build_is_a_pure_function_of_its_rows(built):
    root, none, (shipped, evidence) = built
    again = build.build(root, none)
    assert again[0] == shipped
    assert json.dumps(again[1], sort_keys=True) == json.dumps(evidence, sort_keys=True)


def test_the_sealed_test_part_is_never_read(built, tmp_path):
    root, none, (shipped, _) = built
    for alias in ("good", "noise"):
        _, found = row_files.of_judge(alias, root)
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


def test_every_committed_row_folder_names_protocol_1():
    for meta in sorted(ROOT.glob("fitting/rows/*/judge.json")):
        assert json.loads(meta.read_text("utf-8"))["protocol"] == {
            "name": "1",
            "fingerprint": PROTOCOLS["1"],
        }, meta


@pytest.mark.parametrize(
    ("protocol", "says"),
    [
        (ProtocolRef("1", "ab" * 32), "made under protocol 1 (abababababab), but this release's"),
        (ProtocolRef("7", "cd" * 32), "protocol 7 (cdcdcdcdcdcd), which this release does not"),
        (None, "names no protocol"),
        ({"name": "1"}, "fingerprint"),
    ],
)
def test_rows_of_another_protocol_are_refused_naming_both(tmp_path, protocol, says):
    write_judge(tmp_path, "stale", make_rows(signal=0.9, units=3), "a" * 64, protocol=protocol)
    with pytest.raises(ProtocolError, match=r"stale") as info:
        build.build(tmp_path, tmp_path / "none.json")
    assert says in str(info.value)
    assert str(UNNAMED) in str(info.value) or protocol == {"name": "1"}
    assert "fitting/judge.py -m stale --overwrite" in info.value.hint
    with pytest.raises(ProtocolError):  # every reader of rows refuses them
        row_files.of_judge("stale", tmp_path)


def test_the_build_command_refuses_rows_of_another_protocol(tmp_path, monkeypatch, capsys):
    stale = ProtocolRef("1", "ab" * 32)
    write_judge(tmp_path, "stale", make_rows(signal=0.9, units=3), "a" * 64, protocol=stale)
    real = build.build
    monkeypatch.setattr(build, "build", lambda: real(tmp_path, tmp_path / "none.json"))
    assert build.main(["--check"]) == 1
    assert "protocol 1 (abababababab)" in capsys.readouterr().err


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


# --------------------------------------------------------------------------- machine noise


def _texts(folder: Path, shipped, evidence) -> dict[Path, str]:
    """What the build writes of ``shipped`` and ``evidence``, as the check takes it."""
    return {
        folder / "cutoffs.json": build.dump(shipped.model_dump(mode="json")),
        folder / "evidence.json": build.dump(evidence),
    }


def _check(built, tmp_path, edit=None, edit_evidence=None, rows_root=None):
    """The check of ``built``'s texts against committed files that are those texts edited by
    ``edit`` (of cutoffs.json's data) and ``edit_evidence``, deciding the rows under
    ``rows_root`` (default: ``built``'s)."""
    root, _, (shipped, evidence) = built
    root = rows_root or root
    texts = _texts(tmp_path, shipped, evidence)
    cutoffs = shipped.model_dump(mode="json")
    if edit is not None:
        edit(cutoffs)
    data = json.loads(build.dump(evidence))
    if edit_evidence is not None:
        edit_evidence(data)
    (tmp_path / "cutoffs.json").write_text(build.dump(cutoffs), "utf-8")
    (tmp_path / "evidence.json").write_text(build.dump(data), "utf-8")
    return build.check(texts, tmp_path / "cutoffs.json", shipped, root)


def _one_unit_moves(built):
    """Per fitted cut-off of the judge "good" (kind, index, direction): whether moving it one
    unit of its last written digit changes a decision of that judge's rows."""
    root, _, (shipped, _) = built
    found = row_files.of_judge("good", root)[1]
    out = {}
    for kind, k in shipped.judges[0].kinds.items():
        mine = [r for r in found if r["kind"] == kind]
        before = build.Fit.shipped(kind, k).hard(mine)
        for n, c in enumerate(k.cutoffs or ()):
            for step in (-1e-6, 1e-6):
                cuts = list(k.cutoffs)
                cuts[n] = round(c + step, 6)
                moved = build.Fit.shipped(kind, k.model_copy(update={"cutoffs": cuts})).hard(mine)
                out[(kind, n, step)] = moved != before
    return out


def _move(key):
    kind, n, step = key

    def edit(cutoffs):
        kinds = cutoffs["judges"][0]["kinds"]
        kinds[kind]["cutoffs"][n] = round(kinds[kind]["cutoffs"][n] + step, 6)

    return edit


def test_every_float_the_build_writes_is_at_the_stated_precision(built):
    _, _, (shipped, evidence) = built
    found = []

    def floats(x):
        if isinstance(x, dict):
            for v in x.values():
                floats(v)
        elif isinstance(x, list):
            for v in x:
                floats(v)
        elif isinstance(x, float):
            found.append(x)

    floats(shipped.model_dump(mode="json"))
    floats(evidence)
    assert len(found) > 100
    assert all(x == round(x, build.DECIMALS) for x in found)


def test_the_build_is_the_same_bytes_under_float_noise(built, tmp_path):
    """Every reading and soft value of the rows (and the log-probabilities the readings are
    made of) moved by about 1e-12 of itself, each with a random sign: far more than the noise
    of another CPU's or BLAS's order of sums (about 1e-16), and the build writes the same bytes.
    Only the rows' digest differs: it names the rows, and they are not the same."""
    root, none, (shipped, evidence) = built
    rng = random.Random(65)

    def nudge(x):
        return x * (1 + rng.choice((-1, 1)) * rng.uniform(0.5, 1.5) * 1e-12)

    found = row_files.of_judge("good", root)[1]
    nudged = [
        dict(
            r,
            soft=nudge(r["soft"]),
            readings={k: nudge(v) for k, v in r["readings"].items()},
            raw={k: [nudge(v[0]), v[1]] for k, v in r["raw"].items()},
        )
        for r in found
    ]
    assert all(a["soft"] != b["soft"] for a, b in zip(found, nudged, strict=True))
    write_judge(tmp_path, "good", nudged, "a" * 64)
    again, evidence_again = build.build(tmp_path, none)
    was, now = shipped.judges[0].built.split()[-1], again.judges[0].built.split()[-1]
    assert was != now
    texts = [
        build.dump(shipped.judges[0].model_dump(mode="json")),
        build.dump(evidence["good"]),
        build.figures_table(shipped.model_copy(update={"judges": shipped.judges[:1]}), evidence),
    ]
    texts_again = [
        build.dump(again.judges[0].model_dump(mode="json")).replace(now, was),
        build.dump(evidence_again["good"]),
        build.figures_table(again, evidence_again).replace(now, was),
    ]
    assert texts_again == texts


def _bump_pooled(evidence):
    pooled = evidence["good"]["position.relevant"]["pooled"]
    pooled["value"] = round(pooled["value"] + 1e-6, 6)


def test_the_check_passes_a_last_digit_when_the_decisions_are_the_same(built, tmp_path, capsys):
    root = built[0]
    keeps = next(key for key, flips in _one_unit_moves(built).items() if not flips)
    assert _check(built, tmp_path, _move(keeps), _bump_pooled) == 0
    note = capsys.readouterr().err
    assert "only in last digits" in note
    every = sum(len(row_files.of_judge(alias, root)[1]) for alias in ("good", "noise"))
    assert f"on {every} rows are identical" in note


def test_the_check_fails_a_last_digit_that_changes_a_decision(built, tmp_path, capsys):
    """A row whose soft value lies between a cut-off and the same cut-off one unit of its last
    digit up (the committed rows hold one 3e-7 from a cut-off) is decided otherwise by a file
    with that cut-off one unit up: the check fails, though every float is within a unit."""
    root, _, (shipped, _) = built
    kind = "recall.supported"  # the call's own soft value, against one cut-off
    good = shipped.judges[0].kinds[kind]
    assert good.status == "fitted"
    assert good.combination is None
    cut = good.cutoffs[0]
    found = row_files.of_judge("good", root)[1]
    near = dict(next(r for r in found if r["kind"] == kind), id="near", soft=cut + 5e-7)
    write_judge(tmp_path / "rows", "good", [*found, near], "a" * 64)

    def up(cutoffs):
        cutoffs["judges"][0]["kinds"][kind]["cutoffs"][0] = round(cut + 1e-6, 6)

    assert _check(built, tmp_path, up, rows_root=tmp_path / "rows") == 1
    err = capsys.readouterr().err
    assert f"good {kind}: 1 of " in err
    assert "decided otherwise" in err
    assert "cutoffs[0]" not in err  # within a unit of the last digit: only the decision fails
    assert _check(built, tmp_path, rows_root=tmp_path / "rows") == 0


def test_the_check_fails_a_changed_cutoff_status_or_float(built, tmp_path, capsys):
    def far(cutoffs):
        cutoffs["judges"][0]["kinds"]["position.relevant"]["cutoffs"][0] += 0.1

    assert _check(built, tmp_path, far) == 1
    assert "/position.relevant/cutoffs[0]: 0.38" in capsys.readouterr().err

    def status(cutoffs):  # the same cut-offs, so the same decisions: the status still counts
        cutoffs["judges"][0]["kinds"]["position.relevant"]["status"] = "exception"

    assert _check(built, tmp_path, status) == 1
    err = capsys.readouterr().err
    assert "'exception' against the build's 'fitted'" in err
    assert "decided otherwise" not in err

    def two_units(evidence):
        pooled = evidence["good"]["position.relevant"]["pooled"]
        pooled["value"] = round(pooled["value"] + 2e-6, 6)

    assert _check(built, tmp_path, edit_evidence=two_units) == 1
    assert "/good/position.relevant/pooled/value" in capsys.readouterr().err


def test_what_the_check_counts_as_float_noise():
    one = '{"a": 0.455321, "b": "+0.380 [+0.307, +0.445] rows 6e8267fc08d2 qwen2.5", "c": 3}'
    assert build.differences("x.json", one, one) == []
    near = one.replace("0.455321", "0.455322").replace("+0.380", "+0.381")
    assert build.differences("x.json", one, near) == []
    assert build.differences("x.json", '{"a": 0.0}', '{"a": 1e-06}') == []
    for other in (
        one.replace("0.455321", "0.455323"),  # two units
        one.replace("+0.380", "+0.382"),
        one.replace("+0.380", "+0.3800"),  # written otherwise
        one.replace("6e8267fc08d2", "6e8267fc08d3"),  # a digest
        one.replace("qwen2.5", "qwen2.6"),  # a name
        one.replace('"c": 3', '"c": 4'),  # an integer
        one.replace('"c": 3', '"c": 3.0'),
        '{"b": "", "a": 0.455321, "c": 3}',  # keys in another order
    ):
        assert build.differences("x.json", one, other), other
    assert build.differences("x.json", '{"a": 0.0}', '{"a": 0.1}')
    assert build.differences("x.md", "| +0.380 |\n", "| +0.381 |\n") == []
    assert build.differences("x.md", "| +0.380 |\n", "| +0.382 |\n")


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


def test_what_ships_is_typed_and_built_for_every_bundled_judge():
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


def test_the_wheel_carries_what_runs_and_the_evidence_stays_in_fitting():
    """``cutoffs.json`` is read at run time (package data); the evidence is read by the build
    and the docs only, so it lives in ``fitting/`` and the wheel does not carry it."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    data = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    package_data = data["tool"]["setuptools"]["package-data"]
    shipped = [f for files in package_data.values() for f in files]
    assert "cutoffs.json" in package_data["localjudge.judge.models"]
    assert not any("evidence" in f for f in shipped)
    assert build.EVIDENCE_PATH == ROOT / "fitting" / "evidence.json"
    assert build.EVIDENCE_PATH.is_file()
    assert not list((ROOT / "localjudge").rglob("evidence.json"))


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
    _, found = row_files.of_judge("good", root)
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
    _, found = row_files.of_judge("good", root)
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


def test_a_restamp_moves_the_figures_to_a_file_that_decides_alike(built):
    """``sealed.py --restamp``: the figures measured for a cutoffs.json are kept for a file
    that records more (each judge's protocol) or writes its floats at the build's precision,
    when the two decide every row alike (the test part too: decisions only, no label), with
    both digests and a note; a change in what decides is refused (it is measured, never
    restamped)."""
    root, _, (shipped, _) = built
    data = shipped.model_dump(mode="json")
    for j in data["judges"]:
        j["protocol"] = None
    for k in data["judges"][0]["kinds"].values():  # more digits, the same decisions
        k["cutoffs"] = [c - 1e-10 for c in k["cutoffs"]]
    old = Shipped.model_validate(data)
    figures = {"good": {"k": {"value": 0.1234567891, "ci95": [-2.220446049250313e-16, 0.5]}}}
    stored = {"cutoffs_sha256": "o" * 64, "measured": "2026-12-06", "judges": figures}
    protocols = {"good": UNNAMED.as_json()}
    note = {"date": "2026-12-20", "why": "cutoffs.json names each judge's protocol"}
    got = sealed.restamp(stored, old, shipped, ("o" * 64, "n" * 64), protocols, note, root)
    every = sum(len(row_files.of_judge(alias, root)[1]) for alias in ("good", "noise"))
    assert got["cutoffs_sha256"] == "n" * 64
    assert got["measured"] == "2026-12-06"  # the test part was not read again
    assert got["protocols"] == protocols
    why = f"{note['why']} (the same decisions on all {every} rows of every judge, kind and part)"
    assert got["notes"] == [{"date": note["date"], "why": why, "from": "o" * 64, "to": "n" * 64}]
    assert got["judges"] == {"good": {"k": {"value": 0.123457, "ci95": [0.0, 0.5]}}}
    assert list(got)[-1] == "judges"
    assert "restamped 2026-12-20: oooooooooooo -> nnnnnnnnnnnn" in sealed.table(
        {**got, "judges": {}}
    )
    with pytest.raises(SystemExit, match="measured for"):
        sealed.restamp(stored, old, shipped, ("x" * 64, "n" * 64), protocols, note, root)
    good = shipped.judges[0]
    kind = next(k for k, v in good.kinds.items() if v.status == "fitted")
    moved = good.kinds[kind].model_copy(update={"cutoffs": [0.01] * len(good.kinds[kind].cutoffs)})
    other = good.model_copy(update={"kinds": {**good.kinds, kind: moved}})
    changed = shipped.model_copy(update={"judges": [other, *shipped.judges[1:]]})
    with pytest.raises(SystemExit, match=f"decides otherwise \\(good {kind}: .* decided otherwise"):
        sealed.restamp(stored, old, changed, ("o" * 64, "n" * 64), protocols, note, root)


def test_the_committed_held_out_figures_are_those_of_what_ships():
    """The README's held-out figures come from ``fitting/sealed.json``: it must have measured
    the committed ``cutoffs.json`` (a change of what ships is sealed again, once)."""
    stored = json.loads(sealed.SEALED.read_text("utf-8"))
    assert stored["cutoffs_sha256"] == sealed.shipped_sha256()
    assert set(stored["judges"]) == {j.alias for j in read_shipped().judges}
