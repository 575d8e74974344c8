"""The crash report's bookkeeping: which items were handed to the judge and not finished."""

from __future__ import annotations

from localjudge.isolation import Flight


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
