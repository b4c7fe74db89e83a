"""The chat pane tells the truth while and after the model checks a reply's citations
(chat.check_citations = "model", core/chat/citations.py): the status line says the check is running and
that escape skips it; escape skips the check only (the reply is complete and kept) and says so inline;
a judge request that fails says why inline; and the reply's usage line adds the tokens of the side
requests made for its turn (the citation check, the rolling summary) as the fake server reported them,
also after the chat is reopened. Pilot, the real app, the real Anthropic SDK against the fake server."""

from __future__ import annotations

import json
import time

import pytest

from chat_support import KEY, _no_proxies, anth, anthropic_provider, config, new_chat, searcher, send  # noqa: F401
from core.chat.citations import SKIPPED
from fakes import FakeAnthropic, cut_after, http_error, rate_limited, slow, text, unauthorized
from test_side_usage import normalised
from test_tui_chat import SIZE, RecordingApp, errors, metas, plain, type_and_send
from tui.widgets.chat_pane import META_WIDTH, ChatPane, reply_meta_line
from tui_support import settle, wait_for

QUESTION = "How do I feed a sourdough starter?"


@pytest.fixture(autouse=True)
def _one_embedder(embedder, monkeypatch):
    import core.index.embedder

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)


@pytest.fixture
def starter(store, indexer):
    node = store.add_node("Sourdough starter", "Feed the sourdough starter with flour and water every day.")
    indexer.run()
    return node["id"]


@pytest.fixture
def srv(monkeypatch):
    with FakeAnthropic() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        yield server
    assert server.errors == []


def judged_app(db_path) -> RecordingApp:
    return RecordingApp(db_path, first_run_prompt=False)


async def start(pilot, app) -> None:
    """Choose the Anthropic provider and the model check once the app has settled: set right after the
    first pause, the choice was once found undone (the reply came from the offline provider), most
    likely by the Settings viewer's provider selector announcing its first value as it mounts."""
    await settle(app, pilot)
    await pilot.pause(0.1)
    app.services.config.chat.provider = "anthropic"
    app.services.config.chat.check_citations = "model"
    await pilot.pause(0.1)
    assert app.services.config.chat.provider == "anthropic"


def priced(*usages: dict) -> str:
    """What the pane shows for these requests to the fake's model, from the model table."""
    from core.chat.cost import NO_PRICE, Pricer

    total = NO_PRICE
    for usage in usages:
        total = total + Pricer().price(usage, "anthropic", "claude-sonnet-4-6")
    return total.label()


def status(app) -> str:
    return plain(app.query_one("#chat-status"))


def check_lines(app) -> list[str]:
    return [line for w in app.query(".citation-check") for line in plain(w).splitlines()]


def verdict(kind: str, why: str = "The note says so.") -> str:
    return json.dumps({"verdicts": [{"claim": 1, "verdict": kind, "why": why}]})


async def reopen(pilot, app, pane: ChatPane) -> None:
    chat_id = pane.chat_id
    await pilot.press("f5")
    assert not metas(app)
    pane.load_chat(chat_id)
    # the usage lines are mounted (awaited) before the pane takes the chat's id and shows its status
    await wait_for(pilot, lambda: metas(app) and pane.chat_id == chat_id, what="the reopened chat")


# -- core: the phase event and skipping ----------------------------------------------------------------
def judged_chat(store, searcher, anth, starter, check="model"):
    from core.chat.focus import Focus

    chat = new_chat(store, anthropic_provider(anth), searcher, cfg=config(check_citations=check))
    chat.set_focus(Focus((starter,), starter))  # so the cited note was sent
    anth.script.add(text(f"Feed it flour and water every day [NODE:{starter}]."))
    return chat


def side_rows(store) -> list:
    return store.db.execute("SELECT * FROM sent_log WHERE purpose = 'citation_check'").fetchall()


def test_a_phase_event_comes_once_just_before_the_judge_request(store, searcher, anth, starter):
    chat = judged_chat(store, searcher, anth, starter)
    anth.script.add(text(verdict("supported")))
    seen = []
    for event in chat.send(QUESTION):
        seen.append((event.type, event.text, len(anth.requests)))
    phases = [i for i, e in enumerate(seen) if e[0] == "phase"]
    assert len(phases) == 1 and seen[phases[0]][1:] == ("citation_check", 1)  # the judge not yet asked
    assert seen[phases[0] - 1][0] == "stop" and phases[0] == len(seen) - 1  # after the reply's last event
    assert len(anth.requests) == 2 and chat.last_reply.citation_check.status == "ok"
    assert chat.last_reply.side_usage == {"citation_check": normalised(anth.last.usage)}
    # the sent check alone makes no side request and says no phase
    chat = judged_chat(store, searcher, anth, starter, check="sent")
    assert [e for e in chat.send(QUESTION) if e.type == "phase"] == [] and chat.last_reply.side_usage == {}


def test_cancel_after_the_phase_skips_the_judge_and_keeps_the_reply(store, searcher, anth, starter):
    import threading

    chat = judged_chat(store, searcher, anth, starter)
    anth.script.add(slow(3), text(verdict("unsupported")))
    cancel = threading.Event()
    def escape_once_the_judge_is_asked() -> None:
        # escape while the judge runs: its request has reached the server, which answers after 3 s
        # (a stop set before the request starts sends nothing: see the test below and test_stop_everywhere)
        deadline = time.monotonic() + 10
        while len(anth.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        cancel.set()

    for event in chat.send(QUESTION, cancel):
        if event.type == "phase":
            threading.Thread(target=escape_once_the_judge_is_asked, daemon=True).start()
    reply = chat.last_reply
    result = reply.citation_check
    assert reply.status == "complete" and reply.error is None and len(anth.requests) == 2
    assert result.status == "skipped" and result.skipped and result.error is None
    assert result.lines() == [f"· {SKIPPED}"] and [i["status"] for i in result.items] == ["ok"]
    [row] = side_rows(store)  # the request went out: its row is kept, with what was counted
    assert json.loads(row["usage"]) == result.usage == reply.side_usage["citation_check"]
    reported = normalised(anth.last.usage)  # the prompt, counted by the server before it was stopped
    assert result.usage["input"] == reported["input"] > 0 and result.usage["cache_read"] == reported["cache_read"]
    stored = chat.messages()[-1]["citation_check"]
    assert stored["status"] == "skipped" and stored["skipped"] is True
    assert chat.messages()[-1]["status"] == "complete"


def test_cancel_as_the_reply_ends_skips_the_judge_without_a_request(store, searcher, anth, starter):
    import threading

    chat = judged_chat(store, searcher, anth, starter)
    cancel = threading.Event()
    for event in chat.send(QUESTION, cancel):
        if event.type == "stop":
            cancel.set()  # escape just after the last token: the reply is whole, the check not begun
    reply = chat.last_reply
    assert reply.status == "complete" and len(anth.requests) == 1 and side_rows(store) == []
    assert reply.citation_check.status == "skipped" and reply.citation_check.lines() == [f"· {SKIPPED}"]
    assert reply.side_usage == {}


# -- the usage line ------------------------------------------------------------------------------------
def test_the_usage_line_adds_side_requests_and_fits_80_columns():
    reply = {"input": 2_345, "output": 67, "cache_read": 0, "cache_write": 2_100}
    # no side request: the line is what it always was
    assert reply_meta_line(reply, "complete") == "in 2,345 (cache read 0, write 2,100) · out 67 · complete"
    assert reply_meta_line(reply, "complete", {}) == reply_meta_line(reply, "complete")
    judge = {"input": 412, "output": 38, "cache_read": 0, "cache_write": 0}
    # the cache figures shortened; the label in full while the line fits 80 columns, then shorter; the
    # numbers stay exact while that fits
    tiny = {"input": 812, "output": 67, "cache_read": 0, "cache_write": 0}
    assert reply_meta_line(tiny, "complete", {"citation_check": judge}) == (
        "in 812 (cache r 0 w 0) · out 67 · complete · + citation check 412 in/38 out")
    line = reply_meta_line(reply, "complete", {"citation_check": judge})
    assert line == "in 2,345 (cache r 0 w 2,100) · out 67 · complete · + check 412 in/38 out"
    # big numbers: 123k and 12.3k, so the line still fits
    big = {"input": 123_456, "output": 1_234, "cache_read": 120_000, "cache_write": 3_000}
    line = reply_meta_line(big, "complete", {"citation_check": {"input": 23_456, "output": 789}})
    assert line == "in 123k (cache r 120k w 3,000) · out 1,234 · complete · + check 23.5k in/789 out"
    # the summary too (judge first, then summary); past 80 columns only when nothing shorter is left
    summary = {"input": 9_876, "output": 543, "cache_read": 0, "cache_write": 0}
    line = reply_meta_line(reply, "complete", {"summary": summary, "citation_check": judge})
    assert line == ("in 2,345 (cache r 0 w 2,100) · out 67 · complete · + check 412 in/38 out"
                    " · + summary 9,876 in/543 out")
    # the price comes last (the reply's and its side requests'), and counts in the width
    assert reply_meta_line(reply, "complete", None, "$0.0123") == (
        "in 2,345 (cache read 0, write 2,100) · out 67 · complete · $0.0123")
    assert reply_meta_line(tiny, "complete", {"citation_check": judge}, "$0.0123") == (
        "in 812 (cache r 0 w 0) · out 67 · complete · + check 412 in/38 out · $0.0123")  # short label: 80 columns
    assert reply_meta_line(reply, "complete", {"citation_check": judge}, "price unknown (model x)").endswith(
        " · + check 412 in/38 out · price unknown (model x)")  # kept whole, past 80 columns if it must
    for shown in (reply_meta_line(tiny, "complete", {"citation_check": judge}), reply_meta_line(
            reply, "complete", {"citation_check": judge}), reply_meta_line(big, "complete", {"citation_check": judge})):
        assert len(shown) <= META_WIDTH


# -- while the judge runs, and its tokens -----------------------------------------------------------------
async def test_the_status_says_citations_are_being_checked_and_the_usage_line_counts_the_judge(
        db_path, starter, srv):
    reply_text = f"Feed it flour and water every day [NODE:{starter}]."
    srv.script.add(text(reply_text, deltas=4))
    srv.script.add(slow(3), text(verdict("unsupported", "The note says flour and water, not daily.")))
    app = judged_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot, app)
        pane = await type_and_send(pilot, app, QUESTION)
        await wait_for(pilot, lambda: status(app) == "checking citations… (esc skips)", what="the checking status")
        await wait_for(pilot, lambda: len(srv.model_requests()) == 2, what="the judge request")
        assert not metas(app)  # the judge (slow) has not answered: the turn goes on
        assert pane.query(".reply").last().source.startswith("Feed it flour and water every day")
        assert "streaming" not in status(app)
        await wait_for(pilot, lambda: metas(app), what="the usage line")
        assert status(app).startswith(f"chat #{pane.chat_id} · total")
        assert check_lines(app) == [f"✗ [NODE:{starter}] does not support: ‘{reply_text}’ "
                                    "(The note says flour and water, not daily.)"]
        answer, judge = [normalised(r.usage) for r in srv.model_requests()]
        meta = metas(app)[-1]
        # the reply's price counts its citation check's (claude-sonnet-4-6, writes at 5 minutes)
        assert meta == reply_meta_line(answer, "complete", {"citation_check": judge}, priced(answer, judge))
        assert priced(answer, judge) != priced(answer) and meta.endswith(" · " + priced(answer, judge))
        assert f"{judge['input']:,} in" in meta and f"{judge['output']:,} out" in meta and judge["input"] > 0
        # the chat's total counts both requests, in tokens and in money
        both = {k: answer[k] + judge[k] for k in answer}
        assert status(app).endswith(f"in {both['input']:,} (cache read {both['cache_read']:,}, write "
                                    f"{both['cache_write']:,}) · out {both['output']:,} · {priced(answer, judge)}")
        shown_status = status(app)

        await reopen(pilot, app, pane)  # the same line from what was stored
        assert metas(app) == [meta] and check_lines(app)[0].startswith(f"✗ [NODE:{starter}] does not support")
        assert status(app) == shown_status


async def test_escape_during_the_check_skips_it_keeps_the_reply_and_says_so(db_path, store, starter, srv):
    reply_text = f"Feed it flour and water every day [NODE:{starter}]."
    srv.script.add(text(reply_text))
    srv.script.add(slow(3), text(verdict("supported")))
    app = judged_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot, app)
        pane = await type_and_send(pilot, app, QUESTION)
        await wait_for(pilot, lambda: status(app) == "checking citations… (esc skips)", what="the checking status")
        footer = lambda: [key.description for key in app.screen.query("FooterKey")]
        await wait_for(pilot, lambda: "Skip check" in footer(), what="the footer's escape to say what it does now")
        assert "Stop reply" not in footer()
        await pilot.press("escape")
        # "skipping the citation check…" shows until the request ends, which no longer waits for the
        # slow judge (core/providers/interrupt.py): it may be gone by the next look
        await wait_for(pilot, lambda: metas(app), what="the turn to end")
        await settle(app, pilot)
        assert check_lines(app) == [f"· {SKIPPED}"] and SKIPPED.startswith("citation check skipped")
        source = pane.query(".reply").last().source
        assert source.startswith("Feed it flour and water every day") and f"(cairn:node/{starter})" in source
        meta = metas(app)[-1]
        assert meta.split(" · + ")[0].endswith(" · complete") and "stopped" not in meta and not errors(app)
        assert not pane.streaming

        await reopen(pilot, app, pane)
        assert check_lines(app) == [f"· {SKIPPED}"]
    row = store.db.execute("SELECT status, citations FROM messages WHERE role = 'assistant'").fetchone()
    assert row["status"] == "complete"  # the reply is whole; only its check was skipped
    stored = json.loads(row["citations"])["check"]
    assert stored["status"] == "skipped" and stored["skipped"] is True and "error" not in stored
    assert [i["status"] for i in stored["items"]] == ["ok"]  # it pointed at what was sent; never judged


# -- a judge that fails -------------------------------------------------------------------------------
FAILURES = {  # the judge's replies (each a list of actions) and what the inline line must say
    "401": ([[unauthorized()]], "ANTHROPIC_API_KEY"),
    "429": ([[rate_limited(retry_after=0.01)]] * 3, "429"),  # the first try and the SDK's two retries
    "500": ([[http_error(500, retry_after=0.01)]] * 3, "500"),
    "cut": ([[text(verdict("supported"), deltas=6), cut_after(2)]], "cut mid-reply"),
}


@pytest.mark.parametrize("failure", FAILURES, ids=list(FAILURES))
async def test_a_failing_judge_is_said_inline_and_the_reply_stands(db_path, store, starter, srv, failure):
    replies, reason = FAILURES[failure]
    srv.script.add(text(f"Feed it flour and water every day [NODE:{starter}]."))
    for actions in replies:
        srv.script.add(*actions)
    app = judged_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot, app)
        pane = await type_and_send(pilot, app, QUESTION)
        await wait_for(pilot, lambda: metas(app), what="the turn to end")
        lines = check_lines(app)
        assert len(lines) == 1 and lines[0].startswith("citation check failed: ") and reason in lines[0], lines
        assert "partial reply" not in lines[0]  # the reply is complete; only its check failed
        assert " · complete" in metas(app)[-1] and not errors(app)  # the reply itself is fine
        assert "Feed it flour" in pane.query(".reply").last().source
    stored = json.loads(store.db.execute(
        "SELECT citations FROM messages WHERE role = 'assistant'").fetchone()[0])["check"]
    assert stored["status"] == "failed" and stored["error"] == lines[0]


# -- the rolling summary's tokens ---------------------------------------------------------------------
async def test_a_turn_that_made_a_rolling_summary_shows_its_tokens(db_path, store, searcher, starter, srv,
                                                                   monkeypatch):
    import core.chat.conversation as chat_module

    chat = new_chat(store, anthropic_provider(srv), searcher)
    for i in range(5):
        srv.script.add(text(f"answer {i}"))
        send(chat, f"question {i} " + "padding " * 10)
    assert "summary" not in chat.metadata
    monkeypatch.setattr(chat_module, "SUMMARY_THRESHOLD_TOKENS", 100)
    srv.script.add(text("## Decisions\n- feed daily"))  # the summary, made before the 6th reply
    srv.script.add(text("answer 5"))
    app = judged_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot, app)
        app.services.config.chat.check_citations = "sent"  # the summary is the side request here
        pane = app.query_one(ChatPane)
        pane.load_chat(chat.id)
        await wait_for(pilot, lambda: len(metas(app)) == 5, what="the earlier turns")
        assert not any("+ summary" in m for m in metas(app))
        await type_and_send(pilot, app, "question 5")
        await wait_for(pilot, lambda: len(metas(app)) == 6, what="the 6th reply")
        summary_req, answer_req = srv.model_requests()[-2:]
        assert summary_req.body["system"][0]["text"].startswith("Summarise the conversation")
        summary, answer = normalised(summary_req.usage), normalised(answer_req.usage)
        meta = metas(app)[-1]
        assert meta == reply_meta_line(answer, "complete", {"summary": summary}, priced(answer, summary))
        assert f"+ summary {summary['input']:,} in" in meta and summary["input"] > 0

        await reopen(pilot, app, pane)
        assert metas(app)[-1] == meta and not any("+ summary" in m for m in metas(app)[:-1])
