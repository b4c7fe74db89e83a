"""One message has one budget (core/chat/turn_budget.py): model requests and tool calls across every
delegate at every depth, against a model that never stops calling tools. And the spending caps read
only what they need (core/chat/cost.py): indexed lookups, not a scan of every chat."""

from __future__ import annotations

from chat_support import (  # noqa: F401  (fixtures)
    _no_proxies,
    anth,
    anthropic_provider,
    config,
    new_chat,
    searcher,
    send,
)
from core.config import Config
from fakes import text, tool_call


def test_the_defaults_leave_room_for_real_work():
    chat = Config().chat
    assert chat.max_requests_per_turn == 40 and chat.max_tool_calls_per_turn == 100


def test_a_fan_out_of_delegates_stops_at_the_request_budget(store, searcher, anth):
    """Every request answered with five delegate calls, alternating agents (so "not itself" passes):
    without a budget per message this grew without bound (5,089 requests in 60 s)."""
    cfg = config(max_requests_per_turn=12, max_tool_calls_per_turn=100)
    chat = new_chat(store, anthropic_provider(anth), searcher, cfg=cfg)
    for i in range(200):
        anth.script.add(*(tool_call("delegate", {"agent": ("worker", "planner")[(i + k) % 2], "task": f"task {i}.{k}"})
                          for k in range(5)))
    events = send(chat, "hello")
    assert len(anth.model_requests()) == 12
    reply = chat.last_reply
    assert reply.status == "incomplete" and "used its 12 model requests" in reply.error
    assert "max_requests_per_turn" in reply.error
    assert any(e.type == "error" and "max_requests_per_turn" in str(e.error) for e in events)
    # a delegation asked for once the budget is spent is refused, not started
    # (stored with the steps: no request was left to send them in)
    stored = " ".join(r[0] for r in store.db.execute("SELECT content FROM messages WHERE role = 'user'"))
    assert "Not delegated: this message has used its 12 model requests" in stored


def test_endless_tool_calls_stop_at_the_tool_call_budget(store, searcher, anth):
    cfg = config(max_requests_per_turn=40, max_tool_calls_per_turn=7)
    chat = new_chat(store, anthropic_provider(anth), searcher, cfg=cfg)
    for i in range(40):
        anth.script.add(*(tool_call("queryNodes", {"filter": f"x{i}{k}"}) for k in range(3)))
    send(chat, "hello")
    results = [b for b in anth.model_requests()[-1].body["messages"][-1]["content"] if b.get("type") == "tool_result"]
    ran = [b for r in anth.model_requests() for b in r.body["messages"][-1]["content"]
           if isinstance(b, dict) and b.get("type") == "tool_result" and not b.get("is_error")]
    assert len(ran) == 7
    assert any("used its 7 tool calls" in b["content"] for b in results)
    reply = chat.last_reply
    assert reply.status == "incomplete" and "max_tool_calls_per_turn" in reply.error
    assert len(anth.model_requests()) == 4  # three steps of three calls (the last cut), then the model still calls tools


def test_the_budget_is_per_message(store, searcher, anth):
    cfg = config(max_requests_per_turn=3)
    chat = new_chat(store, anthropic_provider(anth), searcher, cfg=cfg)
    for _ in range(2):
        anth.script.add(tool_call("queryNodes", {}))
        anth.script.add(tool_call("queryNodes", {}))
        anth.script.add(text("done"))
        send(chat, "go")
        assert chat.last_reply.status == "complete"
    assert len(anth.model_requests()) == 6


def test_the_spending_caps_look_up_instead_of_scanning(store):
    """Each cap check was a scan of every chat (1.4 s at 2,600 chats, once per request): the queries use
    the indexes of migration 7 (bench/spend_cap.py times it)."""
    from core.chat.cost import CHAT_TREE

    def plan(sql, *params):
        return " | ".join(r[3] for r in store.db.execute("EXPLAIN QUERY PLAN " + sql, params).fetchall())

    tree = plan(CHAT_TREE + "SELECT id FROM tree", 1)
    assert "chats_parent" in tree and "SCAN c" not in tree
    day = plan("SELECT usage FROM messages WHERE usage IS NOT NULL AND created_at >= ?", "2026")
    assert "messages_spent" in day
    side = plan("SELECT usage FROM sent_log WHERE usage IS NOT NULL AND created_at >= ?", "2026")
    assert "sent_log_spent" in side
