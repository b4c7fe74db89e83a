"""Chat sessions against the fake servers: the tool loop, confirmations, delegation, memory, privacy,
sent_log, citations and resume, cancel, errors, the rolling summary, and read-only SQL."""

from __future__ import annotations

import json
import threading

import pytest

from chat_support import (  # noqa: F401  (fixtures)
    FIXED_NOW,
    unfenced,
    KEY,
    _no_proxies,
    anth,
    anthropic_provider,
    config,
    dump_db,
    new_chat,
    oai,
    openai_provider,
    raw_bodies,
    searcher,
    send,
)
from core.chat import conversation as chat_module
from core.agent import profiles
from core.chat.conversation import Chat
from core.chat.repository import ChatRepository
from core.chat.focus import Focus
from core.agent.tools import ToolContext, ToolError, ToolRunner
from fakes import cut_after, http_error, invalid_tool_json, text, tool_call, unauthorized


def tool_results(body: dict) -> list[dict]:
    """The tool_result blocks of the last message of an Anthropic body."""
    return [b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"]


def rows(store, sql, *params):
    return [dict(r) for r in store.db.execute(sql, params).fetchall()]


# ------------------------------------------------------------------------------------------------
# the tool loop


def test_a_tool_call_creates_a_node(store, searcher, anth):
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(text("I'll save that."),
                    tool_call("createNode", {"title": "Sourdough ratio", "source": "1:5:100", "dimensions": ["baking"]}))
    anth.script.add(text("Saved as a note."))
    events = send(chat, "Remember my sourdough ratio: 1:5:100")
    reply = chat.last_reply
    assert reply.status == "complete" and reply.tool_calls == 1 and reply.requests == 2
    assert len(reply.created_nodes) == 1
    node = store.get_node(reply.created_nodes[0])
    assert node["title"] == "Sourdough ratio" and node["source"] == "1:5:100" and node["dimensions"] == ["baking"]
    via = store.db.execute("SELECT json_extract(metadata, '$.created_via') FROM nodes WHERE id = ?", (node["id"],))
    assert via.fetchone()[0] == "model"
    assert [e.type for e in events if e.type in ("tool_call", "tool_result")] == ["tool_call", "tool_result"]
    result = tool_results(anth.last.body)[0]
    assert "is_error" not in result and json.loads(result["content"])["created"]["id"] == node["id"]
    # the whole loop is kept in history: text + tool_use, tool_result, then the final text
    roles = [(m["role"], [b["type"] for b in m["content"]]) for m in chat.history()]
    assert roles == [("user", ["text"]), ("assistant", ["text", "tool_use"]), ("user", ["tool_result"]),
                     ("assistant", ["text"])]


@pytest.mark.parametrize("call, expect", [
    (tool_call("createNode", {"title": "x", "colour": "red"}), "Bad arguments for createNode"),
    (tool_call("getNodesById", {"ids": ["one"]}), "Bad arguments for getNodesById"),
    (tool_call("queryNodes", {"limit": "lots"}), "Bad arguments for queryNodes"),
    (invalid_tool_json("queryNodes", '{"limit": nope}'), "Invalid tool input"),
    (tool_call("queryEdges", {"node_id": 4242}), "There is no node 4242."),
    (tool_call("updateNode", {"id": 4242, "title": "t"}), "There is no node 4242."),
    (tool_call("searchContent", {"query": "x", "node_id": 4242}), "There is no node 4242."),
    (tool_call("noSuchTool", {}), "not available to this agent"),
], ids=["unknown-arg", "bad-id-type", "bad-limit-type", "invalid-json", "edges-unknown-node",
        "update-unknown-node", "search-unknown-node", "unknown-tool"])
def test_tool_errors_go_back_to_the_model_and_the_turn_continues(store, searcher, anth, call, expect):
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(call)
    anth.script.add(text("Sorry, let me answer without it."))
    send(chat, "do something")
    reply = chat.last_reply
    assert reply.status == "complete" and reply.text == "Sorry, let me answer without it."
    assert len(anth.requests) == 2
    result = tool_results(anth.last.body)[0]
    assert result["is_error"] is True and expect in result["content"]
    assert result["tool_use_id"] == anth.last.body["messages"][-2]["content"][-1]["id"]


def test_the_tool_call_limit_ends_a_runaway_loop(store, searcher, monkeypatch):
    from fakes import FakeAnthropic

    # a model that never stops calling tools
    with FakeAnthropic(default_reply=[tool_call("queryNodes", {"limit": 1})]) as srv:
        chat = new_chat(store, anthropic_provider(srv), searcher)
        events = []
        for event in chat.send("loop forever"):
            events.append(event)
            assert len(srv.requests) <= chat_module.MAX_TOOL_CALLS + 2, "the tool loop did not stop"
        reply = chat.last_reply
        results = [e for e in events if e.type == "tool_result"]
        assert reply.tool_calls >= chat_module.MAX_TOOL_CALLS
        ok = [e for e in results if e.stop_reason == "ok"]
        refused = [e for e in results if e.stop_reason == "error"]
        assert len(ok) == chat_module.MAX_TOOL_CALLS == 25
        assert refused and all("Tool call limit reached (25 per turn)" in e.text for e in refused)
        assert reply.status == "incomplete" and "25" in reply.error
        # the stored history stays valid: every tool_use has its tool_result
        used = {b["id"] for m in chat.history() for b in m["content"] if b["type"] == "tool_use"}
        answered = {b["tool_use_id"] for m in chat.history() for b in m["content"] if b["type"] == "tool_result"}
        assert used == answered


def test_several_calls_in_one_step_past_the_limit(store, searcher, anth):
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(*[tool_call("queryNodes", {"limit": 1}) for _ in range(27)])
    anth.script.add(text("Enough."))
    send(chat, "go")
    results = tool_results(anth.last.body)
    assert len(results) == 27
    assert [bool(r.get("is_error")) for r in results] == [False] * 25 + [True, True]
    assert chat.last_reply.status == "complete" and chat.last_reply.text == "Enough."


# ------------------------------------------------------------------------------------------------
# confirmation


@pytest.fixture
def two_nodes(store):
    return store.add_node("Left", "left text")["id"], store.add_node("Right", "right text")["id"]


@pytest.mark.parametrize("confirm", [None, lambda action, detail: False], ids=["no-callback", "user-says-no"])
def test_updates_and_edges_without_confirmation_are_refused(store, searcher, anth, two_nodes, confirm):
    left, right = two_nodes
    chat = new_chat(store, anthropic_provider(anth), searcher, confirm=confirm)
    anth.script.add(tool_call("updateNode", {"id": left, "title": "Renamed"}),
                    tool_call("createEdge", {"from_id": left, "to_id": right, "explanation": "They pair up."}))
    anth.script.add(text("I could not change anything."))
    send(chat, "rename and link them")
    results = tool_results(anth.last.body)
    assert [r.get("is_error") for r in results] == [True, True]
    assert all("The user did not confirm" in r["content"] and "Nothing was changed" in r["content"] for r in results)
    assert store.get_node(left)["title"] == "Left" and store.edges(left) == []
    assert chat.last_reply.status == "complete"


def test_updates_and_edges_with_confirmation_succeed(store, searcher, anth, two_nodes):
    left, right = two_nodes
    asked = []

    def confirm(action, detail):
        asked.append((action, detail))
        return True

    chat = new_chat(store, anthropic_provider(anth), searcher, confirm=confirm)
    anth.script.add(tool_call("updateNode", {"id": left, "title": "Renamed"}),
                    tool_call("createEdge", {"from_id": left, "to_id": right, "explanation": "They pair up."}))
    anth.script.add(text("Done."))
    send(chat, "rename and link them")
    assert [r.get("is_error") for r in tool_results(anth.last.body)] == [None, None]
    assert store.get_node(left)["title"] == "Renamed"
    edge = store.edges(left)[0]
    assert edge["explanation"] == "They pair up." and edge["to_node_id"] == right
    assert asked[0] == (f"update node {left} ('Left')", {"title": "Renamed"})
    assert asked[1] == (f"link {left} → {right}", {"explanation": "They pair up."})
    assert chat.last_reply.created_nodes == []  # edits are not "created" nodes


# ------------------------------------------------------------------------------------------------
# delegation


def test_no_self_delegation(store, searcher, anth):
    chat = new_chat(store, anthropic_provider(anth), searcher)  # orchestrator
    anth.script.add(tool_call("delegate", {"agent": "orchestrator", "task": "do it yourself"}))
    anth.script.add(text("Fine, I'll do it."))
    send(chat, "go")
    result = tool_results(anth.last.body)[0]
    assert result["is_error"] and "cannot delegate to itself" in result["content"]
    assert len(anth.requests) == 2  # no sub-chat ran
    assert chat.last_reply.status == "complete"


def test_delegation_depth_is_at_most_5(store, searcher, anth):
    chat = new_chat(store, anthropic_provider(anth), searcher)  # orchestrator, depth 0
    # orchestrator → planner → orchestrator → planner → orchestrator → planner (depth 5) → refused
    chain = ["planner", "orchestrator", "planner", "orchestrator", "planner", "orchestrator"]
    for target in chain:
        anth.script.add(tool_call("delegate", {"agent": target, "task": f"hand over to {target}"}))
    for depth in range(5, -1, -1):
        anth.script.add(text(f"answer from depth {depth}"))
    send(chat, "plan my week")
    assert len(anth.requests) == 12
    refused = tool_results(anth.requests[6].body)[0]
    assert refused["is_error"] and "Delegation depth limit reached (5)" in refused["content"]
    # each level passed its child's answer back up as a normal tool result
    for i, depth in zip(range(7, 12), range(5, 0, -1)):
        ok = tool_results(anth.requests[i].body)[0]
        assert "is_error" not in ok and unfenced(ok["content"]) == {"answer": f"answer from depth {depth}"}
    assert chat.last_reply.text == "answer from depth 0" and chat.last_reply.status == "complete"
    subs = rows(store, "SELECT agent, json_extract(metadata, '$.parent_chat_id') AS parent FROM chats ORDER BY id")
    assert [s["agent"] for s in subs] == ["orchestrator", "planner", "orchestrator", "planner", "orchestrator", "planner"]
    assert [s["parent"] for s in subs][1:] == [chat.id + i for i in range(5)]
    assert [c["id"] for c in ChatRepository(store).list_chats()] == [chat.id]  # sub-chats are not listed
    # the delegate builds its own context: its own role, not the caller's instructions
    planner_body = anth.requests[1].body
    assert "## Your role: planner" in planner_body["system"][0]["text"]
    assert "## Your role: orchestrator" not in json.dumps(planner_body["system"])
    assert planner_body["messages"][-1]["content"][0]["text"] == "hand over to planner"
    assert {t["name"] for t in planner_body["tools"]} == set(profiles.READ_TOOLS) | {"delegate"}


def test_a_delegate_sees_the_conversation(store, searcher, anth):
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(text("We talked about compost."))
    send(chat, "Let's talk about compost")
    anth.script.add(tool_call("delegate", {"agent": "worker", "task": "find compost notes"}))
    anth.script.add(text("none found"))
    anth.script.add(text("The worker found nothing."))
    send(chat, "Ask the worker")
    worker_body = anth.requests[2].body
    texts = [(m["role"], m["content"][0]["text"]) for m in worker_body["messages"]]
    assert texts[:2] == [("user", "Let's talk about compost"), ("assistant", "We talked about compost.")]
    assert texts[-1] == ("user", "find compost notes")
    assert "## Your role: worker" in worker_body["system"][0]["text"]


# ------------------------------------------------------------------------------------------------
# memory: the 80-character rule


@pytest.fixture
def writer(monkeypatch):
    agent = profiles.with_overrides(profiles.BUILT_IN["worker"], allow_write=True)
    monkeypatch.setitem(profiles.BUILT_IN, "worker", agent)
    return agent


def memory_nodes(store):
    return rows(store, "SELECT id, title, source, type, json_extract(metadata, '$.provenance') AS prov FROM nodes"
                       " WHERE type = 'memory' ORDER BY id")


def test_allow_write_saves_long_input_and_the_output_as_memory(store, searcher, anth, writer):
    chat = new_chat(store, anthropic_provider(anth), searcher, agent="worker")
    message = "x" * 70 + " ten chars"  # exactly 80 characters
    assert len(message) == 80
    anth.script.add(text("Here is what I found."))
    send(chat, message)
    mem = memory_nodes(store)
    assert [m["source"] for m in mem] == [message, "Here is what I found."]
    provs = [json.loads(m["prov"]) for m in mem]
    assert provs[0] == {"chat_id": chat.id, "message_id": chat.last_reply.message_id, "agent": "worker", "part": "input"}
    assert provs[1]["part"] == "output" and provs[1]["message_id"] == chat.last_reply.message_id


def test_short_input_is_not_saved_but_the_output_is(store, searcher, anth, writer):
    chat = new_chat(store, anthropic_provider(anth), searcher, agent="worker")
    anth.script.add(text("Short answer."))
    send(chat, "y" * 79)
    mem = memory_nodes(store)
    assert [json.loads(m["prov"])["part"] for m in mem] == ["output"]
    assert mem[0]["source"] == "Short answer."


def test_agents_without_allow_write_and_incomplete_replies_save_nothing(store, searcher, anth, writer):
    orch = new_chat(store, anthropic_provider(anth), searcher)
    send(orch, "z" * 200)
    worker = new_chat(store, anthropic_provider(anth), searcher, agent="worker")
    anth.script.add(text("partial partial partial", deltas=3), cut_after(1))
    send(worker, "w" * 200)
    assert worker.last_reply.status == "incomplete"
    assert memory_nodes(store) == []


def test_memory_nodes_are_never_hubs(store, searcher, anth, writer):
    chat = new_chat(store, anthropic_provider(anth), searcher, agent="worker")
    anth.script.add(text("A remembered answer."))
    send(chat, "q" * 100)
    mem = [m["id"] for m in memory_nodes(store)]
    notes = [store.add_node(f"Note {i}")["id"] for i in range(3)]
    for m in mem:
        for n in notes:
            store.add_edge(m, n, "memory refers to it")
    assert {h["id"] for h in store.hubs(10)} == set(notes)
    fresh = new_chat(store, anthropic_provider(anth), searcher)
    assert "Asked:" not in fresh.snapshot.background and "Answered:" not in fresh.snapshot.background


# ------------------------------------------------------------------------------------------------
# privacy.never_send


@pytest.fixture
def private_graph(store, indexer):
    secret = store.add_node("Diary of Zanzibar", "Zanzibar trip budget: the secret figure is 91731. " * 4,
                            dimensions=["private"])
    public = store.add_node("Trip planning", "Trip budget planning for the summer holiday. " * 4, dimensions=["travel"])
    store.add_edge(secret["id"], public["id"], "Zanzibar diary mentions the plan")
    store.add_edge(public["id"], store.add_node("Hub end")["id"], "planning hub")
    indexer.run()
    return secret["id"], public["id"]


def leak_script(srv, secret, public):
    """A model that tries every path to the hidden node."""
    srv.script.add(
        tool_call("getNodesById", {"ids": [secret, public]}),
        tool_call("queryNodes", {"filter": "diary"}),
        tool_call("queryNodes", {"sort": "edges"}),
        tool_call("queryNodes", {"dimension": "private"}),
        tool_call("searchContent", {"query": "trip budget secret figure"}),
        tool_call("searchContent", {"query": "budget", "node_id": secret}),
        tool_call("queryEdges", {"node_id": public}),
        tool_call("queryEdges", {"node_id": secret}),
        tool_call("sqliteQuery", {"sql": "SELECT title, source FROM nodes"}),
    )
    srv.script.add(text("Done looking."))


def private_config():
    cfg = config()
    cfg.privacy.never_send = ["private"]
    return cfg


def test_never_send_keeps_a_node_out_of_every_remote_request(store, searcher, anth, private_graph):
    secret, public = private_graph
    provider = anthropic_provider(anth, remote=True)
    chat = new_chat(store, provider, searcher, cfg=private_config())
    chat.set_focus(Focus((secret, public), secret))
    leak_script(anth, secret, public)
    send(chat, "What is the trip budget secret figure?")
    anth.script.add(text("ok"))
    send(chat, "And the diary?")
    sent = raw_bodies(anth)
    assert len(anth.requests) == 3
    assert "Zanzibar" not in sent and "91731" not in sent
    assert "Trip planning" in sent  # the visible node did go
    results = tool_results(anth.requests[1].body)
    assert len(results) == 9
    assert json.loads(results[0]["content"])["not_found_or_private"] == [secret]
    assert results[7]["is_error"] and "There is no node" in results[7]["content"]
    assert results[8]["is_error"] and "sqliteQuery is off" in results[8]["content"]
    logged = [json.loads(r["node_ids"]) for r in rows(store, "SELECT node_ids FROM sent_log")]
    assert all(secret not in ids for ids in logged) and any(public in ids for ids in logged)


def test_never_send_applies_to_a_focused_node_made_private_later(store, searcher, anth, private_graph):
    _, public = private_graph
    chat = new_chat(store, anthropic_provider(anth, remote=True), searcher, cfg=private_config())
    chat.set_focus(Focus((public,), public))
    assert "Trip planning" in chat.request("hi").suffix.text
    assert "Trip planning" in chat.snapshot.background  # a hub when the chat started
    store.update_node(public, dimensions=["travel", "private"])  # edited while open in a tab
    send(chat, "hi")
    send(chat, "hi again")
    assert "Trip planning" not in raw_bodies(anth)
    # privacy beats the cache: the prefix was rendered again once, and is stable from then on
    assert json.dumps(anth.requests[0].body["system"]) == json.dumps(anth.requests[1].body["system"])
    again = Chat(store, private_config(), anthropic_provider(anth, remote=True), chat_id=chat.id, searcher=searcher)
    assert "Trip planning" not in again.snapshot.background


def test_a_local_provider_may_see_private_nodes(store, searcher, anth, private_graph):
    secret, public = private_graph
    provider = anthropic_provider(anth)  # the fake is on loopback: a local provider
    assert provider.remote is False
    chat = new_chat(store, provider, searcher, cfg=private_config())
    chat.set_focus(Focus((secret,), secret))
    anth.script.add(tool_call("getNodesById", {"ids": [secret]}))
    anth.script.add(text("Here it is."))
    send(chat, "What is the Zanzibar trip budget secret figure?")
    first = anth.requests[0].raw.decode()
    assert "Diary of Zanzibar" in first and "91731" in first  # focus + retrieved
    assert "91731" in tool_results(anth.requests[1].body)[0]["content"]
    logged = [json.loads(r["node_ids"]) for r in rows(store, "SELECT node_ids FROM sent_log")]
    assert secret in logged[0]


def test_sent_log_names_the_nodes_and_the_provider(store, searcher, anth, private_graph):
    secret, public = private_graph
    chat = new_chat(store, anthropic_provider(anth), searcher)
    hub_ids = chat.snapshot.node_ids
    assert hub_ids
    anth.script.add(tool_call("getNodesById", {"ids": [secret]}))
    anth.script.add(text("ok"))
    send(chat, "Trip budget planning")
    log = rows(store, "SELECT * FROM sent_log WHERE chat_id = ? ORDER BY id", chat.id)
    assert len(log) == 2 and {r["provider"] for r in log} == {"anthropic"} and log[0]["model"] == "claude-sonnet-4-6"
    user_msg = rows(store, "SELECT id FROM messages WHERE chat_id = ? AND role = 'user' ORDER BY id LIMIT 1", chat.id)[0]
    assert all(r["message_id"] == user_msg["id"] for r in log)
    first, second = (json.loads(r["node_ids"]) for r in log)
    passages = chat.last_reply.citations["passages"]
    assert set(hub_ids) <= set(first) and set(passages.values()) <= set(first)
    assert secret in second and set(first) <= set(second)  # the tool result sent it in step 2


# ------------------------------------------------------------------------------------------------
# citations and resume


def test_citations_are_stored_and_survive_reopening(store, indexer, searcher, embedder, anth):
    a = store.add_node("Compost guide", "Compost needs greens, browns, air and water. " * 4)
    b = store.add_node("Worm bins", "Worm bins turn kitchen scraps into compost quickly. " * 4)
    indexer.run()
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(text(f"Use greens and browns [1], or worms [NODE:{b['id']}]."))
    send(chat, "How do I make compost?")
    reply = chat.last_reply
    passages = reply.citations["passages"]
    assert passages["1"] in (a["id"], b["id"]) and set(passages.values()) <= {a["id"], b["id"]}
    assert reply.citations["nodes"] == [b["id"]]
    chat_id, message_id = chat.id, reply.message_id
    store.close()

    from core.search.searcher import Searcher
    from core.graph.store import Store

    with Store(store.path) as again_store:
        again = Chat(again_store, config(), anthropic_provider(anth), chat_id=chat_id,
                     searcher=Searcher(again_store, embedder))
        messages = again.messages()
        last = messages[-1]
        assert last["id"] == message_id and last["role"] == "assistant" and last["status"] == "complete"
        assert last["citations"] == {"passages": passages, "nodes": [b["id"]]}
        assert last["text"] == f"Use greens and browns [1], or worms [NODE:{b['id']}]."
        assert last["usage"]["output"] > 0
        assert messages[0]["role"] == "user" and messages[0]["text"] == "How do I make compost?"
        # resuming continues the same conversation
        anth.script.add(text("More."))
        send(again, "Tell me more")
        assert [m["role"] for m in anth.last.body["messages"]] == ["user", "assistant", "user"]
        assert len(again.messages()) == 4


def test_resuming_an_unknown_chat_is_a_clear_error(store, anth):
    from core.errors import NotFound

    with pytest.raises(NotFound, match="There is no chat 99"):
        Chat(store, config(), anthropic_provider(anth), chat_id=99)


# ------------------------------------------------------------------------------------------------
# cancel, errors


def test_cancel_keeps_the_partial_reply_marked_incomplete(store, searcher, anth):
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(text("alpha beta gamma delta epsilon zeta", deltas=6))
    cancel = threading.Event()
    events = []
    for event in chat.send("tell me a long story", cancel):
        events.append(event)
        if event.type == "text" and len([e for e in events if e.type == "text"]) == 2:
            cancel.set()
    assert events[-1].type == "stop" and events[-1].stop_reason == "cancelled"
    reply = chat.last_reply
    assert reply.status == "incomplete" and reply.text == "alpha beta"
    row = rows(store, "SELECT content, status FROM messages WHERE id = ?", reply.message_id)[0]
    assert row["status"] == "incomplete" and json.loads(row["content"]) == [{"type": "text", "text": "alpha beta"}]
    # the next turn goes on from the partial reply
    send(chat, "go on")
    assert anth.last.body["messages"][1]["content"] == [{"type": "text", "text": "alpha beta"}]


@pytest.mark.parametrize("fault, message", [
    (unauthorized(), "Anthropic rejected the API key (401 unauthorized). Check $ANTHROPIC_API_KEY."),
    ([text("half a thought and", deltas=4), cut_after(2)], "cut mid-reply"),
    (http_error(429, retry_after=0.01), "rate limiting requests (429); gave up after 0 retries"),
    (http_error(503, retry_after=0.01), "server error (503); gave up after 0 retries"),
], ids=["401", "cut", "429", "503"])
def test_errors_surface_as_their_message_and_the_chat_goes_on(store, searcher, anth, monkeypatch, fault, message):
    from core.providers import anthropic_provider as ap

    monkeypatch.setattr(ap, "MAX_RETRIES", 0)
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(*(fault if isinstance(fault, list) else [fault]))
    events = send(chat, "hello")
    errors = [e.error for e in events if e.type == "error"]
    assert len(errors) == 1 and message in str(errors[0])
    reply = chat.last_reply
    assert reply.status == "incomplete" and message in reply.error
    stored = rows(store, "SELECT status FROM messages WHERE id = ?", reply.message_id)[0]
    assert stored["status"] == "incomplete"
    # the next turn is a valid request: no empty text blocks in the history it sends
    send(chat, "try again")
    assert chat.last_reply.status == "complete"
    for m in anth.last.body["messages"]:
        assert m["content"] and all(b.get("text", "x") != "" for b in m["content"])


def test_refused_connection_in_a_chat(store, searcher, monkeypatch):
    from chat_support import closed_port
    from core.providers import anthropic_provider as ap

    monkeypatch.setattr(ap, "MAX_RETRIES", 0)
    url = f"http://127.0.0.1:{closed_port()}"
    chat = new_chat(store, ap.AnthropicProvider(KEY, "claude-sonnet-4-6", base_url=url), searcher)
    send(chat, "anyone there?")
    assert chat.last_reply.error == f"Could not connect to {url} (connection refused or unreachable)."


def test_no_key_in_any_stored_row(store, searcher, anth, oai, private_graph):
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(tool_call("createNode", {"title": "made by model"}))
    anth.script.add(text("ok"))
    send(chat, "make a note")
    anth.script.add(unauthorized())
    send(chat, "again")
    other = new_chat(store, openai_provider(oai), searcher)
    send(other, "hi")
    dump = dump_db(store.path)
    assert "made by model" in dump and "claude-sonnet-4-6" in dump  # the dump does see the rows
    assert KEY not in dump and KEY[-12:] not in dump


# ------------------------------------------------------------------------------------------------
# rolling summary


def long_chat(store, searcher, anth, turns: int):
    chat = new_chat(store, anthropic_provider(anth), searcher)
    for i in range(turns):
        anth.script.add(text(f"answer {i}"))
        send(chat, f"question {i} " + "padding " * 10)
    return chat


def test_rolling_summary_replaces_old_turns_and_keeps_the_last_4(store, searcher, anth, monkeypatch):
    monkeypatch.setattr(chat_module, "SUMMARY_THRESHOLD_TOKENS", 60)
    chat = long_chat(store, searcher, anth, 2)
    assert "summary" not in chat.metadata  # not enough exchanges to summarise yet
    for i in range(2, 5):
        anth.script.add(text(f"answer {i}"))
        send(chat, f"question {i} " + "padding " * 10)
    assert len(anth.requests) == 5 and "summary" not in chat.metadata
    # the 6th turn: 5 earlier exchanges, over the threshold → the oldest is summarised first
    anth.script.add(text("## Decisions\n- use compost\n## Open questions\n- none"))
    anth.script.add(text("answer 5"))
    send(chat, "question 5")
    summary_req, turn_req = anth.requests[-2:]
    assert summary_req.body["system"][0]["text"].startswith("Summarise the conversation")
    assert "tools" not in summary_req.body
    assert "user: question 0" in summary_req.body["messages"][0]["content"][0]["text"]
    assert "question 1" not in summary_req.body["messages"][0]["content"][0]["text"]
    messages = turn_req.body["messages"]
    assert messages[0]["content"][0]["text"].startswith("[Summary of the earlier conversation]\n<untrusted id=") and '">\n## Decisions' in messages[0]["content"][0]["text"]
    verbatim = [m["content"][0]["text"] for m in messages[2:-1] if m["role"] == "user"]
    assert [t.split(" padding")[0] for t in verbatim] == ["question 1", "question 2", "question 3", "question 4"]
    assert messages[-1]["content"][0]["text"] == "question 5"
    assert chat.last_reply.status == "complete" and chat.metadata["summary"].startswith("## Decisions")
    # the summary survives a reopen
    again = Chat(store, config(), anthropic_provider(anth), chat_id=chat.id, searcher=searcher)
    assert again.history()[0]["content"][0]["text"].startswith("[Summary of the earlier conversation]")


def test_a_failed_summary_leaves_the_chat_unsummarised(store, searcher, anth, monkeypatch):
    from core.providers import anthropic_provider as ap

    monkeypatch.setattr(ap, "MAX_RETRIES", 0)
    monkeypatch.setattr(chat_module, "SUMMARY_THRESHOLD_TOKENS", 60)
    chat = long_chat(store, searcher, anth, 5)
    anth.script.add(http_error(500))  # the summary request fails
    anth.script.add(text("answer 5"))
    send(chat, "question 5")
    assert anth.requests[-2].status == 500
    turn = anth.last.body["messages"]
    assert turn[0]["content"][0]["text"].startswith("question 0")  # the whole history, unsummarised
    assert len(turn) == 11
    assert chat.last_reply.status == "complete" and chat.last_reply.text == "answer 5"
    assert "summary" not in chat.metadata and "server error (500)" in chat.metadata["summary_error"]


# ------------------------------------------------------------------------------------------------
# sqliteQuery: read-only by construction


@pytest.fixture
def runner(store, searcher):
    store.add_node("Readable", "text")
    ctx = ToolContext(store, searcher)
    return ToolRunner(ctx, profiles.ALL_TOOLS)


def test_sqlite_query_allows_a_select(runner):
    out = runner.run("sqliteQuery", {"sql": "SELECT id, title FROM nodes WHERE title LIKE 'Read%'"})
    assert out == {"columns": ["id", "title"], "rows": [[1, "Readable"]], "truncated": False}
    cte = runner.run("sqliteQuery", {"sql": "WITH t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) SELECT n FROM t"})
    assert cte["rows"] == [[1], [2], [3]]


def _refused(runner, store, sql):
    before = store.db.execute("SELECT COUNT(*), MAX(title) FROM nodes").fetchone()[:]
    with pytest.raises(ToolError) as e:
        runner.run("sqliteQuery", {"sql": sql})
    after = store.db.execute("SELECT COUNT(*), MAX(title) FROM nodes").fetchone()[:]
    assert before == after
    return str(e.value)


def test_sqlite_query_refuses_writes(runner, store):
    for sql in ("INSERT INTO nodes(title, created_at, updated_at) VALUES ('x', '', '')",
                "UPDATE nodes SET title = 'pwned'", "DELETE FROM nodes", "DROP TABLE nodes"):
        assert "Refused" in _refused(runner, store, sql)


def test_sqlite_query_refuses_attach(runner, store, tmp_path):
    assert "Refused" in _refused(runner, store, f"ATTACH DATABASE '{tmp_path / 'other.db'}' AS other")
    assert not (tmp_path / "other.db").exists()


def test_sqlite_query_refuses_pragma(runner, store):
    assert "Refused" in _refused(runner, store, "PRAGMA user_version = 99")
    assert "Refused" in _refused(runner, store, "PRAGMA query_only = OFF")
    assert store.db.execute("PRAGMA user_version").fetchone()[0] != 99


def test_sqlite_query_refuses_load_extension(runner, store):
    assert "Refused" in _refused(runner, store, "SELECT load_extension('/tmp/evil')")


def test_sqlite_query_refuses_a_writing_cte(runner, store):
    assert "Refused" in _refused(
        runner, store, "WITH t AS (SELECT 1) INSERT INTO nodes(title, created_at, updated_at) SELECT 'x', '', '' FROM t")
    assert "Refused" in _refused(runner, store, "WITH t AS (SELECT id FROM nodes) DELETE FROM nodes WHERE id IN t")


def test_sqlite_query_refuses_multiple_statements(runner, store):
    msg = _refused(runner, store, "SELECT 1; DELETE FROM nodes")
    assert "one statement" in msg or "Refused" in msg
    _refused(runner, store, "SELECT 1; SELECT 2")


def test_an_incomplete_reply_keeps_its_reason_after_reopening(store, searcher, anth):
    """A reply cut mid-stream is stored incomplete, and the reason is still there after a restart."""
    from chat_support import anthropic_provider, new_chat
    from core.chat.conversation import Chat
    from fakes import cut_after, text

    provider = anthropic_provider(anth)
    chat = new_chat(store, provider, searcher)
    anth.script.add(text("Part of an answer that will be cut " * 3), cut_after(2))
    for _ in chat.send("tell me something"):
        pass
    assert chat.last_reply.status == "incomplete"
    reopened = Chat(store, chat.config, provider, chat_id=chat.id, searcher=searcher)
    last = reopened.messages()[-1]
    assert last["status"] == "incomplete"
    assert last["error"] and "cut" in last["error"]
