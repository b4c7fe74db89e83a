"""Issue 7, part B: provider faults against the fake servers, with the real SDKs, for both providers.

Each fault must end the turn with its own sentence (key words asserted), keep the user's message and
any partial reply in the chat's stored messages (marked incomplete, with the error), and leave the
chat usable: the next turn against a healthy server completes, and its request carries the earlier
message (and the partial reply, when there was one).

The client timeout is made small here by giving the provider a client with a short timeout (the SDK's
own `with_options`); the fake's stalls are woken when the server stops, so nothing waits them out.
"""

from __future__ import annotations

import json

import pytest

from chat_support import (  # noqa: F401  (fixtures)
    GPT,
    KEY,
    SONNET,
    _no_proxies,
    anth,
    anthropic_provider,
    closed_port,
    new_chat,
    oai,
    openai_provider,
    searcher,
    send,
)
from core.providers.base import Turn
from fakes import (
    cut_after,
    forbidden,
    http_error,
    invalid_tool_json,
    malformed_sse,
    model_not_found,
    overloaded,
    rate_limited,
    server_error,
    slow,
    stream_error,
    text,
    unauthorized,
)

TIMEOUT = 2.5  # the client timeout of the timeout tests (seconds); the stalls below last far longer
STALL = 60.0
QUESTION = "What do otters eat in winter?"
PARTIAL = "Otters eat"
WORDS = text("Otters eat fish, crabs and frogs.", deltas=["Otters", " eat", " fish,", " crabs and frogs."])


@pytest.fixture(autouse=True)
def _no_retries(monkeypatch):
    """One request per fault (the retries themselves are tested in test_providers.py and below)."""
    from core.providers import anthropic_provider as ap, openai_provider as op

    monkeypatch.setattr(ap, "MAX_RETRIES", 0)
    monkeypatch.setattr(op, "MAX_RETRIES", 0)


def provider_for(kind, anth, oai, *, timeout: float | None = None, retries: int = 0):
    """The provider on the fake; `timeout` (seconds) replaces the SDK's default client timeout."""
    provider = anthropic_provider(anth) if kind == "anthropic" else openai_provider(oai)
    options = {"max_retries": retries} if timeout is None else {"max_retries": retries, "timeout": timeout}
    provider._client = provider.client.with_options(**options)
    return provider


def stored(store, chat_id):
    return [dict(r) for r in store.db.execute(
        "SELECT role, content, sent, status FROM messages WHERE chat_id = ? ORDER BY id", (chat_id,))]


def sent_text(body) -> str:
    return json.dumps(body, ensure_ascii=False)


# fault id -> (script actions, key words per provider (lower case), the partial reply kept)
FAULTS = {
    "401": ([unauthorized()], {"anthropic": ["rejected the api key", "401", "$anthropic_api_key"],
                               "openai": ["rejected the api key", "401"]}, ""),
    "403": ([forbidden()], {"*": ["refused", "403", "forbidden", "may not use"]}, ""),
    "404-model": ([model_not_found()], {"anthropic": ["does not know the model", SONNET, "404", "settings"],
                                        "openai": ["does not know the model", GPT, "404", "settings"]}, ""),
    "429": ([rate_limited(retry_after=7)], {"*": ["rate limiting", "429", "try again in 7 s"]}, ""),
    "500": ([server_error()], {"*": ["server error", "500"]}, ""),
    # Anthropic's 529; the OpenAI fake answers its own overload, a 503 "engine is currently overloaded"
    "overloaded": ([overloaded()], {"anthropic": ["overloaded", "529", "try again in a minute"],
                                    "openai": ["overloaded", "503", "try again in a minute"]}, ""),
    "overloaded-mid-stream": ([WORDS, stream_error(after_deltas=2)],
                              {"*": ["overloaded", "mid-reply", "partial reply is kept", "try again"]}, PARTIAL),
    "cut": ([WORDS, cut_after(2)], {"*": ["cut mid-reply", "partial reply is kept"]}, PARTIAL),
    "cut-clean-eof": ([WORDS, cut_after(2, mode="eof")], {"*": ["cut mid-reply", "partial reply is kept"]}, PARTIAL),
    "malformed-sse": ([WORDS, malformed_sse(after_deltas=2)],
                      {"*": ["malformed event stream", "partial reply is kept"]}, PARTIAL),
    "no-headers-in-time": ([slow(STALL, where="headers"), WORDS], {"*": ["did not answer in time", "127.0.0.1"]}, ""),
    "stalls-mid-reply": ([WORDS, slow(STALL, where="mid_stream", after_deltas=2)],
                         {"*": ["stopped sending mid-reply", "did not answer in time", "partial reply is kept"]},
                         PARTIAL),
}


@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_a_fault_is_named_keeps_the_message_and_the_chat_goes_on(store, searcher, anth, oai, kind, fault):
    actions, words, partial = FAULTS[fault]
    srv = anth if kind == "anthropic" else oai
    timeout = TIMEOUT if fault in ("no-headers-in-time", "stalls-mid-reply") else None
    chat = new_chat(store, provider_for(kind, anth, oai, timeout=timeout), searcher)
    srv.script.add(*actions)
    events = send(chat, QUESTION)

    errors = [e.error for e in events if e.type == "error"]
    assert len(errors) == 1, [e.type for e in events]
    message = str(errors[0])
    for word in words.get(kind, words.get("*")):
        assert word.lower() in message.lower(), (word, message)
    assert "Traceback" not in message and KEY not in message
    assert events[-1].type == "error" and len(srv.requests) == 1  # no retry behind the user's back
    assert "".join(e.text for e in events if e.type == "text") == partial

    reply = chat.last_reply
    assert reply.status == "incomplete" and reply.error == message and reply.text == partial
    rows = stored(store, chat.id)
    assert [(r["role"], r["status"]) for r in rows] == [("user", "complete"), ("assistant", "incomplete")]
    assert json.loads(rows[0]["content"]) == [{"type": "text", "text": QUESTION}]
    assert json.loads(rows[1]["content"]) == [{"type": "text", "text": partial}]
    assert json.loads(rows[1]["sent"]) == {"error": message}
    shown = chat.messages()
    assert shown[0]["text"] == QUESTION and shown[1]["error"] == message and shown[1]["text"] == partial

    # the chat is usable: the next turn against a healthy server completes ...
    srv.script.add(text("Mostly fish."))
    events = send(chat, "And in summer?")
    assert not [e for e in events if e.type == "error"]
    assert chat.last_reply.status == "complete" and chat.last_reply.text == "Mostly fish."
    # ... and its request still carries the failed question, and the partial reply when there was one
    body = srv.last.body
    assert QUESTION in sent_text(body["messages"])
    if partial:
        assistant = [m for m in body["messages"] if m["role"] == "assistant"]
        assert len(assistant) == 1 and partial in sent_text(assistant[0])
    for m in body["messages"]:  # no empty text blocks (the APIs reject them)
        content = m["content"]
        assert content not in ("", None, []) or m.get("tool_calls")
        if isinstance(content, list):
            assert all(b.get("text", "x").strip() for b in content)
    assert [(r["role"], r["status"]) for r in stored(store, chat.id)][-2:] == [("user", "complete"),
                                                                              ("assistant", "complete")]


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_connection_refused_keeps_the_message_and_a_reopened_chat_goes_on(store, searcher, anth, oai, kind):
    from core.chat.conversation import Chat
    from core.providers.anthropic_provider import AnthropicProvider
    from core.providers.openai_provider import OpenAIProvider

    from chat_support import FIXED_NOW, config

    url = f"http://127.0.0.1:{closed_port()}" + ("/v1" if kind == "openai" else "")
    dead = AnthropicProvider(KEY, SONNET, base_url=url) if kind == "anthropic" else OpenAIProvider(KEY, GPT, base_url=url)
    chat = new_chat(store, dead, searcher)
    events = send(chat, QUESTION)
    errors = [str(e.error) for e in events if e.type == "error"]
    assert errors == [f"Could not connect to {url} (connection refused or unreachable)."]
    rows = stored(store, chat.id)
    assert [(r["role"], r["status"]) for r in rows] == [("user", "complete"), ("assistant", "incomplete")]
    assert json.loads(rows[0]["content"])[0]["text"] == QUESTION
    # the server is back: the same chat, reopened, goes on
    srv = anth if kind == "anthropic" else oai
    again = Chat(store, config(), provider_for(kind, anth, oai), chat_id=chat.id, searcher=searcher,
                 now=lambda: FIXED_NOW)
    send(again, "Are you there now?")
    assert again.last_reply.status == "complete"
    assert QUESTION in sent_text(srv.last.body["messages"])


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_a_tool_call_with_invalid_json_goes_back_to_the_model_and_the_turn_completes(store, searcher, anth, oai, kind):
    srv = anth if kind == "anthropic" else oai
    chat = new_chat(store, provider_for(kind, anth, oai), searcher)
    srv.script.add(text("Let me look."), invalid_tool_json("queryNodes", '{"limit": 3,,}'))
    srv.script.add(text("I answer without the tool."))
    events = send(chat, "list my notes")
    assert not [e for e in events if e.type == "error"]
    results = [e for e in events if e.type == "tool_result"]
    assert len(results) == 1 and results[0].stop_reason == "error"
    assert "Invalid tool input" in results[0].text and "Send a JSON object" in results[0].text
    assert chat.last_reply.status == "complete" and chat.last_reply.text == "Let me look.\n\nI answer without the tool."
    # the model saw the error as the tool's result
    body = srv.last.body
    if kind == "anthropic":
        result = body["messages"][-1]["content"][0]
        assert result["type"] == "tool_result" and result["is_error"] is True
        assert "Invalid tool input" in result["content"]
    else:
        tool = [m for m in body["messages"] if m["role"] == "tool"]
        assert len(tool) == 1 and "Invalid tool input" in tool[0]["content"]
    roles = [r["role"] for r in stored(store, chat.id)]
    assert roles == ["user", "assistant", "user", "assistant"]


def test_anthropic_invalid_tool_json_is_a_tool_call_without_arguments(store, searcher, anth):
    """The provider level, as test_providers.py checks it for OpenAI."""
    provider = provider_for("anthropic", anth, None)
    chat = new_chat(store, provider, searcher)
    anth.script.add(invalid_tool_json("queryNodes", '{"limit": nope}'))
    events = list(provider.stream(Turn(chat.request("hi"), [], chat.chat_key)))
    calls = [e.tool_call for e in events if e.type == "tool_call"]
    assert [e.type for e in events if e.type == "error"] == [] and len(calls) == 1
    assert calls[0].arguments is None and calls[0].raw_arguments == '{"limit": nope}'
    assert "not a JSON object" in calls[0].error
    assert events[-1].type == "stop" and events[-1].stop_reason == "tool_use"


# ------------------------------------------------------------------------------------------------
# retries (the SDKs' own, honouring retry-after), for OpenAI as test_providers.py does for Anthropic


@pytest.mark.parametrize("fault, words", [
    (http_error(429, retry_after=0.01), ["rate limiting requests (429)", "gave up after 2 retries", "try again in 0.01 s"]),
    (http_error(529, retry_after=0.01), ["overloaded (503)", "gave up after 2 retries", "try again in a minute"]),
    (http_error(500, retry_after=0.01), ["server error (500)", "gave up after 2 retries"]),
], ids=["429", "503-overloaded", "500"])
def test_openai_retries_exhausted_say_so_and_the_chat_goes_on(store, searcher, oai, monkeypatch, fault, words):
    from core.providers import openai_provider as op

    monkeypatch.setattr(op, "MAX_RETRIES", 2)
    chat = new_chat(store, provider_for("openai", None, oai, retries=2), searcher)
    oai.script.add(fault, times=3)
    send(chat, QUESTION)
    assert len(oai.requests) == 3  # the first try and two retries
    error = chat.last_reply.error.lower()
    for word in words:
        assert word in error, (word, error)
    send(chat, "again")
    assert chat.last_reply.status == "complete" and len(oai.requests) == 4


def test_a_retry_after_the_server_asks_for_is_waited(store, searcher, anth, monkeypatch):
    """The SDK waits what retry-after says (not a fixed backoff), and the turn then succeeds."""
    import time

    from core.providers import anthropic_provider as ap

    monkeypatch.setattr(ap, "MAX_RETRIES", 2)
    chat = new_chat(store, provider_for("anthropic", anth, None, retries=2), searcher)
    anth.script.add(rate_limited(retry_after=0.6))
    anth.script.add(text("after the wait"))
    send(chat, QUESTION)
    assert chat.last_reply.status == "complete" and chat.last_reply.text == "after the wait"
    first, second = anth.requests
    assert [first.status, second.status] == [429, 200]
    gap = second.time - first.time
    assert gap >= 0.5, gap  # the server's 0.6 s (a lower bound only: never a speed assertion)


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_chat_timeout_setting_ends_a_stalled_reply(store, searcher, anth, oai, kind, monkeypatch, tmp_path):
    """`chat.timeout` in the config reaches the SDK client: a reply that stalls mid-stream ends with a
    clear message after that many seconds, the partial reply kept (the default is 120 s, not the SDK's 600)."""
    from core import config as config_module
    from core.providers.factory import make_provider

    srv = anth if kind == "anthropic" else oai
    path = config_module.write_default(tmp_path / "config.toml")
    config_module.set_value("chat.provider", kind, path)
    config_module.set_value("chat.timeout", 2, path)
    monkeypatch.setenv("ANTHROPIC_BASE_URL" if kind == "anthropic" else "OPENAI_BASE_URL", srv.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY" if kind == "anthropic" else "OPENAI_API_KEY", KEY)
    cfg = config_module.load(path)
    assert cfg.chat.timeout == 2.0 and config_module.load(tmp_path / "missing.toml").chat.timeout == 120.0
    provider = make_provider(cfg)
    assert provider.timeout == 2.0
    chat = new_chat(store, provider, searcher)
    srv.script.add(WORDS, slow(STALL, where="mid_stream", after_deltas=2))
    events = send(chat, QUESTION)
    errors = [str(e.error) for e in events if e.type == "error"]
    assert len(errors) == 1 and "did not answer in time" in errors[0] and "partial reply is kept" in errors[0]
    assert chat.last_reply.text == PARTIAL and chat.last_reply.status == "incomplete"
    with pytest.raises(config_module.ConfigError, match="chat.timeout"):
        config_module.set_value("chat.timeout", 0, path)


def test_a_retired_model_says_it_was_retired_and_names_its_successor(store, searcher, anth):
    """The API answers a model past its end of life with 404 not_found_error (the fake too, see
    core/providers/models.py [A-retire]); the turn says it was retired and what to choose instead."""
    import datetime

    if datetime.date.today().isoformat() < "2026-11-30":
        pytest.skip("claude-sonnet-4-5 is served until 2026-11-30")
    provider = anthropic_provider(anth, model="claude-sonnet-4-5")
    provider._client = provider.client.with_options(max_retries=0)
    chat = new_chat(store, provider, searcher)
    errors = [e.error for e in send(chat, QUESTION) if e.type == "error"]
    assert len(errors) == 1
    message = str(errors[0])
    assert "retired on 2026-11-30" in message and "claude-sonnet-4-6" in message and "404" in message
