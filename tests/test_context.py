"""The context engine: block order, the byte-stable prefix, the Focus suffix, hubs, template variables."""

from __future__ import annotations

import json
import math

import pytest

from chat_support import (  # noqa: F401  (fixtures)
    FIXED_NOW,
    SONNET,
    _no_proxies,
    anth,
    anthropic_provider,
    config,
    new_chat,
    searcher,
    send,
    strip_cc,
)
from core.graph.privacy import SendPolicy
from core.agent import profiles
from core.agent.profiles import Agent, resolve_instructions
from core.chat.context import ContextEngine
from core.providers.request import ContextRequest, estimate_tokens
from core.chat.focus import Focus
from core.errors import InvalidInput
from core.providers.base import Turn
from fakes import text

PREFIX = ("tools", "system", "skills", "core_notes", "background", "history", "user")
SUFFIX = ("focus", "retrieved", "datetime")


@pytest.fixture
def graph(store, indexer):
    """Two notes to focus, a hub, a core note; indexed so retrieval finds passages."""
    a = store.add_node("Alpha project", "The alpha project builds a terminal knowledge app on SQLite. " * 5,
                       description="Terminal knowledge app plan", link="https://example.org/alpha",
                       dimensions=["work", "ai"])
    b = store.add_node("Beta reading list", "Books about gardening, soil and compost. " * 5, dimensions=["home"])
    hub = store.add_node("Knowledge graphs", "Nodes and edges with explanations.")
    core = store.add_node("About me", "I am Ada, a researcher who writes software.", metadata={"core": True})
    store.add_edge(a["id"], hub["id"], "Alpha is a knowledge graph app.")
    store.add_edge(b["id"], hub["id"], "The reading list is kept as a graph.")
    indexer.run()
    return {"a": a["id"], "b": b["id"], "hub": hub["id"], "core": core["id"]}


def engine(store, searcher, agent_name="orchestrator", **kw) -> ContextEngine:
    return ContextEngine(store, searcher, profiles.get(agent_name), **kw)


def variables():
    return {"user_name": "Ada", "chat_id": "1", "agent": "orchestrator", "model": SONNET}


def prefix_of(body: dict) -> str:
    """The cached part of an Anthropic body: tools, system and every message before the suffix block."""
    messages = json.loads(json.dumps(body["messages"]))
    last = messages[-1]
    assert last["role"] == "user"
    last["content"] = last["content"][:1]  # the new user text; the suffix block follows it
    return json.dumps({"tools": body.get("tools"), "system": body["system"], "messages": messages}, ensure_ascii=False)


# ------------------------------------------------------------------------------------------------
# blocks


def test_blocks_are_in_order_and_report_tokens_and_cached(store, searcher, graph):
    eng = engine(store, searcher)
    eng.set_focus(Focus((graph["a"], graph["b"]), graph["b"]))
    snap = eng.snapshot(variables())
    history = [{"role": "user", "content": [{"type": "text", "text": "earlier question"}]},
               {"role": "assistant", "content": [{"type": "text", "text": "earlier answer"}]}]
    message = "What is the alpha project's terminal knowledge app?"
    req = ContextRequest(snap, history, message, eng.suffix(message, now=FIXED_NOW), SONNET)
    blocks = req.blocks()
    names = [b.name for b in blocks]
    assert names == ["tools", "system", "skills", "core_notes", "background", "history", "user", "focus", "retrieved",
                     "datetime"]
    for b in blocks:
        summary = b.summary()
        assert set(summary) == {"name", "cached", "tokens_est"}
        assert summary["tokens_est"] == math.ceil(len(b.text.encode("utf-8")) / 4) > 0
        assert summary["cached"] is (b.name in PREFIX), b.name
    assert estimate_tokens("") == 0 and estimate_tokens("é") == 1
    by_name = {b.name: b.text for b in blocks}
    assert by_name["datetime"] == "[Context — current date/time: 2026-03-04 05:06 UTC (Wednesday)]"
    assert "[NODE:%d:\"About me\"]" % graph["core"] in by_name["core_notes"]
    assert '"Knowledge graphs"] (edges: 2)' in by_name["background"]
    # tools are schemas only, never repeated as prose in the system part
    assert "queryNodes" in by_name["tools"] and "queryNodes" not in by_name["system"]
    # retrieved passages are numbered [N] with their node ids, the alpha note first
    assert req.suffix.passages and [p.n for p in req.suffix.passages] == list(range(1, len(req.suffix.passages) + 1))
    assert req.suffix.passages[0].node_id == graph["a"]
    assert f'[1] [NODE:{graph["a"]}:"Alpha project"]' in by_name["retrieved"]
    assert set(req.node_ids) >= {graph["a"], graph["b"], graph["hub"], graph["core"]}


def test_focus_block_lists_primary_first_with_preview(store, searcher, graph):
    eng = engine(store, searcher)
    text_ = eng.set_focus(Focus((graph["a"], graph["b"]), primary=graph["b"]))
    lines = text_.splitlines()
    assert lines[0].startswith("[Focused nodes")
    assert lines[1].startswith(f'Primary (active tab): [NODE:{graph["b"]}:"Beta reading list"]')
    assert "dimensions: home" in lines[1] and "status: indexed" in lines[1]
    also = text_.split("Also open: ", 1)[1]
    assert also.startswith(f'[NODE:{graph["a"]}:"Alpha project"]')
    assert "link: https://example.org/alpha" in also and "dimensions: work, ai" in also
    preview = lines[2].strip()
    assert len(preview.replace(" …", "").split()) <= 25 and preview.endswith("…")
    assert Focus((1, 2), 3).ordered == (3, 1, 2)  # a primary that is not yet open is opened first


def test_tab_change_alters_only_the_suffix(store, searcher, graph, anth):
    provider = anthropic_provider(anth)
    chat = new_chat(store, provider, searcher)
    message = "Tell me about the alpha project"
    r1 = chat.request(message, focus=Focus((graph["a"], graph["b"]), graph["a"]))
    r2 = chat.request(message, focus=Focus((graph["a"], graph["b"]), graph["b"]))
    r3 = chat.request(message, focus=Focus((graph["b"],), graph["b"]))
    bodies = [provider.body(Turn(r, [], chat.chat_key)) for r in (r1, r2, r3)]
    assert prefix_of(bodies[0]) == prefix_of(bodies[1]) == prefix_of(bodies[2])  # byte-identical
    assert r1.suffix.focus != r2.suffix.focus != r3.suffix.focus
    assert r1.suffix.retrieved == r2.suffix.retrieved == r3.suffix.retrieved
    assert r1.suffix.datetime == r2.suffix.datetime == r3.suffix.datetime
    for r in (r1, r2, r3):
        assert [b for b in r.blocks() if b.cached] == [b for b in r1.blocks() if b.cached]
    # the suffix is its own block after the new user text; it carries a breakpoint so a tool loop's
    # next step can read it, but it never enters the history, so later turns do not reuse it
    last = bodies[1]["messages"][-1]["content"]
    assert last[0]["text"] == message and "cache_control" in last[0]
    assert last[1]["text"] == r2.suffix.text and last[1]["cache_control"] == {"type": "ephemeral"}
    assert last[1]["text"].startswith(f'[Focused nodes — open in the user\'s Focus panel]\nPrimary (active tab): [NODE:{graph["b"]}')


def test_prefix_is_byte_identical_across_turns(store, searcher, graph, anth):
    provider = anthropic_provider(anth)
    chat = new_chat(store, provider, searcher)
    chat.set_focus(Focus((graph["a"],), graph["a"]))
    anth.script.add(text("First answer, about alpha [1]."))
    anth.script.add(text("Second answer."))
    anth.script.add(text("Third answer."))
    send(chat, "What is the alpha project?")
    chat.set_focus(Focus((graph["a"], graph["b"]), graph["b"]))  # a tab change between turns
    send(chat, "And the reading list?")
    send(chat, "Thanks, summarise both.")
    bodies = [r.body for r in anth.requests]
    assert len(bodies) == 3
    for earlier, later in zip(bodies, bodies[1:]):
        assert json.dumps(later["tools"]) == json.dumps(earlier["tools"])
        assert json.dumps(later["system"]) == json.dumps(earlier["system"])
        # the earlier request, minus its volatile suffix, is exactly the start of the later one
        sent = strip_cc(earlier["messages"])
        sent[-1]["content"] = sent[-1]["content"][:1]
        n = len(sent)
        assert json.dumps(strip_cc(later["messages"][:n]), ensure_ascii=False) == json.dumps(sent, ensure_ascii=False)
        assert later["messages"][n]["role"] == "assistant"
    # the suffix is never stored in history
    history = json.dumps(chat.history(), ensure_ascii=False)
    assert "[Context — current date/time" not in history and "[Focused nodes" not in history
    assert "[Retrieved passages" not in history
    # a reopened chat lays out the same prefix
    from core.chat.conversation import Chat

    again = Chat(store, config(), provider, chat_id=chat.id, searcher=searcher, now=lambda: FIXED_NOW)
    assert again.snapshot == chat.snapshot and again.history() == chat.history()


def test_blocks_after_a_turn_include_the_stored_history(store, searcher, graph, anth):
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(text("An answer."))
    send(chat, "First question")
    req = chat.request("Second question")
    blocks = {b.name: b for b in req.blocks()}
    assert blocks["history"].cached and json.loads(blocks["history"].text) == [
        {"role": "user", "content": [{"type": "text", "text": "First question"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "An answer."}]},
    ]


# ------------------------------------------------------------------------------------------------
# background hubs


def test_background_hubs_exclude_memory_and_break_ties_by_recency(store, searcher):
    notes = [store.add_node(f"Note {i}") for i in range(13)]
    memory = store.add_node("Remembered answer", "auto-written", type="memory")
    ids = [n["id"] for n in notes]
    # memory node: the most edges of all, still never a hub
    for other in ids[:8]:
        store.add_edge(memory["id"], other, "memory mentions it")
    # Note 0 gets 3 more edges; notes 1..12 one or two each
    for other in ids[1:4]:
        store.add_edge(ids[0], other, "zero links them")
    for i in range(4, 13):
        store.add_edge(ids[i], ids[(i % 3) + 1], "linked")
    with store.db.transaction() as conn:  # a clear recency order for ties
        for i, nid in enumerate(ids):
            conn.execute("UPDATE nodes SET updated_at = ? WHERE id = ?", (f"2026-01-01T00:00:{i:02d}.000Z", nid))
    hubs = store.hubs(20)
    assert memory["id"] not in [h["id"] for h in hubs]
    expected = [h["id"] for h in hubs][:10]
    counts = [h["edge_count"] for h in hubs]
    assert counts == sorted(counts, reverse=True)
    for x, y in zip(hubs, hubs[1:]):
        if x["edge_count"] == y["edge_count"]:
            assert x["updated_at"] > y["updated_at"]
    snap = engine(store, searcher).snapshot(variables())
    listed = [int(part.split(":")[1]) for part in snap.background.splitlines()[1:]]
    assert listed == expected and len(listed) == 10
    assert "Remembered answer" not in snap.background and memory["id"] not in snap.node_ids
    # workers get no background; the setting turns it off for orchestrators too
    assert engine(store, searcher, "worker").snapshot(variables()).background == ""
    assert engine(store, searcher, background_enabled=False).snapshot(variables()).background == ""


def test_background_is_snapshotted_per_conversation(store, searcher, anth):
    a = store.add_node("First hub")
    b = store.add_node("Second")
    store.add_edge(a["id"], b["id"], "linked")
    chat = new_chat(store, anthropic_provider(anth), searcher)
    before = chat.request("hi").snapshot.background
    c = store.add_node("New big hub")
    for n in (a, b):
        store.add_edge(c["id"], n["id"], "linked")
    assert chat.request("hi").snapshot.background == before  # the running chat keeps its prefix
    assert "New big hub" in new_chat(store, anthropic_provider(anth), searcher).snapshot.background


# ------------------------------------------------------------------------------------------------
# template variables


def test_template_variables_resolve_at_conversation_start(store, searcher, anth, monkeypatch):
    custom = profiles.with_overrides(profiles.BUILT_IN["orchestrator"],
                                   instructions="Helping ${user_name} in chat ${chat_id} as ${agent} on ${model}.")
    monkeypatch.setitem(profiles.BUILT_IN, "orchestrator", custom)
    cfg = config()
    cfg.user_name = "Ada"
    chat = new_chat(store, anthropic_provider(anth), searcher, cfg=cfg)
    assert f"Helping Ada in chat {chat.id} as orchestrator on {SONNET}." in chat.snapshot.system
    assert "${" not in chat.snapshot.system
    # resolved once: a later change of the setting does not alter the running conversation's prefix
    cfg.user_name = "Bob"
    from core.chat.conversation import Chat

    again = Chat(store, cfg, anthropic_provider(anth), chat_id=chat.id, searcher=searcher)
    assert "Helping Ada" in again.request("hi").snapshot.system


@pytest.mark.parametrize("var", ["date", "time", "now", "today", "datetime", "timestamp"])
def test_date_and_time_variables_are_refused_with_an_explanation(var):
    with pytest.raises(InvalidInput) as e:
        resolve_instructions("Today is ${%s}." % var, variables())
    msg = str(e.value)
    assert "${%s}" % var in msg and "cached prefix" in msg and "current date and time are added" in msg


def test_unknown_variable_is_refused_naming_the_known_ones():
    with pytest.raises(InvalidInput, match=r"\$\{nope\}.*known: \$\{agent\}, \$\{chat_id\}, \$\{model\}, \$\{user_name\}"):
        resolve_instructions("Hi ${nope}", variables())
    assert resolve_instructions("Plain $5 and {x}", variables()) == "Plain $5 and {x}"


def test_chat_with_a_time_variable_is_not_created(store, searcher, anth, monkeypatch):
    bad = profiles.with_overrides(profiles.BUILT_IN["orchestrator"], instructions="It is ${current_time} now.")
    monkeypatch.setitem(profiles.BUILT_IN, "orchestrator", bad)
    with pytest.raises(InvalidInput, match="current_time"):
        new_chat(store, anthropic_provider(anth), searcher)
    assert store.db.execute("SELECT COUNT(*) FROM chats").fetchone()[0] == 0
    assert anth.requests == []


# ------------------------------------------------------------------------------------------------
# privacy in the engine


def test_never_send_hides_nodes_from_every_block(store, indexer, searcher):
    secret = store.add_node("Hidden journal", "The alpha project budget is secret. " * 5, dimensions=["Private"],
                            metadata={"core": True})
    other = store.add_node("Alpha project", "The alpha project budget is public. " * 5)
    store.add_edge(secret["id"], other["id"], "journal mentions alpha")
    indexer.run()
    message = "alpha project budget"
    shown = engine(store, searcher)
    shown.set_focus(Focus((secret["id"], other["id"]), secret["id"]))
    hidden = engine(store, searcher, policy=SendPolicy(frozenset({"private"})))
    hidden.set_focus(Focus((secret["id"], other["id"]), secret["id"]))
    s1, s2 = shown.snapshot(variables()), hidden.snapshot(variables())
    x1, x2 = shown.suffix(message, now=FIXED_NOW), hidden.suffix(message, now=FIXED_NOW)
    assert "Hidden journal" in s1.core_notes + s1.background + x1.focus + x1.retrieved
    everything = json.dumps([s2.__dict__, x2.text])
    assert "Hidden journal" not in everything and "secret" not in everything
    assert secret["id"] not in s2.node_ids + x2.node_ids
    assert other["id"] in x2.node_ids
    assert "Primary" not in x2.focus and "Also open" in x2.focus  # the hidden tab is simply left out


def test_agent_read_scope_limits_retrieval(store, indexer, searcher):
    store.add_node("Work alpha", "The alpha project ships on Friday. " * 4, dimensions=["work"])
    store.add_node("Home alpha", "The alpha project of the garden ships soon. " * 4, dimensions=["home"])
    indexer.run()
    scoped = Agent("scoped", "worker", "", "Do it.", (), read_scope=("work",))
    eng = ContextEngine(store, searcher, scoped)
    passages = eng.retrieve("alpha project ships")
    assert passages and {p.title for p in passages} == {"Work alpha"}
    assert ContextEngine(store, searcher, profiles.with_overrides(scoped, auto_read=False)).retrieve("alpha") == []


# ------------------------------------------------------------------------------------------------
# junk control (issue 6: calibrated on SciFact; bench/retrieval.py)


def _hit(score: float) -> dict:
    return {"score": score}


def test_cut_keeps_passages_above_the_floor_and_near_the_best_score():
    from core.chat.context import cut

    scored = [(0.62, _hit(1.0)), (0.30, _hit(0.95)), (0.55, _hit(0.85)), (0.60, _hit(0.5))]
    kept = cut(scored, min_cosine=0.35, relative=0.8, max_passages=6)
    assert [h["score"] for _, h in kept] == [1.0, 0.85]  # 0.30 is under the floor, 0.5 < 0.8 x 1.0
    assert cut(scored, min_cosine=0.35, relative=0.0, max_passages=1) == scored[:1]
    assert cut([], 0.35, 0.8, 6) == []
    assert cut([(0.2, _hit(1.0))]) == []  # the default floor


def test_an_off_topic_message_gets_no_passages_and_an_on_topic_one_does(store, indexer, searcher):
    notes = {
        "Sourdough": "Feed the sourdough starter flour and water daily; bake when it doubles in a warm kitchen.",
        "Bike chain": "Replace a worn bicycle chain with a chain tool, then lubricate the new chain.",
        "Tax checklist": "Collect payslips, interest statements and receipts before the filing deadline.",
        "Tides": "The moon's pull makes the sea rise and fall twice a day; check the tide table first.",
    }
    for title, text in notes.items():
        store.add_node(title, text * 3)
    indexer.run()
    eng = engine(store, searcher)
    assert [p.title for p in eng.retrieve("when is my starter ready to bake bread?")][:1] == ["Sourdough"]
    for message in ("Who painted the ceiling of the Sistine Chapel?", "How do I center a div with CSS?",
                    "What is the offside rule in football?"):
        assert eng.retrieve(message) == [], message


def test_retired_nodes_are_neither_hubs_nor_retrieved_but_still_open_in_focus(store, indexer, searcher):
    """A note a distilled chat retired (core.assist.distil: the `retired` dimension) stays in the graph but
    is not offered to the model as current knowledge: no hub, no retrieved passage; open in Focus it
    is still described, with its dimension saying it is retired."""
    old = store.add_node("Espresso ratio", "The espresso ratio is one to two, brewed in thirty seconds. " * 3,
                         dimensions=["coffee", "retired"])
    new = store.add_node("Espresso ratio today", "The espresso ratio is one to two and a half now. " * 3,
                         dimensions=["coffee"])
    others = [store.add_node(f"Bean {i}") for i in range(3)]
    for o in others:
        store.add_edge(old["id"], o["id"], "the old ratio used this bean")
    store.add_edge(new["id"], others[0]["id"], "the new ratio uses this bean")
    indexer.run()
    eng = engine(store, searcher)
    snap = eng.snapshot(variables())
    assert old["id"] not in snap.node_ids and new["id"] in snap.node_ids
    titles = {p.title for p in eng.retrieve("what is the espresso ratio")}
    assert "Espresso ratio today" in titles and "Espresso ratio" not in titles
    eng.set_focus(Focus(primary=old["id"], open=(old["id"],)))
    assert "retired" in eng.suffix("hello").focus
