"""The crash report's bookkeeping: which items were handed to the judge and not finished."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from localjudge.judge.isolation import Flight


def test_the_first_unfinished_item_of_the_batch_is_named() -> None:
    flight = Flight()
    assert flight.describe() == "before or between judge calls"
    flight.update(("judging", [[0, "a", "recall"], [1, "b", "recall"], [2, "c", "recall"]]))
    flight.update(("done", (0, "recall")))
    assert flight.describe() == (
        "while judging item #1 (id 'b'), metric recall (1 more item(s) of the batch were waiting)"
    )
    flight.update(("done", (1, "recall")))
    flight.update(("done", (2, "recall")))
    assert flight.describe() == "before or between judge calls"


def test_a_retry_batch_replaces_what_was_pending_and_results_outside_it_are_ignored() -> None:
    flight = Flight()
    flight.update(("judging", [[0, "a", "position"], [1, "b", "position"]]))
    flight.update(("done", (7, "recall")))  # an item that needed no judge call
    flight.update(("judging", [[1, "b", "position"]]))  # only #1 is retried (trimmed)
    assert flight.pending == [(1, "b", "position")]
    assert flight.describe().startswith("while judging item #1 (id 'b'), metric position")
    assert "more" not in flight.describe()


def _stubborn(marker: str, reporter: object) -> None:
    """A judge child that ignores Ctrl-C and SIGTERM (stuck in native code, say)."""

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    Path(marker).touch()
    time.sleep(60)


SUPERVISOR = """
import sys
sys.path.insert(0, {here!r})
import test_isolation as t
from localjudge.judge.isolation import supervise
ended = supervise(t._stubborn, {marker!r})
print(ended.code, ended.signal, ended.interrupted)
"""


def test_a_second_ctrl_c_kills_a_child_that_ignores_the_first_and_is_an_interrupt(
    tmp_path,
) -> None:
    marker = tmp_path / "started"
    script = SUPERVISOR.format(here=str(Path(__file__).parent), marker=str(marker))
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), proc.communicate(timeout=5)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert proc.poll() is None  # the first is passed on, and ignored
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out.split() == ["130", "None", "True"]
