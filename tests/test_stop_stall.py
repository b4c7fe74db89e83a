"""A stop never waits on a silent server (core/providers/interrupt.py): against the fake servers, a
reply that stalls mid-stream, or a request whose headers never come, ends as "cancelled" as soon as
the user stops it, with the partial reply kept; the client's own timeout (minutes) is not reached.
The turn runs in a thread; the join's limit only guards against a hang, it measures nothing."""

from __future__ import annotations

import threading

import pytest

from chat_support import _no_proxies, anth, anthropic_provider, new_chat, oai, openai_provider, searcher  # noqa: F401
from core.providers import interrupt
from fakes import slow, text

STALL = 600.0  # the fake's silence: far beyond the test's guard below
GUARD = 30.0  # a turn still running after this long waited on the server
WORDS = text("Otters eat fish, crabs and frogs.", deltas=["Otters", " eat", " fish,", " crabs and frogs."])


def provider_for(kind, anth, oai):
    provider = anthropic_provider(anth) if kind == "anthropic" else openai_provider(oai)
    provider._client = provider.client.with_options(max_retries=0, timeout=STALL * 2)
    return provider


def run_turn(chat, srv, stop_when) -> tuple[list, bool]:
    """Send a message (SQLite wants this thread) while a watcher thread stops it once
    `stop_when(events so far)` holds. A watchdog ends the fake's silence after GUARD seconds:
    returns (the events, whether the turn had to be rescued by it, i.e. the stop waited on the server)."""
    cancel, finished, rescued = threading.Event(), threading.Event(), threading.Event()
    events: list = []

    def watch() -> None:
        while not finished.wait(0.05):
            if stop_when(events):
                finished.wait(0.2)  # let the reader settle into the silence
                cancel.set()
                return

    def rescue() -> None:
        rescued.set()
        srv._stopping.set()  # the fake's sleep ends and the reply goes on

    threading.Thread(target=watch, daemon=True).start()
    watchdog = threading.Timer(GUARD, rescue)
    watchdog.start()
    try:
        for event in chat.send("What do otters eat?", cancel):
            events.append(event)
    finally:
        finished.set()
        watchdog.cancel()
    return events, rescued.is_set()


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_a_stop_during_a_mid_reply_stall_ends_the_turn_and_keeps_the_partial_reply(store, searcher, anth, oai, kind):
    srv = anth if kind == "anthropic" else oai
    srv.script.add(WORDS, slow(STALL, where="mid_stream", after_deltas=2))
    chat = new_chat(store, provider_for(kind, anth, oai), searcher)
    events, rescued = run_turn(chat, srv, lambda evs: sum(e.type == "text" for e in evs) >= 2)
    assert not rescued, "the stop waited on the silent server"
    assert [e.stop_reason for e in events if e.type == "stop"] == ["cancelled"]
    assert not [e for e in events if e.type == "error"]
    assert chat.last_reply.text == "Otters eat" and chat.last_reply.status == "incomplete"


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_a_stop_while_the_headers_have_not_come_ends_the_turn(store, searcher, anth, oai, kind):
    srv = anth if kind == "anthropic" else oai
    srv.script.add(slow(STALL, where="headers"), WORDS)
    chat = new_chat(store, provider_for(kind, anth, oai), searcher)
    events, rescued = run_turn(chat, srv, lambda _events: bool(srv.requests))  # the request is at the server
    assert not rescued, "the stop waited for the headers"
    assert [e.stop_reason for e in events if e.type == "stop"] == ["cancelled"]
    assert chat.last_reply.text == "" and not [e for e in events if e.type == "error"]


def test_without_a_stop_flag_reading_is_the_plain_blocking_iteration():
    assert list(interrupt.read(iter([1, 2, 3]), None)) == [1, 2, 3]
    assert interrupt.call(lambda: "opened", None) == "opened"


def test_an_error_while_opening_or_reading_reaches_the_caller_as_itself():
    cancel = threading.Event()

    def refuse():
        raise ConnectionError("refused")

    with pytest.raises(ConnectionError, match="refused"):
        interrupt.call(refuse, cancel)

    def broken():
        yield 1
        raise ValueError("bad chunk")

    reader = interrupt.read(broken(), cancel)
    assert next(reader) == 1
    with pytest.raises(ValueError, match="bad chunk"):
        next(reader)


def test_an_abandoned_stream_is_closed_by_its_reader_when_its_next_read_returns():
    release, closed = threading.Event(), threading.Event()

    class Stalled:
        def __iter__(self):
            yield "first"
            release.wait(GUARD)  # the server's silence
            yield "late"

        def close(self):
            closed.set()

    cancel = threading.Event()
    reader = interrupt.read(Stalled(), cancel)
    assert next(reader) == "first"
    cancel.set()
    with pytest.raises(interrupt.Interrupted):
        next(reader)
    assert not closed.is_set()  # never closed from this thread while the reader is inside a read
    release.set()
    assert closed.wait(GUARD)
