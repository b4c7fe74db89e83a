"""The daily spending cap ([chat] max_usd_per_day, core.chat.cost): a chat request that would take
today's spend (UTC day, from the stored usage priced by the model table) past the cap is not sent, and
the reply says why with the figures. Against the fake Anthropic server on a real SQLite file."""

from __future__ import annotations

import re
import json

import pytest

from chat_support import SONNET, _no_proxies, anth, anthropic_provider, config, new_chat, searcher, send  # noqa: F401
from core import clock
from fakes import text


def plant_spend(store, chat_id: int, output_tokens: int) -> None:
    """A reply stored today that cost output_tokens x $15 / 1e6 (claude-sonnet-4-6's output price)."""
    store.db.execute("INSERT INTO messages(chat_id, role, content, usage, created_at) VALUES (?, 'assistant', '[]', ?, ?)",
                     (chat_id, json.dumps({"input": 0, "output": output_tokens, "cache_write": 0, "cache_read": 0}),
                      clock.now()))


def test_a_request_that_would_pass_the_daily_cap_is_not_sent(store, searcher, anth):
    cfg = config(provider="anthropic", model=SONNET, max_usd_per_day=1.0)
    chat = new_chat(store, anthropic_provider(anth), searcher, cfg=cfg)
    anth.script.add(text("First answer."))
    send(chat, "hello")  # well under the cap: sent
    assert len(anth.model_requests()) == 1 and chat.last_reply.status == "complete"
    plant_spend(store, chat.id, 65_000)  # $0.975 spent today
    anth.script.add(text("This must never be asked for."))
    events = send(chat, "and again")
    assert len(anth.model_requests()) == 1  # the fake heard nothing more
    reply = chat.last_reply
    assert reply.status == "incomplete" and reply.requests == 0
    errors = [e.error for e in events if e.type == "error"]
    assert len(errors) == 1 and errors[0].kind == "spending_cap" and str(errors[0]) == reply.error
    assert reply.error.startswith("Not sent: today's spend ($0.9") and "the daily cap of $1.00" in reply.error
    assert "[chat] max_usd_per_day" in reply.error and SONNET in reply.error
    # 0 = no cap: the next request goes out (and gets the reply still queued)
    cfg.chat.max_usd_per_day = 0
    send(chat, "once more")
    assert len(anth.model_requests()) == 2


def test_offline_is_never_capped(store, searcher):
    from core.providers.offline import OfflineProvider

    chat = new_chat(store, OfflineProvider(), searcher, cfg=config(max_usd_per_day=0.000001))
    send(chat, "tomato")
    assert chat.last_reply.status == "complete" and not chat.last_reply.error


def test_a_request_that_would_pass_the_chat_cap_is_not_sent_and_a_delegates_spend_counts(store, searcher, anth):
    """[chat] max_usd_per_chat: the chat's replies, side requests and delegated sub-chats count; a new
    chat starts from nothing."""
    cfg = config(provider="anthropic", model=SONNET, max_usd_per_chat=0.5)
    chat = new_chat(store, anthropic_provider(anth), searcher, cfg=cfg)
    anth.script.add(text("First answer."))
    send(chat, "hello")
    assert len(anth.model_requests()) == 1 and chat.last_reply.status == "complete"
    sub = new_chat(store, anthropic_provider(anth), searcher, cfg=cfg, agent="worker")
    store.db.execute("UPDATE chats SET metadata = json_set(metadata, '$.parent_chat_id', ?) WHERE id = ?",
                     (chat.id, sub.id))
    plant_spend(store, sub.id, 33_000)  # $0.495 spent by the chat's delegate
    anth.script.add(text("This must never be asked for."))
    events = send(chat, "and again")
    assert len(anth.model_requests()) == 1  # nothing more was sent
    reply = chat.last_reply
    assert reply.status == "incomplete" and reply.requests == 0
    assert [e.error.kind for e in events if e.type == "error"] == ["spending_cap"]
    assert re.match(r"Not sent: this chat has cost \$0\.(49|50)", reply.error) and "the cap of $0.5000 per chat" in reply.error
    assert "[chat] max_usd_per_chat" in reply.error
    # the delegate itself is under the same cap (its spend is its top chat's)
    from core.chat.cost import Pricer, spent_in_chat

    assert spent_in_chat(store, Pricer(), sub.id).usd == spent_in_chat(store, Pricer(), chat.id).usd
    fresh = new_chat(store, anthropic_provider(anth), searcher, cfg=cfg)
    send(fresh, "a new chat")  # the queued reply
    assert len(anth.model_requests()) == 2 and fresh.last_reply.status == "complete"


def test_side_requests_keep_to_the_caps(store, searcher, anth):
    """The rolling summary and distil go through the same caps as the turns: refused before sending."""
    from core.assist import distil

    cfg = config(provider="anthropic", model=SONNET, max_usd_per_day=1.0)
    chat = new_chat(store, anthropic_provider(anth), searcher, cfg=cfg)
    for i in range(6):
        chat._insert("user", [{"type": "text", "text": f"Question {i}"}])
        chat._insert("assistant", [{"type": "text", "text": f"Answer {i}"}])
    plant_spend(store, chat.id, 66_000)  # $0.99 spent today
    assert chat._maybe_summarise(force=True) is not None  # a summary request was due …
    assert anth.model_requests() == []  # … and not sent
    assert chat.metadata["summary_error"].startswith("Not sent: today's spend ($0.99")
    with pytest.raises(distil.DistilError, match=r"could not distil chat \d+: Not sent: today's spend"):
        distil.propose(store, chat.id, anthropic_provider(anth), never_send=[], guard=chat.spend_guard)
    assert anth.model_requests() == []


def test_a_stored_usage_is_read_by_its_own_field_names_and_sums_every_count():
    from core.providers.base import Usage

    stored = {"input": 3, "output": "4", "cache_read": None, "cache_write_1h": 2, "a_later_count": 9}
    assert Usage.from_dict(stored) == Usage(input=3, output=4, cache_write_1h=2)
    assert Usage.from_dict(None) == Usage()
    total = Usage(1, 2, 3, 4, 5) + Usage(10, 20, 30, 40, 50)
    assert total == Usage(11, 22, 33, 44, 55)
    assert set(Usage(1, 1, 1, 1, 1).as_dict()) == set(Usage.fields())
