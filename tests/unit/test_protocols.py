"""Protocols: the prompts and layout of every kind of decision have a name and a fingerprint,
computed from the code alone; a prompt that changes without a new protocol fails here, and a
record made under another fingerprint is refused, naming both protocols."""

from __future__ import annotations

import pytest

from localjudge.decisions import KINDS
from localjudge.errors import ModelError, ProtocolError
from localjudge.metrics import branched, instructions, position, recall, relevance
from localjudge.metrics.base import PROTOCOL_NAMES
from localjudge.metrics.protocols import (
    CURRENT,
    PROTOCOLS,
    UNNAMED,
    ProtocolRef,
    check_protocol,
    current_protocol,
    fingerprint,
    reference_asks,
)


@pytest.mark.parametrize("name", list(PROTOCOLS))
def test_each_protocol_is_the_committed_one(name):
    """Fails when a prompt, a schema or the layout of an ask changes while the protocol stays:
    every committed row and every fit was made under the old prompts."""
    found = fingerprint(name)
    assert found == PROTOCOLS[name], (
        f"the asks of protocol {name} changed (fingerprint {found}, committed "
        f"{PROTOCOLS[name]}). Rows, shipped cut-offs and users' fits were made under the "
        "committed one: define a new protocol in localjudge/metrics/protocols.py (a new name "
        "in PROTOCOLS, its own asks) instead of changing this one"
    )


def test_the_protocols_differ_and_the_default_is_protocol_1():
    assert len({fingerprint(p) for p in PROTOCOLS}) == len(PROTOCOLS)
    assert fingerprint() == fingerprint(CURRENT) == fingerprint("1")
    assert tuple(PROTOCOLS) == PROTOCOL_NAMES


@pytest.mark.parametrize(
    ("module", "name", "protocols"),
    [
        (instructions, "PASSAGE_SYSTEM", {"1"}),
        (instructions, "RELEVANT_TARGET_QUESTION", {"1", "3"}),  # protocol 3's answer ending
        (instructions, "USED_QUESTION", {"1", "3"}),  # and its used ending
        (branched, "SYSTEM", {"2", "3"}),
        (branched, "ANSWER_SYSTEM", {"2"}),
        (branched, "CONTEXT_SYSTEM", {"2", "3"}),
        (branched, "RELEVANT_ENDING", {"2", "3"}),
        (branched, "GRADE_ENDING", {"2", "3"}),
        (branched, "ANSWER_ENDING", {"2"}),
        (branched, "RESPONSE_ANSWER_ENDING", {"2"}),
        (branched, "USED_ENDING", {"2"}),
        (branched, "MISSING_ENDING", {"2", "3"}),
        (branched, "SUPPORTED_ENDING", {"2", "3"}),
    ],
)
def test_a_changed_word_changes_that_protocols_fingerprint_only(
    monkeypatch, module, name, protocols
):
    before = {p: fingerprint(p) for p in PROTOCOLS}
    text = getattr(module, name)
    changed = text.replace("the", "a", 1)
    assert changed != text
    for holder in (instructions, branched, position, relevance, recall):  # every import of it
        if getattr(holder, name, None) is text:
            monkeypatch.setattr(holder, name, changed)
    after = {p: fingerprint(p) for p in PROTOCOLS}
    assert {p for p in PROTOCOLS if after[p] != before[p]} == protocols


@pytest.mark.parametrize("name", list(PROTOCOLS))
def test_the_reference_asks_cover_every_kind_of_decision(name):
    asks = reference_asks(name)
    assert set(KINDS) <= set(asks)
    assert {"baseline", "Missing", "reason"} <= set(asks)
    assert set(asks) - set(KINDS) == {"baseline", "Missing", "reason"}
    for rendered in asks.values():
        for ask in rendered:
            assert ask["messages"][0]["role"] == "system"
            assert ask["schema"]["type"] == "object"


def test_every_protocol_has_a_sha256_and_today_is_protocol_1():
    assert CURRENT in PROTOCOLS
    assert all(ProtocolRef.from_json({"name": n, "fingerprint": f}) for n, f in PROTOCOLS.items())
    assert UNNAMED.as_json() == {"name": "1", "fingerprint": PROTOCOLS["1"]}
    assert current_protocol() == ProtocolRef(CURRENT, PROTOCOLS[CURRENT])
    assert current_protocol().as_json() == {"name": CURRENT, "fingerprint": PROTOCOLS[CURRENT]}


def test_a_known_protocol_passes_and_another_fingerprint_is_refused_naming_both():
    check_protocol(current_protocol(), "the rows", hint="h")
    other = ProtocolRef(CURRENT, "ab" * 32)
    with pytest.raises(ProtocolError) as info:
        check_protocol(other, "the rows of x", hint="judge them again")
    message = str(info.value)
    assert f"protocol {CURRENT} (abababababab)" in message
    assert f"protocol {CURRENT} ({PROTOCOLS[CURRENT][:12]})" in message
    assert message.startswith("the rows of x were made under")
    assert info.value.hint == "judge them again"
    assert isinstance(info.value, ModelError)  # exit code 4: what loads with the judge is wrong


def test_an_unknown_protocol_is_refused_naming_both():
    with pytest.raises(ProtocolError, match="does not know") as info:
        check_protocol(ProtocolRef("9", "cd" * 32), "the fit", hint="h")
    assert "protocol 9 (cdcdcdcdcdcd)" in str(info.value)
    assert str(current_protocol()) in str(info.value)


@pytest.mark.parametrize(
    "data",
    [
        None,
        "1",
        {"name": "1"},
        {"name": "", "fingerprint": "a" * 64},
        {"name": "1", "fingerprint": "A" * 64},
        {"name": "1", "fingerprint": "a" * 63},
    ],
)
def test_a_malformed_protocol_is_not_read(data):
    with pytest.raises(ValueError, match="protocol"):
        ProtocolRef.from_json(data)
