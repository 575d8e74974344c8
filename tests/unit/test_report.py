"""The HTML report: content, escaping, no external references, format checks (no browser).

The builders at the top make an eval run (with the scripted judge, through eval_file) and a bench
run (compare + item_rows on labelled records, assembled like bench.bench_file); the browser tests in
tests/browser load this module to reuse them.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from localjudge.canonical import file_sha256
from localjudge.decisions import CLOSE_CALL_MARGINS
from localjudge.errors import DataError
from localjudge.metrics import ContextPosition, ContextRecall, ContextRelevance
from localjudge.run.bench import compare
from localjudge.run.evaluate.file_run import eval_file
from localjudge.run.report.page import CSP, script_json
from localjudge.run.report.render import histogram, render_report, verdict_table, write_report
from localjudge.run.results import BENCH
from localjudge.stats import agreement
from localjudge.testing import ScriptedJudge, prompt_data

# ---------------------------------------------------------------- an eval run, scripted

PWN = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1;alert(1)">'
REASON_IMG = "<img src=x onerror=window.__pwned=1>"  # reasons are ASCII without quotes
BREAKOUT = "yes </script><script>window.__pwned=1</script>"
INJECTION_ID = PWN

ITEMS = [
    {
        "id": "ok-1",
        "user_input": "In which year did the tower open?",
        "retrieved_contexts": [
            "yes Paris is the capital.",
            "meh bananas",
            "yes the tower is tall.",
        ],
        "reference": "yes Paris is the capital. It opened in 1889.",
        "response": "yes Paris is the capital.",
    },
    {
        "id": INJECTION_ID,
        "user_input": f"Is this {IMG} safe?",
        "retrieved_contexts": [BREAKOUT, IMG],
        "reference": BREAKOUT,
        "response": "<svg onload=alert(1)>",
    },
    {
        "id": "low-3",
        "user_input": "Where?",
        "retrieved_contexts": ["nothing here", "yes it is"],
        "reference": "yes it is",
        "response": "no",
    },
    {
        "id": "no-response-4",
        "user_input": "Anything?",
        "retrieved_contexts": ["yes"],
        "reference": "yes",
    },
]
MALFORMED = '{"id": "broken", "user_input": '
METRICS = ["recall", "position", "relevance"]
N_ROWS = 5 * 3
N_FAILED = 1 + 3  # no-response-4 relevance, and the malformed line for every metric


def rule_reply(messages, schema):
    """One decision per call, read from the prompt. Recall: a reference statement is supported
    when a context contains it (without its final full stop). Position: a piece is relevant when
    it contains 'yes'. Relevance: 'yes' pieces are graded high (3), 'meh' pieces low (1), others
    none (0); used when the response contains the piece; a question asking for a year misses it.
    Reasons of pieces with markup in them quote it."""
    data = prompt_data(messages)
    name = schema.__name__
    if name == "SupportedDecision":
        contexts = [data[k] for k in data if k.startswith("CONTEXT")]
        statement = data["STATEMENT"].rstrip(".")
        return {"supported": "yes" if any(statement in c for c in contexts) else "no"}
    if name == "RelevantDecision":
        return {"relevant": "yes" if "yes" in data["PASSAGE"] else "no"}
    if name == "GradeDecision":
        passage = data["PASSAGE"]
        return {"grade": 3 if "yes" in passage else 1 if "meh" in passage else 0}
    if name == "RepeatsDecision":
        return {"repeats": "yes" if data["PASSAGE"] in data["RESPONSE"] else "no"}
    if name == "Missing":
        return {"missing": ["the <b>year</b> it opened"] if "year" in data["QUESTION"] else []}
    assert name == "Reason", name
    passage = data.get("PASSAGE", "")
    return {"reason": f"rule: {REASON_IMG}" if "<" in passage else "rule"}


def build_eval_run(root: Path) -> tuple[Path, Path]:
    """An eval run of ITEMS (plus a malformed line) under ``root``: (data file, out dir)."""
    root.mkdir(parents=True, exist_ok=True)
    data = root / "data.jsonl"
    lines = [json.dumps(item, ensure_ascii=False) for item in ITEMS] + [MALFORMED]
    data.write_text("\n".join(lines) + "\n", "utf-8")
    judge = ScriptedJudge(rule_reply)
    # with reasons: the injected markup reaches the page through a reason too
    metrics = [
        ContextRecall(reasons=True),
        ContextPosition(reasons=True),
        ContextRelevance(reasons=True),
    ]
    out = root / "run"
    eval_file(data, out, judge=judge, metrics=metrics, settings={"n_ctx": 8192})
    return data, out


def read_rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text("utf-8").splitlines()]


# ---------------------------------------------------------------- a bench run, by hand

LABELLED = [
    {
        "id": "b-0",
        "user_input": "q0",
        "retrieved_contexts": ["yes a", "no b"],
        "reference": "yes a",
        "response": "yes a",
        "labels": {
            "recall": 1.0,
            "relevant": [True, False],
            "levels": ["high", "none"],
            "used": [True, False],
        },
    },
    {
        "id": PWN,
        "user_input": "q1",
        "retrieved_contexts": ["no c", "yes d", "meh e"],
        "reference": "yes d",
        "response": "other",
        "labels": {
            "recall": 0.0,
            "relevant": [True, True, False],
            "levels": ["medium", "high", "low"],
            "used": [False, True, False],
        },
    },
    {
        "id": "b-2",
        "user_input": "q2",
        "retrieved_contexts": ["yes f"],
        "reference": "yes f",
        "response": "yes f",
        "labels": {"recall": 1.0, "relevant": [True], "levels": ["high"], "used": [True]},
    },
    {
        "id": "b-3",
        "user_input": "q3",
        "retrieved_contexts": ["no g", "no h"],
        "reference": "yes i",
        "response": "no g",
        "labels": {
            "recall": 0.0,
            "relevant": [False, False],
            "levels": ["none", "low"],
            "used": [True, False],
        },
    },
]
JUDGE_A = "rule-judge"
JUDGE_B = "<i>yes</i>-judge"


def everything_reply(messages, schema):
    """A judge that calls every piece relevant, high and used, and every statement supported."""
    answers = {
        "SupportedDecision": {"supported": "yes"},
        "RelevantDecision": {"relevant": "yes"},
        "GradeDecision": {"grade": 3},
        "RepeatsDecision": {"repeats": "yes"},
        "Missing": {"missing": []},
    }
    return answers.get(schema.__name__) or rule_reply(messages, schema)


def build_bench_run(root: Path) -> Path:
    """A bench run of two scripted judges on LABELLED, written like bench.bench_file writes it."""
    root.mkdir(parents=True, exist_ok=True)
    data = root / "labelled.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in LABELLED) + "\n", "utf-8")
    labelled = {i: r["labels"] for i, r in enumerate(LABELLED)}
    rows_by_judge = {}
    runs = {}
    for n, (name, reply) in enumerate([(JUDGE_A, rule_reply), (JUDGE_B, everything_reply)]):
        judge = ScriptedJudge(reply, model=name)
        out = root / "judges" / f"{n}-judge"
        metrics = [ContextRecall(), ContextPosition(), ContextRelevance()]
        outcome = eval_file(data, out, judge=judge, metrics=metrics)
        rows_by_judge[name] = read_rows(out)
        runs[name] = {
            "identity": judge.identity.as_dict(),
            "load_seconds": 0.5 + n,
            "wall_seconds": 2.0 + n,
            "peak_rss_mb": 400.0 + 100 * n,
            "judge_calls": outcome.summary["run"]["judge_calls"],
            "cache_hits": 0,
            "results": str(outcome.results_path),
        }
    # fewer bootstrap resamples than bench's 1,000: the report only shows the intervals
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(agreement, "RESAMPLES", 100)
        comparison = compare.compare(labelled, rows_by_judge, METRICS)
    report = {
        "format": BENCH.version,
        "data": str(data),
        "data_sha256": file_sha256(data),
        "n_labelled": len(labelled),
        "metrics": METRICS,
        "versions": {"python": "3.x", "localjudge": "0.1.0"},
        "judges": {name: {**runs[name], "metrics": comparison[name]} for name in rows_by_judge},
    }
    (root / "bench.json").write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    items = compare.item_rows(labelled, rows_by_judge, METRICS)
    (root / "bench_items.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items), "utf-8"
    )
    return root


# ---------------------------------------------------------------- parsing the document


class Doc(HTMLParser):
    """Every start tag with its attributes, the text of each script, and the visible text."""

    def __init__(self, html):
        super().__init__(convert_charrefs=True)
        self.tags = []
        self.scripts = []
        self.text = []
        self._in_script = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append([dict(attrs), ""])

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None

    def handle_data(self, data):
        if self._in_script is not None:
            self.scripts[-1][1] += data
        else:
            self.text.append(data)

    def payload(self):
        (json_text,) = [s for a, s in self.scripts if a.get("type") == "application/json"]
        return json.loads(json_text)


@pytest.fixture(scope="module")
def eval_run(tmp_path_factory):
    return build_eval_run(tmp_path_factory.mktemp("eval"))


@pytest.fixture(scope="module")
def eval_html(eval_run):
    return render_report(eval_run[1])


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory):
    return build_bench_run(tmp_path_factory.mktemp("bench"))


@pytest.fixture(scope="module")
def bench_html(bench_dir):
    return render_report(bench_dir)


EXTERNAL = re.compile(r"(?i)(\b(?:https?|ftp|wss?|file):|//[a-z0-9.-]+\.[a-z]{2,}|@import|url\()")


def assert_self_contained(html):
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in html
    assert CSP == (
        "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"
    )
    assert EXTERNAL.search(html) is None, EXTERNAL.search(html)
    doc = Doc(html)
    assert ("meta", {"http-equiv": "Content-Security-Policy", "content": CSP}) in doc.tags
    for tag, attrs in doc.tags:
        for name in ("src", "href", "srcset", "action", "data", "poster", "xlink:href"):
            value = attrs.get(name)
            assert value is None or value.startswith(("#", "data:")), (tag, name, value)
        assert not any(a.startswith("on") for a in attrs), (tag, attrs)
        assert tag not in ("img", "iframe", "object", "embed", "link", "base", "frame")
    return doc


def assert_inert(html, doc):
    """The injection strings appear only escaped: never as markup, never in a live script."""
    for raw in (
        PWN,
        IMG,
        REASON_IMG,
        "</script><script>",
        "<svg onload",
        "<b>year</b>",
        "<i>yes</i>",
    ):
        assert raw not in html
    types = [a.get("type") for a, _ in doc.scripts]
    assert types.count("application/json") == 1
    assert len(types) <= 2
    live = [code for a, code in doc.scripts if a.get("type") != "application/json"]
    assert all("__pwned" not in code and "alert" not in code for code in live)


# ---------------------------------------------------------------- eval report


def test_eval_report_shows_manifest_summary_and_items(eval_run, eval_html):
    data, out = eval_run
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    doc = assert_self_contained(eval_html)
    text = " ".join(doc.text)
    for value in (
        "scripted",  # judge model and backend
        "0" * 64,  # judge sha256
        str(data),
        file_sha256(data),
        "judge calls",
        "cache hits",
        "n_ctx",
        "8192",
        "unused_high",
        "llama-cpp-python",  # versions
        "sha256 matches",
    ):
        assert value in text, value
    assert f'<tr><th scope="row">judge calls</th><td>{summary["run"]["judge_calls"]}</td>' in (
        eval_html
    )
    for name, m in summary["metrics"].items():
        assert (
            f'<tr><th scope="row">{name}</th><td>{m["n_scored"]}</td><td>{m["n_failed"]}</td>'
            in (eval_html)
        )
        assert f"<td>{m['mean']:.3f}</td>" in eval_html
        assert f"[{m['ci95'][0]:.3f}, {m['ci95'][1]:.3f}]" in eval_html
    # one histogram of 10 bars per metric, bar counts matching the scores
    assert eval_html.count('<svg class="hist"') == 3
    assert sum(1 for tag, _ in doc.tags if tag == "rect") == 30
    rows = read_rows(out)
    bodies = [a for tag, a in doc.tags if tag == "tbody" and "item" in a.get("class", "")]
    assert len(bodies) == len(rows) == N_ROWS
    assert [(b["data-id"], b["data-metric"]) for b in bodies] == [
        (r["id"], r["metric"]) for r in rows
    ]
    assert [b["data-failed"] for b in bodies].count("1") == N_FAILED
    for b, r in zip(bodies, rows, strict=True):
        assert (b["data-score"] == "") == (r["score"] is None)
        if r["score"] is not None:
            assert float(b["data-score"]) == r["score"]


def test_eval_payload_has_verdicts_flags_and_contexts(eval_run, eval_html):
    out = eval_run[1]
    payload = Doc(eval_html).payload()
    rows = read_rows(out)
    assert len(payload["items"]) == len(rows)
    # the records come from the run's data file (its sha256 matches), by index
    assert payload["records"]["1"]["contexts"] == [BREAKOUT, IMG]
    assert payload["records"]["0"]["reference"] == ITEMS[0]["reference"]
    assert "4" not in payload["records"]  # the malformed line has no record
    by_key = {(r["id"], r["metric"]): item for r, item in zip(rows, payload["items"], strict=True)}
    recall = by_key[("ok-1", "recall")]["table"]
    assert [row["flag"] for row in recall["rows"]] == [None, "not supported by the contexts"]
    position = by_key[("ok-1", "position")]["table"]
    assert [row["flag"] for row in position["rows"]] == [
        None,
        "irrelevant",
        "relevant, but ranked below irrelevant piece #1",
    ]
    assert [row["piece"] for row in position["rows"]] == [0, 1, 2]
    relevance = by_key[("ok-1", "relevance")]["table"]
    assert [row["flag"] for row in relevance["rows"]] == [
        None,
        "relevance low",
        "high relevance, but the response did not use it",
    ]
    assert relevance["missing"] == ["the <b>year</b> it opened"]
    failed = by_key[("no-response-4", "relevance")]
    assert failed["error"]["kind"] == "invalid_item"
    assert failed["table"]["rows"] == []


def test_eval_report_escapes_injected_text(eval_html):
    doc = assert_self_contained(eval_html)
    assert_inert(eval_html, doc)
    # shown as text: the id in the items table, the reason in the verdicts
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in eval_html
    assert PWN in doc.text
    assert "\\u003c/script\\u003e\\u003cscript\\u003ewindow.__pwned=1" in eval_html
    assert Doc(eval_html).payload()["records"]["1"]["user_input"] == f"Is this {IMG} safe?"


def test_rendering_is_deterministic(eval_run, eval_html):
    assert render_report(eval_run[1]) == eval_html


def test_write_report_default_and_explicit_paths(eval_run, tmp_path):
    out = eval_run[1]
    target = tmp_path / "sub" / "r.html"
    assert write_report(out, target) == target
    assert target.read_text("utf-8").startswith("<!DOCTYPE html>")
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("results.jsonl", "summary.json"):
        (copy / name).write_bytes((out / name).read_bytes())
    assert write_report(copy) == copy / "report.html"
    assert (copy / "report.html").is_file()


# ---------------------------------------------------------------- the data file for contexts


def copy_run(out, dest, **summary_changes):
    dest.mkdir()
    (dest / "results.jsonl").write_bytes((out / "results.jsonl").read_bytes())
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    summary["run"].update(summary_changes)
    (dest / "summary.json").write_text(json.dumps(summary), "utf-8")
    return dest


def test_contexts_from_an_explicit_data_file(eval_run, tmp_path):
    data, out = eval_run
    run = copy_run(out, tmp_path / "moved", data="gone/data.jsonl")
    payload = Doc(render_report(run)).payload()
    assert payload["records"] == {}
    assert "is not there" in payload["note"]
    payload = Doc(render_report(run, data=data)).payload()
    assert payload["records"]["1"]["contexts"] == [BREAKOUT, IMG]


def test_changed_data_file_is_not_used(eval_run, tmp_path):
    data, out = eval_run
    changed = tmp_path / "changed.jsonl"
    changed.write_text(data.read_text("utf-8").replace("bananas", "apples"), "utf-8")
    run = copy_run(out, tmp_path / "run", data=str(changed))
    html = render_report(run)
    assert Doc(html).payload()["records"] == {}
    assert "sha256 differs" in html
    with pytest.raises(DataError, match="not the file this run scored"):
        render_report(run, data=changed)
    with pytest.raises(DataError, match="not found"):
        render_report(run, data=tmp_path / "missing.jsonl")


# ---------------------------------------------------------------- pure parts


def test_histogram_bins_and_heights():
    h = histogram([0.0, 0.05, 0.1, 0.3, 0.3, 0.3, 0.99, 1.0], 1.0)
    assert [b.count for b in h.bars] == [2, 1, 0, 3, 0, 0, 0, 0, 0, 2]
    assert h.max_count == 3
    assert [b.height for b in h.bars][:4] == [pytest.approx(100 * 2 / 3, abs=0.01), 33.33, 0, 100]
    assert all(b.y + b.height == pytest.approx(h.height) for b in h.bars)
    assert (h.bars[0].low, h.bars[-1].high) == (0.0, 1.0)
    scaled = histogram([0, 5, 10], 10.0)
    assert [b.count for b in scaled.bars] == [1, 0, 0, 0, 0, 1, 0, 0, 0, 1]
    assert scaled.bars[-1].high == 10.0
    empty = histogram([], 1.0)
    assert empty.max_count == 0
    assert all(b.height == 0 for b in empty.bars)


def test_verdict_tables_flag_what_lowered_the_score():
    t = verdict_table(
        "position",
        [{"index": i, "reason": "r", "relevant": r} for i, r in enumerate([False, True, True])],
        None,
    )
    assert [r.flag for r in t.rows] == [
        "irrelevant",
        "relevant, but ranked below irrelevant piece #0",
        "relevant, but ranked below irrelevant piece #0",
    ]
    t = verdict_table(
        "relevance",
        [
            {"index": 0, "reason": "r", "relevance": "high", "used": True},
            {"index": 1, "reason": "r", "relevance": "medium", "used": False},
            {"index": 2, "reason": "r", "relevance": "none", "used": False},
            {"index": 3, "reason": "r", "relevance": "high", "used": False},
        ],
        {"missing": ["x"], "truncated": {"pieces": [2]}},
    )
    assert [r.flag for r in t.rows] == [
        None,
        None,
        "relevance none",
        "high relevance, but the response did not use it",
    ]
    assert t.missing == ["x"]
    assert t.notes == ["Contexts were trimmed to fit the context window (#2)."]
    skipped = {"count": 1, "why": "the reason call did not fit the context window"}
    t = verdict_table("position", [{"index": 0, "relevant": True}], {"reasons_skipped": skipped})
    assert t.notes == ["1 reason(s) left out: the reason call did not fit the context window."]
    t = verdict_table("other", [{"b": 1, "a": "x"}], None)
    assert t.columns == ["a", "b"]
    assert t.rows[0].cells == ["x", "1"]


def test_verdict_tables_mark_close_calls_with_their_distance():
    near = round(min(CLOSE_CALL_MARGINS.values()) / 2, 4)
    t = verdict_table(
        "relevance",
        [
            {"index": 0, "relevance": "medium", "used": True,
             "close_call": {"relevance": near, "used": -near}},
            {"index": 1, "relevance": "high", "used": True},
        ],
        None,
    )  # fmt: skip
    assert [r.close for r in t.rows] == [
        f"close call: relevance {near:+.4f}, used {-near:+.4f}",
        None,
    ]
    t = verdict_table("recall", [{"statement": "s", "attributed": 0,
                                  "close_call": {"attributed": -near}}], None)  # fmt: skip
    assert t.rows[0].close == f"close call: attributed {-near:+.4f}"
    assert t.rows[0].flag == "not supported by the contexts"
    # a metric the report does not know: the mark, never a column
    t = verdict_table("other", [{"a": 1, "close_call": {"a": near}}], None)
    assert t.columns == ["a"]
    assert t.rows[0].close == f"close call: a {near:+.4f}"


def with_close_call(out, dest):
    """A copy of the eval run ``out`` whose ok-1 recall row's first verdict is a close call."""
    near = round(min(CLOSE_CALL_MARGINS.values()) / 2, 4)
    dest.mkdir()
    rows = read_rows(out)
    for r in rows:
        if (r["id"], r["metric"]) == ("ok-1", "recall"):
            r["verdicts"][0]["close_call"] = {"attributed": near}
    (dest / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    summary = json.loads((out / "summary.json").read_text("utf-8"))
    summary["metrics"]["recall"]["close_calls"] = 1
    (dest / "summary.json").write_text(json.dumps(summary), "utf-8")
    return dest, near


def test_eval_report_marks_close_calls_and_counts_them(eval_run, tmp_path):
    run, near = with_close_call(eval_run[1], tmp_path / "close")
    html = render_report(run, data=eval_run[0])
    assert_self_contained(html)
    # the metrics table counts them per metric, and says what they are
    assert re.search(r'<td class="close-count some">1</td></tr>', html)
    assert html.count('<td class="close-count">0</td>') == 2
    assert 'id="close-note"' in html
    # the item's row is marked, and its verdict carries the distance
    doc = Doc(html)
    marks = [a for tag, a in doc.tags if tag == "span" and a.get("class") == "closemark"]
    assert len(marks) == 1
    assert "1 close" in " ".join(doc.text)
    payload = doc.payload()
    rows = read_rows(run)
    n = next(i for i, r in enumerate(rows) if (r["id"], r["metric"]) == ("ok-1", "recall"))
    assert [r["close"] for r in payload["items"][n]["table"]["rows"]] == [
        f"close call: attributed {near:+.4f}",
        None,
    ]


def test_eval_report_of_a_run_without_close_calls(eval_html, tmp_path, eval_run):
    # the scripted run has no soft verdicts: no close call anywhere, no note
    assert eval_html.count('<td class="close-count">0</td>') == 3
    assert 'id="close-note"' not in eval_html
    assert not [a for tag, a in Doc(eval_html).tags if a.get("class") == "closemark"]
    # a summary written before close calls were counted shows a dash
    run = copy_run(eval_run[1], tmp_path / "old")
    summary = json.loads((run / "summary.json").read_text("utf-8"))
    for stats in summary["metrics"].values():
        del stats["close_calls"]
    (run / "summary.json").write_text(json.dumps(summary), "utf-8")
    assert render_report(run).count('<td class="close-count">–</td>') == 3


def test_script_json_cannot_close_its_element():
    value = {"a": "</script><script>alert(1)</script>", "b": "x & y <!-- -->", "c": "\u2028"}
    text = str(script_json(value))
    assert not set(text) & {"<", ">", "&", "\u2028"}
    assert json.loads(text) == value
    assert json.loads(str(script_json({"n": float("nan")}))) == {"n": None}


# ---------------------------------------------------------------- bench report


def test_bench_report_compares_judges(bench_dir, bench_html):
    report = json.loads((bench_dir / "bench.json").read_text("utf-8"))
    doc = assert_self_contained(bench_html)
    assert_inert(bench_html, doc)
    text = " ".join(doc.text)
    assert JUDGE_A in text
    assert JUDGE_B in text  # the name with markup in it, as text
    assert "&lt;i&gt;yes&lt;/i&gt;-judge" in bench_html
    for label in (
        "relevant: accuracy",
        "relevant: kappa (none weights)",
        "levels: kappa (quadratic weights)",
        "used: accuracy",
        "score Spearman",
        "score Kendall",
        "score MAE",
        "score ROC AUC",
        "seconds / item",
        "tokens / s",
        "load s",
        "peak MB",
    ):
        assert label in text, label
    rel = report["judges"][JUDGE_A]["metrics"]["relevance"]["verdicts"]["levels"]
    acc = rel["accuracy"]
    assert f"{acc['value']:.3f} [{acc['ci95'][0]:.3f}, {acc['ci95'][1]:.3f}]" in text
    # confusion matrices: per metric x label key x judge (position: 1 key, relevance: 3 keys)
    assert bench_html.count('<table class="confusion">') == (1 + 3) * 2
    assert "levels: confusion (rows: human, columns: judge)" in text
    cells = [int(c) for c in re.findall(r'rgba\(37, 99, 235, [0-9.]+\)">(\d+)</td>', bench_html)]
    position = report["judges"][JUDGE_A]["metrics"]["position"]["verdicts"]["relevant"]
    assert cells[:4] == [c for row in position["confusion"]["matrix"] for c in row]
    assert sum(cells) == sum(
        sum(map(sum, v["confusion"]["matrix"]))
        for j in report["judges"].values()
        for m in j["metrics"].values()
        for v in m["verdicts"].values()
    )


def test_bench_report_lists_the_largest_disagreements(bench_dir, bench_html):
    items = [
        json.loads(line)
        for line in (bench_dir / "bench_items.jsonl").read_text("utf-8").splitlines()
    ]
    worst = [r for r in items if r["abs_error"]][:20]
    assert worst
    table = bench_html[bench_html.index('id="worst"') :]
    errors = re.findall(r'<td class="num abs">([0-9.]+)</td>', table)
    assert [float(e) for e in errors] == [round(r["abs_error"], 3) for r in worst]
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in table  # an id with markup
    assert 'class="piece flag"' in table  # a mismatching verdict is marked


# ---------------------------------------------------------------- errors


def test_not_a_run(tmp_path):
    with pytest.raises(DataError, match="neither an eval run"):
        render_report(tmp_path)
    (tmp_path / "results.jsonl.partial").write_text("", "utf-8")
    with pytest.raises(DataError) as exc:
        render_report(tmp_path)
    assert "did not complete" in exc.value.hint
    with pytest.raises(DataError, match="no run directory"):
        render_report(tmp_path / "missing")


def test_unknown_format_versions(eval_run, bench_dir, tmp_path):
    out = eval_run[1]
    run = copy_run(out, tmp_path / "summary2")
    summary = json.loads((run / "summary.json").read_text("utf-8"))
    (run / "summary.json").write_text(json.dumps({**summary, "format": 3}), "utf-8")
    with pytest.raises(DataError, match=r"summary\.json: unknown format version 3"):
        render_report(run)

    run = copy_run(out, tmp_path / "rows2")
    lines = (run / "results.jsonl").read_text("utf-8").splitlines()
    assert lines[3].startswith('{"format":2,')
    lines[3] = lines[3].replace('{"format":2,', '{"format":3,', 1)
    (run / "results.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    with pytest.raises(DataError, match=r"results\.jsonl line 4: unknown format version 3"):
        render_report(run)

    run = copy_run(out, tmp_path / "broken")
    (run / "results.jsonl").write_text('{"format":2,\n', "utf-8")
    with pytest.raises(DataError, match="line 1"):
        render_report(run)

    bench_copy = tmp_path / "bench2"
    bench_copy.mkdir()
    report = json.loads((bench_dir / "bench.json").read_text("utf-8"))
    (bench_copy / "bench.json").write_text(json.dumps({**report, "format": None}), "utf-8")
    (bench_copy / "bench_items.jsonl").write_text("", "utf-8")
    with pytest.raises(DataError, match="unknown format version None"):
        render_report(bench_copy)
