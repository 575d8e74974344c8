"""The held-out figures: what ships, measured once on the sealed test part of every source.

    python fitting/sealed.py          # measure, once per change of what ships; write sealed.json
    python fitting/sealed.py --against OLD/cutoffs.json  # the same, beside an earlier release
    python fitting/sealed.py --show   # print what sealed.json holds
    python fitting/sealed.py --restamp OLD/cutoffs.json --note WHY  # see below

Nothing else reads the test part (``devsets.py``): no choice, fit, gate or exception. This
command runs only when the committed ``cutoffs.json`` is what ``build.py`` makes (what ships is
frozen), and only once for a given ``cutoffs.json``: ``fitting/sealed.json`` keeps the sha256
of the one it measured, and a second run for the same file prints the stored figures instead of
measuring again. Per judge built from rows, per kind and source: the figure (kappa; QWK for
the grade; balanced accuracy for recall) of what ships and of the neutral cut-offs, with 95%
bootstrap intervals over the source's units, each one's yes-share beside the people's, and the
role targets on the test part; with ``--against``, also the earlier release's figures on the
same decisions and the paired difference, what ships minus that release. These
are the only figures the README calls held out. Their floats are written at the build's
precision (``build.DECIMALS`` places; ``build.py``'s docstring says why). ``sealed.json``
records the protocol each judge's rows were judged under (``protocols``; rows of another
protocol are refused).

``--restamp OLD --note WHY``: when ``cutoffs.json`` changed in what it records or in its last
digits but not in what it decides (a field added, such as each judge's protocol; its floats
rewritten at the build's precision), the figures measured for ``OLD`` (the ``cutoffs.json``
they were measured for) still hold, and the test part is not read again: this checks that the
two files make the same decisions on every committed row of every judge, kind and part
(:func:`restamp`: decisions only, no label read, no figure made), then moves
``cutoffs_sha256`` to the committed file and records the note, with both digests, the date
and the count of rows, in ``notes``. Any difference in what decides is refused: that is a
change of what ships, sealed by measuring.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import build
import row_files as rowsfile
from localjudge.decisions import KINDS, target_shares
from localjudge.decisions.fit import figure_of
from localjudge.decisions.shipped import SHIPPED_PATH, Shipped, read_shipped
from localjudge.stats.bootstrap import interval

SEALED = Path(__file__).resolve().parent / "sealed.json"


def with_interval(kind: str, found: list[dict[str, Any]], judged: list[int]) -> dict[str, Any]:
    """The figure and its 95% bootstrap interval over units."""
    clusters = build.units(found)

    def value(cs: Sequence[list[int]]) -> float | None:
        picked = [n for c in cs for n in c]
        return figure_of(kind, [found[n]["label"] for n in picked], [judged[n] for n in picked])

    return {"value": value(clusters), "ci95": interval(clusters, value), "units": len(clusters)}


def yes_share(kind: str, values: Sequence[int]) -> float | None:
    """The share of decisions that say yes (a grade: medium or high)."""
    if not values:
        return None
    graded = KINDS[kind].graded
    return sum((v >= 2) if graded else (v == 1) for v in values) / len(values)


def measure(
    shipped_judge: Any, found: list[dict[str, Any]], release: Any | None = None
) -> dict[str, Any]:
    """One judge's sealed figures, per kind and source: what ships, the neutral cut-offs and,
    given ``release`` (the judge's entry in an earlier ``cutoffs.json``), that release on the
    same decisions with the paired difference; and each one's yes-share beside the people's."""
    out: dict[str, Any] = {}
    test = [r for r in found if r["part"] == "test"]
    for kind, shipped in shipped_judge.kinds.items():
        mine = [r for r in test if r["kind"] == kind and r["source"] in build.KIND_SOURCES[kind]]
        if not mine:
            continue
        before = None if release is None else release.kinds.get(kind)
        mine = build.usable(kind, build.weighed(shipped, before), mine)
        ships = build.Fit.shipped(kind, shipped).hard(mine)
        base = build.Fit(kind, None, None).hard(mine)
        old = None if before is None else build.Fit.shipped(kind, before).hard(mine)
        per = {}
        for source in build.KIND_SOURCES[kind]:
            idx = [n for n, r in enumerate(mine) if r["source"] == source]
            if not idx:
                continue
            rows_ = [mine[n] for n in idx]
            labels = [int(r["label"]) for r in rows_]
            per[source] = {
                "ships": with_interval(kind, rows_, [ships[n] for n in idx]),
                "neutral": with_interval(kind, rows_, [base[n] for n in idx]),
                "decisions": len(idx),
                "yes": {
                    "people": yes_share(kind, labels),
                    "ships": yes_share(kind, [ships[n] for n in idx]),
                },
            }
            if old is not None:
                then = [old[n] for n in idx]
                diff, _, _ = build.paired(kind, rows_, [ships[n] for n in idx], then)
                per[source]["release"] = with_interval(kind, rows_, then)
                per[source]["yes"]["release"] = yes_share(kind, then)
                per[source]["ships_minus_release"] = diff[source].as_json()
        obvious = target_shares(kind, mine, ships)
        out[kind] = {
            "status": shipped.status,
            "sources": per,
            "obvious": {t: v["share"] for t, v in obvious.items()},
            "obvious_missed": [t for t, v in obvious.items() if not v["met"]],
        }
    return out


def table(sealed: dict[str, Any]) -> str:
    against = sealed.get("release_sha256")
    rounded = sealed.get("rounded_from")
    lines = [
        f"sealed test part, measured {sealed['measured']} for cutoffs.json "
        + (
            sealed["cutoffs_sha256"][:12]
            if rounded is None
            else f"{rounded[:12]} (rewritten at the build's precision as "
            f"{sealed['cutoffs_sha256'][:12]}: the same decisions)"
        )
        + ("" if against is None else f", beside the release of cutoffs.json {against[:12]}"),
        "| judge | kind | source | ships | neutral | release | ships - release | yes: "
        "people / ships / release | units |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for alias, kinds in sealed["judges"].items():
        for kind, k in kinds.items():
            for source, f in k["sources"].items():
                yes = f.get("yes", {})
                shares = " / ".join(
                    "-" if yes.get(w) is None else f"{yes[w]:.2f}"
                    for w in ("people", "ships", "release")
                )
                lines.append(
                    f"| {alias} | {kind} ({k['status']}) | {source} | {cell(f['ships'])} | "
                    f"{cell(f['neutral'])} | {cell(f.get('release'))} | "
                    f"{cell(f.get('ships_minus_release'))} | {shares} | {f['ships']['units']} |"
                )
    lines += [
        f"restamped {n['date']}: {n['from'][:12]} -> {n['to'][:12]}: {n['why']}"
        for n in sealed.get("notes", [])
    ]
    return "\n".join(lines)


def cell(f: dict[str, Any] | None) -> str:
    if f is None or f["value"] is None:
        return "-"
    ci = f["ci95"]
    return f"{f['value']:.3f}" + ("" if ci is None else f" [{ci[0]:.3f}, {ci[1]:.3f}]")


def restamp(
    sealed: dict[str, Any],
    old: Shipped,
    new: Shipped,
    digests: tuple[str, str],
    protocols: dict[str, Any],
    note: dict[str, str],
    rows_root: Path = rowsfile.ROWS,
) -> dict[str, Any]:
    """``sealed`` (measured for ``old``, whose sha256 is ``digests[0]``) moved to ``new``
    (``digests[1]``), with ``protocols`` and ``note`` (``date``, ``why``) recorded and its
    floats at the build's precision: refused (SystemExit, naming each difference) unless both
    hold the same judges and kinds and make the same decisions on every row of every judge,
    kind and part (:func:`build.same_decisions`: no label is read, no figure made, so the
    figures measured for ``old`` are ``new``'s)."""
    if sealed["cutoffs_sha256"] != digests[0]:
        raise SystemExit(
            f"sealed.json measured cutoffs.json {sealed['cutoffs_sha256'][:12]}, not "
            f"{digests[0][:12]}: --restamp takes the file the figures were measured for"
        )
    was = {j.alias: set(j.kinds) for j in old.judges}
    now = {j.alias: set(j.kinds) for j in new.judges}
    differ = [
        f"{a}: judges or kinds differ"
        for a in sorted(set(was) | set(now))
        if was.get(a) != now.get(a)
    ]
    count, changed = build.same_decisions(old, new, rows_root)
    if differ or changed:
        raise SystemExit(
            f"what ships decides otherwise ({'; '.join(differ + changed)}): measure it "
            "(sealed.py); --restamp is for a change that decides nothing"
        )
    why = f"{note['why']} (the same decisions on all {count} rows of every judge, kind and part)"
    change = {"date": note["date"], "from": digests[0], "to": digests[1], "why": why}
    stamped = {k: v for k, v in sealed.items() if k not in ("judges", "protocols", "notes")}
    stamped["cutoffs_sha256"] = digests[1]
    notes = [*sealed.get("notes", []), change]
    judges = build.rounded_json(sealed["judges"])
    return {**stamped, "protocols": protocols, "notes": notes, "judges": judges}


def protocols_of(aliases: Sequence[str]) -> dict[str, Any]:
    """The protocol each judge's rows were judged under (``judge.json``; checked on reading)."""
    return {alias: rowsfile.of_judge(alias)[0]["protocol"] for alias in aliases}


def shipped_sha256() -> str:
    """The sha256 of the committed ``cutoffs.json``: what ``sealed.json`` says it measured."""
    return hashlib.sha256(SHIPPED_PATH.read_bytes()).hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--show", action="store_true", help="print sealed.json, measure nothing")
    parser.add_argument("--date", default=None, help="the date to record (default: today)")
    parser.add_argument(
        "--against",
        type=Path,
        default=None,
        help="an earlier release's cutoffs.json, measured beside what ships on the same rows",
    )
    parser.add_argument(
        "--restamp",
        type=Path,
        default=None,
        help="the cutoffs.json the figures were measured for, when only what it records changed",
    )
    parser.add_argument("--note", default=None, help="with --restamp: why, in one line")
    args = parser.parse_args(argv)
    stored = json.loads(SEALED.read_text("utf-8")) if SEALED.is_file() else None
    digest = shipped_sha256()
    if args.restamp is not None:
        return _restamp(args, stored, digest)
    if args.show or (stored is not None and stored["cutoffs_sha256"] == digest):
        if stored is None:
            print("no sealed figures yet", file=sys.stderr)
            return 1
        if stored["cutoffs_sha256"] == digest:
            print("(measured once for this cutoffs.json: the stored figures)")
        print(table(stored))
        return 0
    if build.main(["--check"]) != 0:
        print("what ships is not what build.py makes: build first, then seal", file=sys.stderr)
        return 1
    import datetime

    shipped = read_shipped()
    release = (
        None
        if args.against is None
        else Shipped.model_validate_json(args.against.read_text("utf-8"))
    )
    judges = {}
    for alias in rowsfile.judges(build.SOURCES):
        entry = next(j for j in shipped.judges if j.alias == alias)
        then = (
            None if release is None else next((j for j in release.judges if j.alias == alias), None)
        )
        judges[alias] = measure(entry, rowsfile.of_judge(alias)[1], then)
    sealed = {
        "cutoffs_sha256": digest,
        **(
            {}
            if args.against is None
            else {"release_sha256": hashlib.sha256(args.against.read_bytes()).hexdigest()}
        ),
        "measured": args.date or datetime.date.today().isoformat(),
        "protocols": protocols_of(list(judges)),
        "judges": build.rounded_json(judges),  # at the build's precision
    }
    SEALED.write_text(json.dumps(sealed, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(table(sealed))
    return 0


def _restamp(args: argparse.Namespace, stored: dict[str, Any] | None, digest: str) -> int:
    """``--restamp``: :func:`restamp` on the committed files, written to ``sealed.json``."""
    import datetime

    if stored is None or not args.note:
        print("--restamp needs a sealed.json and --note WHY", file=sys.stderr)
        return 1
    if build.main(["--check"]) != 0:
        print("what ships is not what build.py makes: build first", file=sys.stderr)
        return 1
    old = Shipped.model_validate_json(args.restamp.read_text("utf-8"))
    before = hashlib.sha256(args.restamp.read_bytes()).hexdigest()
    note = {"date": args.date or datetime.date.today().isoformat(), "why": args.note}
    aliases = list(stored["judges"])
    sealed = restamp(stored, old, read_shipped(), (before, digest), protocols_of(aliases), note)
    SEALED.write_text(json.dumps(sealed, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(f"sealed.json: the figures measured {sealed['measured']} now stand for cutoffs.json")
    print(f"{digest[:12]} (was {before[:12]}): {args.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
