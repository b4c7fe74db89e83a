"""A stop ends the turn at every step, and no request leaves the machine after it: during a tool call,
at a confirmation, inside a delegated agent (at any depth, its server silent), before the citation
judge and during the rolling summary. Each test counts the requests the fake server received after
the stop (tests/fakes record every request, a refused one too). The turn runs in this thread (SQLite
wants it); a stalled server is rescued by a watchdog only to end a test that would otherwise hang."""

from __future__ import annotations

import json
import threading
import time

import pytest

from chat_support import _no_proxies, anth, anthropic_provider, config, new_chat, searcher, send  # noqa: F401
from core.chat import conversation as chat_module
from fakes import slow, text, tool_call

STALL = 600.0  # the fake's silence: far beyond the guard below
GUARD = 15.0  # a turn still running after this long waited on the server


class Stop:
    """The stop flag, and how many requests the server had received when it was set."""

    def __init__(self, srv):
        self.srv = srv
        self.event = threading.Event()
        self.at: int | None = None

    def set(self) -> None:
        if not self.event.is_set():
            self.at = len(self.srv.requests)
            self.event.set()

    @property
    def after(self) -> int:
        """Requests the server received after the stop."""
        assert self.at is not None, "the stop never came"
        return len(self.srv.requests) - self.at


def run(chat, message: str, stop: Stop, *, when=None, watch=None) -> tuple[list, bool]:
    """Send `message`; `when(event, events)` sets the stop from this thread as events arrive, `watch()`
    from a watcher thread (a stop while this thread waits on a silent server). Returns (events,
    whether the watchdog had to end the server's silence, i.e. the stop waited on the server)."""
    finished, rescued = threading.Event(), threading.Event()
    events: list = []

    def watcher() -> None:
        while not finished.wait(0.05):
            if watch():
                finished.wait(0.2)  # let the reader settle into the silence
                stop.set()
                return

    def rescue() -> None:
        rescued.set()
        stop.srv._stopping.set()  # the fake's sleeps end and the replies go on

    if watch is not None:
        threading.Thread(target=watcher, daemon=True).start()
    watchdog = threading.Timer(GUARD, rescue)
    watchdog.start()
    try:
        for event in chat.send(message, stop.event):
            events.append(event)
            if when is not None and when(event, events):
                stop.set()
    finally:
        finished.set()
        watchdog.cancel()
    return events, rescued.is_set()


def tool_rows(store, chat_id: int) -> list[dict]:
    return [b for r in store.db.execute("SELECT content FROM messages WHERE chat_id = ? ORDER BY id", (chat_id,))
            for b in json.loads(r[0]) if b.get("type") in ("tool_use", "tool_result")]


def test_a_stop_during_a_tool_call_sends_no_further_request(store, searcher, anth):
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(tool_call("queryNodes", {"limit": 1}, id="toolu_a"), tool_call("queryNodes", {"limit": 2}, id="toolu_b"))
    anth.script.add(text("Here is what I found."))
    stop = Stop(anth)
    events, _ = run(chat, "Find my notes", stop, when=lambda e, _: e.type == "tool_result")  # as the 1st returns
    assert stop.after == 0, "a request was sent after the stop"
    assert [e.stop_reason for e in events if e.type == "stop"][-1] == "cancelled"
    assert chat.last_reply.status == "incomplete"
    # the step is kept whole: both calls answered, the second one as not run
    blocks = tool_rows(store, chat.id)
    assert [b["type"] for b in blocks] == ["tool_use", "tool_use", "tool_result", "tool_result"]
    assert blocks[3] == {"type": "tool_result", "tool_use_id": "toolu_b", "content": chat_module.NOT_RUN,
                         "is_error": True}
    send(chat, "Go on")  # the next turn is accepted by the strict fake
    assert anth.last.status == 200 and chat.last_reply.status == "complete"


@pytest.mark.parametrize("answer", [True, False], ids=["answered-yes-as-it-stopped", "dialog-ended-by-the-stop"])
def test_a_stop_at_a_confirmation_refuses_the_edit_and_sends_no_further_request(store, searcher, anth, answer):
    node = store.add_node("Left", "a note")["id"]
    stop = Stop(anth)
    asked = []

    def confirm(action, detail):  # the dialog is open when the user stops the turn
        asked.append(action)
        stop.set()
        return answer

    chat = new_chat(store, anthropic_provider(anth), searcher, confirm=confirm)
    anth.script.add(tool_call("updateNode", {"id": node, "title": "Renamed"}),
                    tool_call("updateNode", {"id": node, "title": "Renamed again"}))
    anth.script.add(text("Renamed it."))
    run(chat, "Rename my note", stop)
    assert stop.after == 0, "a request was sent after the stop"
    assert len(asked) == 1  # not asked again once stopped
    assert store.get_node(node)["title"] == "Left"  # an answer that came with the stop changes nothing
    assert chat.last_reply.status == "incomplete"


def test_a_stop_inside_a_delegated_agent_at_depth_2_with_its_server_silent(store, searcher, anth):
    chat = new_chat(store, anthropic_provider(anth), searcher)  # orchestrator, depth 0
    anth.script.add(tool_call("delegate", {"agent": "planner", "task": "plan it"}))  # → planner, depth 1
    anth.script.add(tool_call("delegate", {"agent": "orchestrator", "task": "do it"}))  # → orchestrator, depth 2
    anth.script.add(slow(STALL, where="headers"), text("done at depth 2"))  # depth 2's server is silent
    anth.script.add(text("planner done"), times=1)
    anth.script.add(text("all done"))
    stop = Stop(anth)
    events, rescued = run(chat, "Plan my week", stop, watch=lambda: len(anth.requests) >= 3)
    assert not rescued, "the stop waited on the delegated agent's silent server"
    assert stop.after == 0, "a request was sent after the stop"
    assert chat.last_reply.status == "incomplete"
    results = [b for b in tool_rows(store, chat.id) if b["type"] == "tool_result"]
    assert results[0]["is_error"] and "Stopped" in results[0]["content"]


def test_a_stop_as_the_citation_check_starts_sends_no_judge_request(store, searcher, anth, indexer):
    store.add_node("Compost guide", "Compost needs greens, browns, air and water. " * 4)
    indexer.run()
    chat = new_chat(store, anthropic_provider(anth), searcher, cfg=config(check_citations="model"))
    anth.script.add(text("Compost needs air and water [1]."))
    anth.script.add(text(json.dumps({"verdicts": [{"claim": 1, "verdict": "supported", "why": "It says so."}]})))
    stop = Stop(anth)
    events, _ = run(chat, "How do I make compost?", stop, when=lambda e, _: e.type == "phase")
    assert [e.text for e in events if e.type == "phase"] == ["citation_check"]
    assert stop.after == 0, "the judge request was sent after the stop"
    reply = chat.last_reply
    assert reply.status == "complete" and reply.text == "Compost needs air and water [1]."
    assert reply.citation_check.mode == "model" and "citation_check" not in reply.side_usage


def test_a_stop_during_the_rolling_summary_sends_no_turn_request(store, searcher, anth, monkeypatch):
    monkeypatch.setattr(chat_module, "SUMMARY_THRESHOLD_TOKENS", 60)
    chat = new_chat(store, anthropic_provider(anth), searcher)
    for i in range(5):
        anth.script.add(text(f"answer {i}"))
        send(chat, f"question {i} " + "padding " * 10)
    n = len(anth.requests)
    anth.script.add(slow(STALL, where="headers"), text("## Decisions\n- none"))  # the summary's server is silent
    anth.script.add(text("answer 5"))
    stop = Stop(anth)
    events, rescued = run(chat, "question 5", stop, watch=lambda: len(anth.requests) > n)
    assert not rescued, "the stop waited on the summary's silent server"
    assert anth.requests[n].body["system"][0]["text"].startswith("Summarise the conversation")
    assert stop.after == 0, "the turn's request was sent after the stop"
    assert "summary" not in chat.metadata
    assert chat.last_reply.status == "incomplete"
    assert [e.stop_reason for e in events if e.type == "stop"] == ["cancelled"]


def test_a_side_request_asked_after_a_stop_is_not_sent(anth):
    """model_reply.complete (the citation judge, distil, integrate) sends nothing once stopped."""
    from core.chat import model_reply

    provider = anthropic_provider(anth)
    assert model_reply.complete(provider, "Judge these.", "[1] ...", chat_key="k", max_tokens=64).text == "ok"
    stop = Stop(anth)
    stop.set()
    reply = model_reply.complete(provider, "Judge these.", "[1] ...", chat_key="k", max_tokens=64, cancel=stop.event)
    assert reply.stop == "cancelled" and reply.text == ""
    time.sleep(1.0)  # a request left in a thread of its own would reach the local server well within this
    assert stop.after == 0
