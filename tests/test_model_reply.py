"""core/chat/model_reply.py: one request read whole (distil, integrate drafts, the citation judge) against
the fake Anthropic server, and the JSON in a reply with its one allowed markdown code fence."""

from __future__ import annotations

import threading

import pytest

from chat_support import _no_proxies, anth, anthropic_provider  # noqa: F401
from core.chat.model_reply import NotJSON, ReplyFailed, complete, json_payload
from core.providers.base import ProviderError
from fakes import http_error, stop_reason, stream_error, text


def test_complete_sends_the_system_prompt_and_one_message_and_collects_the_reply(anth):
    anth.script.add(text('{"ok": true}', deltas=4))
    reply = complete(anthropic_provider(anth), "Answer with JSON.", "Is it?", chat_key="cairn-test", max_tokens=300)
    assert reply.text == '{"ok": true}' and reply.stop == "end_turn"
    assert reply.usage.output > 0
    body = anth.requests[-1].json
    assert body["max_tokens"] == 300 and "tools" not in body
    assert "Answer with JSON." in str(body["system"])
    assert [m["role"] for m in body["messages"]] == ["user"] and "Is it?" in str(body["messages"][0]["content"])


def test_a_cut_reply_says_so_in_its_stop_reason(anth):
    anth.script.add(text('{"ok": tr'), stop_reason("max_tokens"))
    reply = complete(anthropic_provider(anth), "s", "u", chat_key="cairn-test", max_tokens=5)
    assert reply.stop == "max_tokens" and reply.text == '{"ok": tr'


def test_a_cancelled_request_returns_with_stop_cancelled(anth):
    cancel = threading.Event()
    cancel.set()
    anth.script.add(text("never read"))
    reply = complete(anthropic_provider(anth), "s", "u", chat_key="cairn-test", max_tokens=50, cancel=cancel)
    assert reply.stop == "cancelled"


def test_a_provider_error_is_a_reply_failed_with_the_text_so_far(anth, monkeypatch):
    from core.providers import anthropic_provider as ap

    monkeypatch.setattr(ap, "MAX_RETRIES", 0)
    anth.script.add(http_error(500))
    with pytest.raises(ReplyFailed) as e:
        complete(anthropic_provider(anth), "s", "u", chat_key="cairn-test", max_tokens=50)
    assert isinstance(e.value, ProviderError) and isinstance(e.value.__cause__, ProviderError)
    assert str(e.value) == str(e.value.__cause__) and e.value.kind == e.value.__cause__.kind
    assert e.value.text == ""

    anth.script.add(text("partial answer", deltas=2), stream_error(after_deltas=1))
    with pytest.raises(ReplyFailed) as e:
        complete(anthropic_provider(anth), "s", "u", chat_key="cairn-test", max_tokens=50)
    assert "partial answer".startswith(e.value.text) and e.value.text


@pytest.mark.parametrize("reply, value", [
    ('{"a": 1}', {"a": 1}),
    ('  [1, 2]\n', [1, 2]),
    ('```json\n{"a": 1}\n```', {"a": 1}),
    ('```\n[1]\n```\n', [1]),
    ('```JSON {"a": "x ``` y"} ```', {"a": "x ``` y"}),
])
def test_json_payload_reads_json_with_or_without_a_fence(reply, value):
    assert json_payload(reply) == value


@pytest.mark.parametrize("reply, empty, reason", [
    ("", True, ""),
    ("```json\n\n```", True, ""),
    ("Sure! Here it is.", False, "Expecting value at line 1 column 1"),
    ('{"a": "cut', False, "Unterminated string"),
    ('```json\n{"a": 1}', False, "Expecting value at line 1 column 1"),  # an unclosed fence is not stripped
])
def test_json_payload_says_what_is_wrong(reply, empty, reason):
    with pytest.raises(NotJSON) as e:
        json_payload(reply)
    assert e.value.empty is empty and reason in e.value.reason
    assert str(e.value) == ("the reply was empty" if empty else f"the reply is not JSON ({e.value.reason})")
