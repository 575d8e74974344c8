"""The HTML report in a real headless Chromium (driven by Playwright over a pipe).

Needs the ``playwright`` Python package and a Chromium binary (Debian: ``apt-get install
chromium``); Playwright's own browser download is never used. Without either, the whole module is
skipped with a "BROWSER TESTS SKIPPED:" reason (pytest's -ra prints it), or fails when
``LOCALJUDGE_REQUIRE_BROWSER=1`` is set, as CI should.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from localjudge.run.report.render import write_report

REQUIRED = os.environ.get("LOCALJUDGE_REQUIRE_BROWSER", "") not in ("", "0")


def _unavailable(reason: str) -> None:
    if REQUIRED:
        pytest.fail(f"BROWSER TESTS CANNOT RUN: {reason} (LOCALJUDGE_REQUIRE_BROWSER is set)")
    pytest.skip(f"BROWSER TESTS SKIPPED: {reason}", allow_module_level=True)


try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:
    _unavailable("the playwright package is not installed (pip install playwright)")

CHROMIUM = next(
    (
        path
        for path in (
            os.environ.get("LOCALJUDGE_CHROMIUM"),
            shutil.which("chromium"),
            shutil.which("chromium-browser"),
            "/usr/bin/chromium",
        )
        if path and Path(path).is_file()
    ),
    None,
)
if CHROMIUM is None:
    _unavailable("no chromium binary found (apt-get install chromium, or set LOCALJUDGE_CHROMIUM)")

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _load_builders():
    """The run builders of tests/unit/test_report.py (one source for both test modules)."""
    path = Path(__file__).resolve().parents[1] / "unit" / "test_report.py"
    spec = importlib.util.spec_from_file_location("report_builders", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


B = _load_builders()


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def eval_report(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval")
    _data, out = B.build_eval_run(root)
    return write_report(out), B.read_rows(out)


@pytest.fixture(scope="module")
def bench_report(tmp_path_factory):
    return write_report(B.build_bench_run(tmp_path_factory.mktemp("bench")))


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@dataclass
class Tab:
    """A page with everything it reported: console errors, page errors, requests, dialogs."""

    page: object
    errors: list = field(default_factory=list)
    requests: list = field(default_factory=list)
    dialogs: list = field(default_factory=list)

    def assert_clean(self):
        assert self.errors == []
        assert self.dialogs == []
        assert self.requests, "the page itself should be requested"
        outside = [u for u in self.requests if not u.startswith(("file://", "data:"))]
        assert outside == []


@pytest.fixture
def open_tab(browser):
    pages = []

    def open_(path: Path) -> Tab:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(30_000)
        tab = Tab(page)
        page.on(
            "console",
            lambda m: m.type == "error" and tab.errors.append(f"console: {m.text}"),
        )
        page.on("pageerror", lambda exc: tab.errors.append(f"pageerror: {exc}"))
        page.on("request", lambda r: tab.requests.append(r.url))

        def on_dialog(dialog):
            tab.dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", on_dialog)
        page.goto(path.as_uri(), wait_until="load")
        pages.append(page)
        return tab

    yield open_
    for page in pages:
        page.close()


# ---------------------------------------------------------------- helpers

VISIBLE = "#items tbody.item:not([hidden])"


def order(page, attr):
    return page.eval_on_selector_all(
        "#items tbody.item", f"bodies => bodies.map(b => b.getAttribute('{attr}'))"
    )


def visible_count(page):
    return page.locator(VISIBLE).count()


def row_n(rows, item_id, metric):
    return next(n for n, r in enumerate(rows) if r["id"] == item_id and r["metric"] == metric)


# ---------------------------------------------------------------- eval report


def test_eval_report_opens_offline_without_errors(open_tab, eval_report):
    path, rows = eval_report
    tab = open_tab(path)
    page = tab.page
    assert page.title().startswith("localjudge eval report")
    assert visible_count(page) == len(rows)
    assert page.inner_text("#shown-count") == f"{len(rows)} of {len(rows)} rows"
    assert page.locator("svg.hist").count() == 3
    tab.assert_clean()
    assert tab.requests == [path.as_uri()]


def test_sorting_by_score_id_and_metric(open_tab, eval_report):
    path, rows = eval_report
    tab = open_tab(path)
    page = tab.page
    scores = [r["score"] for r in rows]

    def expected(descending):
        sign = -1 if descending else 1
        return [
            str(n)
            for n in sorted(
                range(len(rows)),
                key=lambda n: (scores[n] is None, sign * (scores[n] or 0), n),
            )
        ]

    page.click("button[data-sort=score]")
    assert order(page, "data-n") == expected(descending=False)
    assert page.get_attribute("th:has(button[data-sort=score])", "aria-sort") == "ascending"
    page.click("button[data-sort=score]")
    assert order(page, "data-n") == expected(descending=True)
    assert page.get_attribute("th:has(button[data-sort=score])", "aria-sort") == "descending"
    # unscored rows (failures) stay last in both directions
    assert [scores[int(n)] for n in order(page, "data-n")][-B.N_FAILED :] == [None] * B.N_FAILED

    page.click("button[data-sort=metric]")
    metrics = order(page, "data-metric")
    assert metrics == sorted(metrics)
    assert page.get_attribute("th:has(button[data-sort=score])", "aria-sort") == "none"
    page.click("button[data-sort=index]")
    page.click("button[data-sort=index]")
    indices = [int(i) for i in order(page, "data-index")]
    assert indices == sorted(indices, reverse=True)
    tab.assert_clean()


def test_filters_by_metric_failures_and_score_range(open_tab, eval_report):
    path, rows = eval_report
    tab = open_tab(path)
    page = tab.page
    n_position = sum(r["metric"] == "position" for r in rows)
    n_failed = sum(r["error"] is not None for r in rows)
    assert n_failed == B.N_FAILED

    page.select_option("#f-metric", "position")
    assert visible_count(page) == n_position
    assert page.inner_text("#shown-count") == f"{n_position} of {len(rows)} rows"
    assert set(page.eval_on_selector_all(VISIBLE, "bs => bs.map(b => b.dataset.metric)")) == {
        "position"
    }

    page.select_option("#f-metric", "")
    page.check("#f-failures")
    assert visible_count(page) == n_failed
    page.select_option("#f-metric", "relevance")
    assert visible_count(page) == sum(
        r["error"] is not None and r["metric"] == "relevance" for r in rows
    )
    page.select_option("#f-metric", "")
    page.uncheck("#f-failures")
    assert visible_count(page) == len(rows)

    page.fill("#f-min", "0.5")
    page.fill("#f-max", "0.9")
    in_range = [
        n for n, r in enumerate(rows) if r["score"] is not None and 0.5 <= r["score"] <= 0.9
    ]
    assert 0 < len(in_range) < len(rows)
    assert visible_count(page) == len(in_range)
    shown = page.eval_on_selector_all(VISIBLE, "bs => bs.map(b => Number(b.dataset.n))")
    assert shown == in_range

    page.click("#f-reset")
    # the reset event fires before the form is cleared; the script filters again right after
    # (expect polls with locators: wait_for_function's eval is refused by the page's CSP)
    expect(page.locator(VISIBLE)).to_have_count(len(rows))
    assert page.inner_text("#shown-count") == f"{len(rows)} of {len(rows)} rows"
    tab.assert_clean()


def test_expanding_a_row_shows_verdicts_contexts_and_flags(open_tab, eval_report):
    path, rows = eval_report
    tab = open_tab(path)
    page = tab.page
    n = row_n(rows, "ok-1", "relevance")
    body = page.locator(f'#items tbody.item[data-n="{n}"]')
    detail = body.locator("tr.detail")
    assert detail.is_hidden()
    body.locator(".toggle").click()
    assert detail.is_visible()
    assert body.locator(".toggle").get_attribute("aria-expanded") == "true"
    verdicts = detail.locator("table.verdicts tbody tr")
    assert verdicts.count() == 3
    assert detail.locator("table.verdicts tbody tr.flag").count() == 2
    text = detail.inner_text()
    for expected in (
        "In which year did the tower open?",  # question
        "meh bananas",  # a context, next to its verdict
        "relevance low",
        "high relevance, but the response did not use it",
        "the <b>year</b> it opened",  # missing information, as text
    ):
        assert expected in text, expected
    assert detail.locator("ul.missing li").inner_text() == "the <b>year</b> it opened"

    # recall: the unsupported statement is flagged and the contexts are listed
    m = row_n(rows, "ok-1", "recall")
    page.click(f'#items tbody.item[data-n="{m}"] tr.main td.reason')  # a click on the row works too
    recall = page.locator(f'#items tbody.item[data-n="{m}"] tr.detail')
    assert recall.is_visible()
    assert recall.locator("tr.flag").inner_text().startswith("It opened in 1889.")
    assert recall.locator("ol.contexts li").count() == 3

    # a failure shows its error
    f = row_n(rows, "no-response-4", "relevance")
    page.click(f'#items tbody.item[data-n="{f}"] .toggle')
    assert "invalid_item" in page.inner_text(f'#items tbody.item[data-n="{f}"] tr.detail')

    body.locator(".toggle").click()
    assert detail.is_hidden()
    tab.assert_clean()


def test_injected_markup_stays_text_and_runs_nothing(open_tab, eval_report, tmp_path):
    path, rows = eval_report
    tab = open_tab(path)
    page = tab.page
    for n in range(len(rows)):  # every detail rendered
        page.click(f'#items tbody.item[data-n="{n}"] .toggle')
    page.wait_for_timeout(300)  # an onerror or onload would have fired by now
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert tab.dialogs == []
    assert page.locator("img").count() == 0
    assert page.locator("[onerror], [onload]").count() == 0
    assert page.locator("script").count() == 2  # the JSON data block and the page's own script

    n = row_n(rows, B.INJECTION_ID, "position")
    body = page.locator(f'#items tbody.item[data-n="{n}"]')
    assert body.locator("td.id").inner_text() == B.PWN
    detail = body.locator("tr.detail").inner_text()
    assert B.BREAKOUT in detail
    assert B.IMG in detail
    assert B.REASON_IMG in detail
    assert f"Is this {B.IMG} safe?" in detail

    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    png = (tmp_path / "report.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(png) > 20_000
    tab.assert_clean()


def test_a_close_call_is_marked_in_its_row_and_its_verdict(open_tab, eval_report, tmp_path):
    out = eval_report[0].parent
    run, near = B.with_close_call(out, tmp_path / "close")
    rows = B.read_rows(run)
    tab = open_tab(write_report(run, data=out.parent / "data.jsonl"))
    page = tab.page
    assert page.locator("td.close-count.some").inner_text() == "1"
    n = row_n(rows, "ok-1", "recall")
    body = page.locator(f'#items tbody.item[data-n="{n}"]')
    assert body.locator("tr.main .closemark").inner_text() == "1 close"
    body.locator(".toggle").click()
    close = body.locator("table.verdicts tbody tr.close")
    assert close.count() == 1
    assert close.locator("td.closenote").inner_text() == f"close call: attributed {near:+.4f}"
    assert body.locator("table.verdicts thead").inner_text().split("\t")[-1].strip() == "close call"
    # another row of the run has no close call: no column for it
    m = row_n(rows, "ok-1", "position")
    page.click(f'#items tbody.item[data-n="{m}"] .toggle')
    position = page.locator(f'#items tbody.item[data-n="{m}"] table.verdicts')
    assert position.locator("td.closenote").count() == 0
    assert page.locator("tr.main .closemark").count() == 1
    tab.assert_clean()


# ---------------------------------------------------------------- bench report


def test_bench_report_opens_offline(open_tab, bench_report, tmp_path):
    tab = open_tab(bench_report)
    page = tab.page
    assert page.title().startswith("localjudge bench report")
    assert page.locator("table.confusion").count() == 8
    assert page.locator("#worst tbody tr").count() > 0
    assert B.JUDGE_B in page.inner_text("#judges")  # markup in a judge name, as text
    assert page.locator("#judges i").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"
    page.screenshot(path=str(tmp_path / "bench.png"), full_page=True)
    assert (tmp_path / "bench.png").stat().st_size > 20_000
    report = json.loads(bench_report.with_name("bench.json").read_text("utf-8"))
    assert all(name in page.inner_text("#judges") for name in report["judges"])
    tab.assert_clean()
