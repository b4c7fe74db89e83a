"""Issue 25 item 3: a reply the model stopped at its limit is kept, marked incomplete, never complete, and
says which limit (core/chat/cut_off.py): Anthropic's `stop_reason: "max_tokens"`, OpenAI's and a local
server's `finish_reason: "length"`; and a local server is never asked for more reply tokens than its
window leaves (core/chat/window.py). Real SDKs against the fakes on 127.0.0.1."""

from __future__ import annotations

import json

from chat_support import GPT, KEY, SONNET, anth, new_chat, oai, searcher, send  # noqa: F401 (fixtures)


def _stored_reply(chat) -> tuple[str, str]:
    row = chat.store.db.execute("SELECT status, content FROM messages WHERE chat_id = ? AND role = 'assistant' "
                                "ORDER BY id DESC LIMIT 1", (chat.id,)).fetchone()
    return row["status"], json.loads(row["content"])[0]["text"]


def test_an_anthropic_reply_stopped_at_max_tokens_is_stored_incomplete_and_says_so(store, searcher, anth):
    from core.providers.anthropic_provider import AnthropicProvider
    from fakes import stop_reason, text

    chat = new_chat(store, AnthropicProvider(KEY, SONNET, base_url=anth.base_url), searcher, agent="easy")
    anth.script.add(text("The reservoir was built in 19"), stop_reason("max_tokens"))
    events = send(chat, "When was the reservoir built?")
    reply = chat.last_reply
    assert reply.status == "incomplete"
    assert reply.error.startswith("Cut off: the reply limit was reached (")
    assert "Regenerate it, or ask the model to continue." in reply.error
    assert [e.error.kind for e in events if e.type == "error"] == ["cut_off"]
    assert _stored_reply(chat) == ("incomplete", "The reservoir was built in 19")


def test_a_local_reply_cut_at_the_window_is_incomplete_and_names_the_window(store, searcher):
    from core.providers.openai_provider import OpenAIProvider
    from fakes import FakeOpenAI, stop_reason, text

    with FakeOpenAI(compatible=True, context_window=2048) as srv:
        chat = new_chat(store, OpenAIProvider(KEY, "smollm2", base_url=srv.base_url), searcher, agent="easy")
        srv.script.add(text("It was built when the"), stop_reason("max_tokens"))  # finish_reason "length"
        send(chat, "When was the reservoir built?")
        sent = srv.requests[-1].body
    reply = chat.last_reply
    assert reply.status == "incomplete" and "the model's window was reached" in reply.error
    assert "2,048" in reply.error
    assert _stored_reply(chat)[0] == "incomplete"
    # never more reply tokens than the window leaves after the prompt (4,096 asked by default)
    prompt = srv.requests[-1].usage["prompt_tokens"]
    assert sent["max_tokens"] <= 2048 - prompt + 64, (sent["max_tokens"], prompt)


def test_an_openai_reply_that_finished_normally_stays_complete(store, searcher, oai):
    from core.providers.openai_provider import OpenAIProvider
    from fakes import text

    chat = new_chat(store, OpenAIProvider(KEY, GPT, base_url=oai.base_url, compatible=False), searcher, agent="easy")
    oai.script.add(text("Built in 1931."))
    send(chat, "When was the reservoir built?")
    assert chat.last_reply.status == "complete" and chat.last_reply.error is None
