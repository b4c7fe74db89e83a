"""Providers against the fake servers with the real SDKs: request bodies, cache breakpoints, usage,
prompt caching across turns, errors as sentences, retries, and the offline provider."""

from __future__ import annotations

import json
import logging
import threading

import pytest

from chat_support import (  # noqa: F401  (fixtures)
    FIXED_NOW,
    GPT,
    KEY,
    SONNET,
    _no_proxies,
    anth,
    anthropic_provider,
    cache_control_paths,
    closed_port,
    config,
    new_chat,
    oai,
    openai_provider,
    searcher,
    send,
)
from core.chat.focus import Focus
from core.providers.factory import make_provider
from core.providers.base import ProviderError, Turn, Usage
from fakes import (
    cut_after,
    http_error,
    invalid_tool_json,
    malformed_sse,
    rate_limited,
    text,
    tool_call,
    unauthorized,
)


@pytest.fixture
def core_notes(store):
    """Always-on notes long enough that the system part alone passes the 1,024-token minimum."""
    body = " ".join(f"Fact {i}: the project keeps its notes in one SQLite file." for i in range(150))
    store.add_node("Identity", body, metadata={"core": True})
    return body


def collect(provider, turn, cancel=None):
    events = list(provider.stream(turn, cancel))
    text_ = "".join(e.text for e in events if e.type == "text")
    errors = [e.error for e in events if e.type == "error"]
    usage = sum((e.usage for e in events if e.type == "usage"), Usage())
    return events, text_, errors, usage


def a_turn(store, searcher, provider, message="hello", focus=None):
    chat = new_chat(store, provider, searcher)
    if focus:
        chat.set_focus(focus)
    return chat, Turn(chat.request(message), [], chat.chat_key)


# ------------------------------------------------------------------------------------------------
# Anthropic: breakpoints


def test_anthropic_breakpoints_close_the_system_part_and_the_new_user_text(store, searcher, anth, core_notes):
    note = store.add_node("Focused", "A focused note")
    provider = anthropic_provider(anth)
    chat, turn = a_turn(store, searcher, provider, "first question", Focus((note["id"],), note["id"]))
    body = provider.body(turn)
    assert cache_control_paths(body) == [f"system[{len(body['system']) - 1}]", "messages[0].content[0]",
                                         "messages[0].content[1]"]
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    user = body["messages"][-1]["content"]
    assert user[0] == {"type": "text", "text": "first question", "cache_control": {"type": "ephemeral"}}
    # the suffix closes with its own breakpoint (tools are on), so a tool loop's next step reads it
    assert user[1]["text"].startswith("[Focused nodes") and user[1]["cache_control"] == {"type": "ephemeral"}
    # the block order of DESIGN.md: tools, system (base + role, skill catalog, core notes, background), messages
    assert [b["text"][:20] for b in body["system"]][1].startswith("## Skills")
    assert [b["text"][:20] for b in body["system"]][2].startswith("## Core notes")
    assert [t["name"] for t in body["tools"]][:2] == ["queryNodes", "getNodesById"]


def test_anthropic_breakpoints_over_a_conversation_with_tool_loops(store, searcher, anth, core_notes):
    provider = anthropic_provider(anth)
    chat = new_chat(store, provider, searcher)
    anth.script.add(tool_call("queryNodes", {"limit": 2}))
    anth.script.add(tool_call("queryNodes", {"limit": 3}))
    anth.script.add(text("Turn one done."))
    anth.script.add(text("Turn two done."))
    anth.script.add(tool_call("queryNodes", {"limit": 1}))
    anth.script.add(text("Turn three done."))
    send(chat, "turn one")
    send(chat, "turn two")
    send(chat, "turn three")
    bodies = [r.body for r in anth.requests]
    assert len(bodies) == 6 and all(r.status == 200 for r in anth.requests)
    for body in bodies:
        paths = cache_control_paths(body)
        assert len(paths) <= 4
        assert paths[0] == f"system[{len(body['system']) - 1}]"  # one closes the system part
    # turn 1, step 1: system + new user text + the end of the suffix
    assert cache_control_paths(bodies[0]) == ["system[2]", "messages[0].content[0]", "messages[0].content[1]"]
    # inside the tool loop: the sliding breakpoint sits on the newest tool result, and only there
    assert cache_control_paths(bodies[1]) == ["system[2]", "messages[0].content[0]", "messages[0].content[1]",
                                              "messages[2].content[0]"]
    assert bodies[1]["messages"][2]["content"][0]["type"] == "tool_result"
    assert cache_control_paths(bodies[2]) == ["system[2]", "messages[0].content[0]", "messages[0].content[1]",
                                              "messages[4].content[0]"]
    # turn 2: the previous turn's user text as a fallback anchor, the new user text (before its
    # suffix), and the end of the suffix
    b3 = bodies[3]
    new_user = len(b3["messages"]) - 1
    assert cache_control_paths(b3) == ["system[2]", "messages[0].content[0]", f"messages[{new_user}].content[0]",
                                       f"messages[{new_user}].content[1]"]
    assert b3["messages"][new_user]["content"][0]["text"] == "turn two"
    # turn 3's tool loop: system, new user text, suffix, newest tool result = 4 (the anchor gives way)
    b5 = bodies[5]
    assert len(cache_control_paths(b5)) == 4
    assert cache_control_paths(b5)[-1] == f"messages[{len(b5['messages']) - 1}].content[0]"


def test_anthropic_one_hour_ttl_goes_on_the_system_part_first(store, searcher, anth, core_notes):
    provider = anthropic_provider(anth, cache_ttl="1h")
    chat = new_chat(store, provider, searcher)
    anth.script.add(text("ok"))
    send(chat, "hello")
    body = anth.last.body
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert anth.last.status == 200  # the fake rejects a 1h breakpoint after a 5m one with a 400
    assert anth.last.usage["cache_creation"]["ephemeral_1h_input_tokens"] > 1024


# ------------------------------------------------------------------------------------------------
# Anthropic: caching across turns and usage


def test_anthropic_later_turns_read_the_previous_turn_from_cache(store, searcher, anth, core_notes):
    provider = anthropic_provider(anth)
    chat = new_chat(store, provider, searcher)
    anth.script.add(text("The first answer, " + "with some length " * 30))
    anth.script.add(text("The second answer."))
    anth.script.add(text("The third answer."))
    replies = []
    for message in ("first question " * 20, "second question", "third question"):
        send(chat, message)
        replies.append(chat.last_reply)
    r1, r2, r3 = anth.requests
    # turn 1 writes the system part and its own prefix (up to the new user text)
    assert r1.usage["cache_read_input_tokens"] == 0
    written_1 = r1.usage["cache_creation_input_tokens"]
    assert written_1 > 1024
    from fakes.tokens import count_text

    def suffix_tokens(r):
        return count_text(r.body["messages"][-1]["content"][1]["text"])

    # turn 2 reads everything turn 1 wrote up to its user text (its suffix, written for a possible
    # tool loop, is not part of the history), and writes the rest of the history
    assert r2.usage["cache_read_input_tokens"] == written_1 - suffix_tokens(r1)
    assert r2.usage["cache_creation_input_tokens"] > 0
    # turn 3 reads all of turn 2's prefix
    assert r3.usage["cache_read_input_tokens"] == (
        r2.usage["cache_read_input_tokens"] + r2.usage["cache_creation_input_tokens"] - suffix_tokens(r2))
    # only the suffix (and nothing cached) is plain input
    for r, reply in zip((r1, r2, r3), replies):
        u = r.usage
        assert reply.usage.cache_read == u["cache_read_input_tokens"]
        assert reply.usage.cache_write == u["cache_creation_input_tokens"]
        # additive normalisation: input counts every prompt token
        assert reply.usage.input == u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
        assert reply.usage.output == u["output_tokens"]
    stored = [json.loads(row[0]) for row in store.db.execute(
        "SELECT usage FROM messages WHERE chat_id = ? AND usage IS NOT NULL ORDER BY id", (chat.id,))]
    assert stored == [r.usage.as_dict() for r in replies]


def test_anthropic_usage_sums_over_the_tool_loop(store, searcher, anth, core_notes):
    provider = anthropic_provider(anth)
    chat = new_chat(store, provider, searcher)
    anth.script.add(tool_call("queryNodes", {}))
    anth.script.add(text("done"))
    send(chat, "list my notes")
    a, b = anth.requests
    reply = chat.last_reply
    assert reply.requests == 2
    assert b.usage["cache_read_input_tokens"] > 0  # step 2 reuses step 1's prefix
    assert reply.usage.cache_read == a.usage["cache_read_input_tokens"] + b.usage["cache_read_input_tokens"]
    assert reply.usage.input == sum(r.usage["input_tokens"] + r.usage["cache_creation_input_tokens"]
                                    + r.usage["cache_read_input_tokens"] for r in (a, b))


# ------------------------------------------------------------------------------------------------
# OpenAI


def test_openai_body_order_and_prompt_cache_key_per_chat(store, searcher, oai, core_notes):
    provider = openai_provider(oai)
    chat_a = new_chat(store, provider, searcher)
    chat_b = new_chat(store, provider, searcher)
    send(chat_a, "question one")
    send(chat_a, "question two")
    send(chat_b, "question one")
    keys = oai.prompt_cache_keys
    assert keys[0] == keys[1] == f"cairn-chat-{chat_a.id}"
    assert keys[2] == f"cairn-chat-{chat_b.id}" != keys[0]
    body = oai.requests[1].body
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    assert "## Core notes" in body["messages"][0]["content"]
    assert body["messages"][1]["content"] == "question one"  # history without its suffix
    # the suffix rides on the new message only (its notes wait to be indexed, so it may carry keyword
    # passages too: core/search/retrieval_fallback.py)
    last = body["messages"][-1]["content"]
    assert last.startswith("question two\n\n[") and "\n\n[Context — current date/time" in last
    assert [t["function"]["name"] for t in body["tools"]][0] == "queryNodes"


def test_openai_usage_cached_tokens_are_part_of_input(store, searcher, oai, core_notes):
    provider = openai_provider(oai)
    chat = new_chat(store, provider, searcher)
    send(chat, "question one")
    send(chat, "question two")
    first, second = oai.requests
    assert first.usage["prompt_tokens_details"]["cached_tokens"] == 0
    cached = second.usage["prompt_tokens_details"]["cached_tokens"]
    assert cached >= 1024
    u = chat.last_reply.usage
    assert u.cache_read == cached
    assert u.input == second.usage["prompt_tokens"]  # not prompt + cached
    assert u.output == second.usage["completion_tokens"] and u.cache_write == 0


def test_openai_tool_calls_and_results_round_trip(store, searcher, oai):
    provider = openai_provider(oai)
    chat = new_chat(store, provider, searcher)
    oai.script.add(text("Looking."), tool_call("createNode", {"title": "From GPT"}))
    oai.script.add(text("Created it."))
    send(chat, "make a note")
    body = oai.last.body
    assistant, tool = body["messages"][-2:]
    assert assistant["role"] == "assistant" and assistant["tool_calls"][0]["function"]["name"] == "createNode"
    assert tool["role"] == "tool" and tool["tool_call_id"] == assistant["tool_calls"][0]["id"]
    assert json.loads(tool["content"])["created"]["title"] == "From GPT"
    assert chat.last_reply.status == "complete" and len(chat.last_reply.created_nodes) == 1


def test_openai_invalid_tool_json_becomes_a_tool_call_without_arguments(store, searcher, oai):
    provider = openai_provider(oai)
    chat, turn = a_turn(store, searcher, provider)
    oai.script.add(invalid_tool_json("queryNodes", '{"limit": 3,,}'))
    events, _, errors, _ = collect(provider, turn)
    calls = [e.tool_call for e in events if e.type == "tool_call"]
    assert errors == [] and len(calls) == 1
    assert calls[0].arguments is None and calls[0].raw_arguments == '{"limit": 3,,}'
    assert "not a JSON object" in calls[0].error


# ------------------------------------------------------------------------------------------------
# errors: each one surfaces as its own sentence


def test_missing_key_names_the_variable(monkeypatch):
    cfg = config(provider="anthropic")
    with pytest.raises(ProviderError, match=r"\$ANTHROPIC_API_KEY") as e:
        make_provider(cfg)
    assert e.value.kind == "missing_key"
    with pytest.raises(ProviderError, match=r"\$OPENAI_API_KEY"):
        make_provider(config(provider="openai"))
    # a loopback OpenAI-compatible server needs no key; a remote one does
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    assert make_provider(config(provider="openai")).remote is False
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.example.com/v1")
    with pytest.raises(ProviderError, match=r"\$OPENAI_API_KEY"):
        make_provider(config(provider="openai"))
    # the environment beats the config file, and the key is used
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    cfg.keys.anthropic = "from-file"
    assert make_provider(cfg)._api_key == KEY


def test_anthropic_401_is_a_clear_sentence(store, searcher, anth):
    provider = anthropic_provider(anth)
    _, turn = a_turn(store, searcher, provider)
    anth.script.add(unauthorized())
    _, text_, errors, _ = collect(provider, turn)
    assert text_ == "" and len(errors) == 1
    assert str(errors[0]) == "Anthropic rejected the API key (401 unauthorized). Check $ANTHROPIC_API_KEY."
    assert errors[0].kind == "auth" and len(anth.requests) == 1  # a 401 is not retried


def test_openai_401_is_a_clear_sentence(store, searcher, oai):
    provider = openai_provider(oai)
    _, turn = a_turn(store, searcher, provider)
    oai.script.add(unauthorized())
    _, _, errors, _ = collect(provider, turn)
    # a loopback server is a local one, named as such (issue 25 item 5): no OpenAI key to check, so the
    # sentence does not name one
    assert str(errors[0]) == f"The local server at 127.0.0.1:{oai.port} rejected the API key (401 unauthorized)."
    provider.remote = True
    oai.script.add(unauthorized())
    _, _, errors, _ = collect(provider, turn)
    assert errors[0].kind == "auth"


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_refused_connection(store, searcher, monkeypatch, kind):
    from core.providers import anthropic_provider as ap, openai_provider as op

    monkeypatch.setattr(ap, "MAX_RETRIES", 0)
    monkeypatch.setattr(op, "MAX_RETRIES", 0)
    url = f"http://127.0.0.1:{closed_port()}" + ("/v1" if kind == "openai" else "")
    if kind == "anthropic":
        provider = ap.AnthropicProvider(KEY, SONNET, base_url=url)
    else:
        provider = op.OpenAIProvider(KEY, GPT, base_url=url)
    _, turn = a_turn(store, searcher, provider)
    _, _, errors, _ = collect(provider, turn)
    assert str(errors[0]) == f"Could not connect to {url} (connection refused or unreachable)."
    assert errors[0].kind == "connection"


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_stream_cut_mid_reply_keeps_the_partial_text(store, searcher, anth, oai, kind):
    srv = anth if kind == "anthropic" else oai
    provider = anthropic_provider(anth) if kind == "anthropic" else openai_provider(oai)
    _, turn = a_turn(store, searcher, provider)
    srv.script.add(text("one two three four five six", deltas=6), cut_after(2))
    events, text_, errors, _ = collect(provider, turn)
    assert text_ == "one two"
    assert errors[0].kind == "cut" and "cut mid-reply" in str(errors[0])
    assert "partial reply is kept, marked incomplete" in str(errors[0])
    assert [e.type for e in events][-1] == "error" and len(srv.requests) == 1


def test_anthropic_stream_that_just_ends_is_incomplete(store, searcher, anth):
    provider = anthropic_provider(anth)
    _, turn = a_turn(store, searcher, provider)
    anth.script.add(text("one two three four", deltas=4), cut_after(2, mode="eof"))
    _, text_, errors, _ = collect(provider, turn)
    assert text_ == "one two" and errors[0].kind == "cut"


def test_malformed_stream_is_named(store, searcher, anth):
    provider = anthropic_provider(anth)
    _, turn = a_turn(store, searcher, provider)
    anth.script.add(text("a b c d"), malformed_sse(after_deltas=2))
    _, text_, errors, _ = collect(provider, turn)
    assert text_ == "a b"
    assert errors[0].kind == "malformed" and "malformed event stream" in str(errors[0])


@pytest.mark.parametrize("fault", [
    http_error(429, retry_after=0.01),
    http_error(500, retry_after=0.01),
    http_error(503, retry_after=0.01),
    http_error(529, retry_after=0.01),
], ids=["429", "500", "503", "529"])
def test_anthropic_retries_429_and_5xx_then_succeeds(store, searcher, anth, fault):
    provider = anthropic_provider(anth)
    _, turn = a_turn(store, searcher, provider)
    anth.script.add(fault)
    anth.script.add(fault)
    anth.script.add(text("worth the wait"))
    _, text_, errors, _ = collect(provider, turn)
    assert errors == [] and text_ == "worth the wait"
    assert [r.status for r in anth.requests] == [fault.status, fault.status, 200]
    assert [r.headers["x-stainless-retry-count"] for r in anth.requests] == ["0", "1", "2"]


@pytest.mark.parametrize("fault", [http_error(429, retry_after=0.01), http_error(500, retry_after=0.01)],
                         ids=["429", "500"])
def test_openai_retries_429_and_5xx_then_succeeds(store, searcher, oai, fault):
    provider = openai_provider(oai)
    _, turn = a_turn(store, searcher, provider)
    oai.script.add(fault)
    oai.script.add(text("fine now"))
    _, text_, errors, _ = collect(provider, turn)
    assert errors == [] and text_ == "fine now" and len(oai.requests) == 2


@pytest.mark.parametrize("status, kind, sentence", [
    (429, "rate_limit", "Anthropic is rate limiting requests (429); gave up after 2 retries. Try again in 0.01 s."),
    (500, "server", "Anthropic had a server error (500); gave up after 2 retries."),
    (529, "overloaded", "Anthropic is overloaded (529); gave up after 2 retries. Try again in a minute."),
])
def test_retries_exhausted_say_so(store, searcher, anth, status, kind, sentence):
    provider = anthropic_provider(anth)
    _, turn = a_turn(store, searcher, provider)
    anth.script.add(http_error(status, retry_after=0.01), times=3)
    _, _, errors, _ = collect(provider, turn)
    assert len(anth.requests) == 3  # the first try and MAX_RETRIES = 2 retries
    assert str(errors[0]) == sentence and errors[0].kind == kind and errors[0].retryable


def test_cancel_stops_the_stream(store, searcher, anth):
    provider = anthropic_provider(anth)
    _, turn = a_turn(store, searcher, provider)
    anth.script.add(text("one two three four five six", deltas=6))
    cancel = threading.Event()
    seen = []
    for event in provider.stream(turn, cancel):
        seen.append(event)
        if event.type == "text":
            cancel.set()
    assert "".join(e.text for e in seen if e.type == "text") == "one"
    assert seen[-1].type == "stop" and seen[-1].stop_reason == "cancelled"


# ------------------------------------------------------------------------------------------------
# offline


def test_offline_answers_with_citations_and_says_it_is_not_a_model(store, indexer, searcher):
    from core.providers.offline import LABEL, OfflineProvider

    a = store.add_node("Compost guide", "Compost needs greens, browns, air and water to break down. " * 4)
    store.add_node("Unrelated", "Quarterly tax forms are due in April.")
    indexer.run()
    provider = make_provider(config())  # no provider configured: offline
    assert isinstance(provider, OfflineProvider) and provider.remote is False
    chat = new_chat(store, provider, searcher)
    events = send(chat, "How does compost break down?")
    reply = chat.last_reply
    assert reply.text.startswith(LABEL) and "not written by a model" in LABEL
    assert "- [1] **Compost guide** — Compost needs greens" in reply.text
    assert reply.citations["passages"]["1"] == a["id"] and reply.status == "complete"
    assert [e.type for e in events][-1] == "stop"
    # the viewer still gets the body that would be sent
    body = provider.body(Turn(chat.request("How does compost break down?"), [], chat.chat_key))
    assert body["messages"][-1]["content"][1]["text"].startswith("[Retrieved passages")
    send(chat, "zebra migration patterns in the serengeti")
    assert chat.last_reply.text == LABEL + "\n\nNo note in your graph matches this message closely enough to quote."
    assert chat.last_reply.citations["passages"] == {}


# ------------------------------------------------------------------------------------------------
# keys never logged


def test_no_key_in_logs_or_errors(store, searcher, anth, caplog):
    caplog.set_level(logging.DEBUG)
    provider = anthropic_provider(anth)
    chat = new_chat(store, provider, searcher)
    anth.script.add(text("fine"))
    anth.script.add(unauthorized())
    anth.script.add(http_error(429, retry_after=0.01))
    send(chat, "first")
    send(chat, "second")
    send(chat, "third")
    assert anth.requests[0].headers.get("authorization") == f"Bearer {KEY}"  # it was used ...
    assert caplog.records  # the SDKs did log at DEBUG
    logged = "\n".join(r.getMessage() + repr(r.args) for r in caplog.records)
    assert KEY not in logged  # ... and never logged
    assert KEY not in repr(provider.__dict__.get("_client")) and KEY not in repr(provider)
