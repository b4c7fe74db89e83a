"""Distilling a chat into notes (core/assist/distil.py, `cairn distil`, the review screen): a scripted
conversation against the fake Anthropic server, then a scripted distil reply; only what is accepted
is written, with provenance; retirements mark, never delete."""

from __future__ import annotations

import json

import pytest

from chat_support import (  # noqa: F401  (fixtures)
    KEY,
    _no_proxies,
    anth,
    anthropic_provider,
    config,
    new_chat,
    oai,
    openai_provider,
    searcher,
    send,
)
from core.assist import distil
from core.graph import retirement
from core.assist.distil import DistilError, Proposal, StaleProposal
from core.errors import InvalidInput, NotFound
from fakes import http_error, text, tool_call
from tui_support import wait_for


def node_count(store) -> int:
    return store.db.execute("SELECT COUNT(*) FROM nodes").fetchone()[0]


def snapshot_nodes(store) -> list[tuple]:
    return [tuple(r) for r in store.db.execute(
        "SELECT id, title, description, source, metadata, updated_at FROM nodes ORDER BY id").fetchall()]


@pytest.fixture
def graph(store, indexer):
    compost = store.add_node("Compost ratio", "Mix two parts browns to one part greens.", dimensions=["garden"])
    oven = store.add_node("Pizza oven plan", "Build a brick pizza oven in the back garden this summer.",
                          dimensions=["projects"])
    bees = store.add_node("Bee hotel", "A bee hotel faces south-east, a metre off the ground.", dimensions=["garden"])
    indexer.run()
    return {"compost": compost["id"], "oven": oven["id"], "bees": bees["id"]}


@pytest.fixture
def conversation(store, searcher, anth, graph):
    """A two-turn chat: the compost ratio is corrected, the pizza oven dropped for a smoker."""
    chat = new_chat(store, anthropic_provider(anth), searcher)
    anth.script.add(text(f"Noted: your ratio used to be 2:1 [NODE:{graph['compost']}]; now it is 3:1."))
    send(chat, "My compost ratio is now three parts browns to one part greens.")
    anth.script.add(tool_call("getNodesById", {"ids": [graph["oven"]]}))
    anth.script.add(text("Understood: no pizza oven; a cold smoker instead, built from an old filing cabinet."))
    send(chat, "We dropped the pizza oven. We're building a cold smoker from an old filing cabinet instead.")
    msgs = chat.messages()
    users = [m["id"] for m in msgs if m["role"] == "user" and m["text"]]
    replies = [m["id"] for m in msgs if m["role"] == "assistant" and m["text"]]
    return {"chat": chat, "users": users, "replies": replies, **graph}


def scripted_reply(c, *, extra: list | None = None) -> str:
    proposals = [
        {"kind": "addition", "title": "Cold smoker", "description": "Built from an old filing cabinet",
         "source": "A cold smoker made from an old filing cabinet.", "dimensions": ["projects", "food"],
         "source_message_id": c["users"][1]},
        {"kind": "update", "node_id": c["compost"], "source": "Mix three parts browns to one part greens.",
         "reason": "the ratio changed", "source_message_id": c["users"][0]},
        {"kind": "retirement", "node_id": c["oven"], "reason": "Dropped in favour of the cold smoker.",
         "source_message_id": c["users"][1]},
    ]
    return json.dumps({"proposals": proposals + (extra or [])})




def bad_items(c) -> list:
    return [
        {"kind": "update", "node_id": 9999, "title": "Ghost", "source_message_id": c["users"][0]},
        {"kind": "addition", "title": "No source", "source": "x"},
        {"kind": "addition", "title": "Other chat", "source": "x", "source_message_id": 777},
        {"kind": "addition", "title": "   ", "source": "x", "source_message_id": c["users"][0]},
        {"kind": "retirement", "node_id": c["bees"], "source_message_id": c["users"][0]},  # no reason
        {"kind": "merge", "node_id": c["bees"], "source_message_id": c["users"][0]},
        "just a string",
    ]


def run_propose(store, c, anth, reply: str, **kw):
    anth.script.add(text(reply))
    return distil.propose(store, c["chat"].id, anthropic_provider(anth), never_send=kw.pop("never_send", ()),
                          searcher=kw.pop("searcher", None) or c["chat"].searcher, **kw)


# -- propose ---------------------------------------------------------------------------------------
def test_propose_parses_each_kind_with_its_source_message_and_drops_bad_items(store, conversation, anth):
    c = conversation
    before = snapshot_nodes(store)
    result = run_propose(store, c, anth, scripted_reply(c, extra=bad_items(c)))
    assert snapshot_nodes(store) == before  # proposing writes nothing to the graph
    kinds = [p.kind for p in result.proposals]
    assert kinds == ["addition", "update", "retirement"]
    add, upd, ret = result.proposals
    assert add.title == "Cold smoker" and add.dimensions == ["projects", "food"]
    assert add.source_message_id == c["users"][1] and "cold smoker" in add.excerpt
    assert upd.node_id == c["compost"] and upd.changes == {"source": "Mix three parts browns to one part greens."}
    assert upd.old == {"source": "Mix two parts browns to one part greens."}
    assert upd.source_message_id == c["users"][0] and upd.excerpt.startswith("My compost ratio is now")
    assert "-Mix two parts browns to one part greens." in upd.diff.splitlines()
    assert "+Mix three parts browns to one part greens." in upd.diff.splitlines()
    assert upd.diff.splitlines()[0] == f"--- node {c['compost']} source (now)"
    assert ret.node_id == c["oven"] and ret.reason == "Dropped in favour of the cold smoker."
    # every bad item is named in a warning, none is proposed
    w = "\n".join(result.warnings)
    assert "Item 4 of the model's reply (update) was dropped: node 9999 was not among the notes sent" in w
    assert "Item 5 of the model's reply (addition) was dropped: it has no source_message_id" in w
    assert "Item 6 of the model's reply (addition) was dropped: message 777 is not in this chat" in w
    assert "Item 7 of the model's reply (addition) was dropped: its title is empty" in w
    assert "Item 8 of the model's reply (retirement) was dropped: it does not say what superseded the node" in w
    assert "Item 9 of the model's reply (merge) was dropped: its kind 'merge' is not one of" in w
    assert "Item 10 of the model's reply was dropped: it is not a JSON object" in w
    assert len(result.warnings) == 7


def test_the_request_holds_the_conversation_with_ids_and_the_touched_nodes(store, conversation, anth):
    c = conversation
    result = run_propose(store, c, anth, '{"proposals": []}')
    assert result.proposals == [] and result.warnings == []
    body = anth.last.body
    assert "tools" not in body and body["max_tokens"] == distil.MAX_REPLY_TOKENS
    assert body["system"][0]["text"].startswith("You turn a conversation into durable notes")
    sent = body["messages"][-1]["content"][0]["text"]
    assert f'<message id="{c["users"][0]}" role="user">\nMy compost ratio is now' in sent
    assert f'<message id="{c["replies"][-1]}" role="assistant">\nUnderstood: no pizza oven' in sent
    assert '[called getNodesById {"ids": [' in sent  # tool calls summarised
    assert '"nodes":' not in sent  # tool results are not repeated in the transcript
    # the cited node (citation), the read one (tool input) and the search candidate are offered as targets
    for key in ("compost", "oven", "bees"):
        assert f'<node id="{c[key]}"' in sent
    assert set(result.sent_node_ids) >= {c["compost"], c["oven"]}
    logged = store.db.execute("SELECT provider, node_ids FROM sent_log WHERE chat_id = ? AND message_id IS NULL",
                              (c["chat"].id,)).fetchall()
    assert len(logged) == 1 and logged[0]["provider"] == "anthropic"
    assert json.loads(logged[0]["node_ids"]) == result.sent_node_ids


@pytest.mark.parametrize("reply, expect", [
    ("Sure! Here are my proposals: additions...", "not valid JSON (Expecting value at line 1 column 1)"),
    ('{"proposals": [{"kind": "addition", "title": "cut off', "not valid JSON (Unterminated string"),
    ('{"additions": []}', 'JSON but not {"proposals": [...]}'),
    ('[{"kind": "addition"}]', 'JSON but not {"proposals": [...]}'),
    ("   ", "reply was empty"),
], ids=["prose", "cut", "wrong-key", "bare-list", "empty"])
def test_a_malformed_reply_is_a_clear_error_and_nothing_is_proposed(store, conversation, anth, reply, expect):
    before = snapshot_nodes(store)
    with pytest.raises(DistilError) as e:
        run_propose(store, conversation, anth, reply)
    assert expect in str(e.value) and "nothing was proposed" in str(e.value)
    assert snapshot_nodes(store) == before
    assert store.meta(f"distil.pending.{conversation['chat'].id}") is None


def test_a_fenced_json_reply_is_accepted(store, conversation, anth):
    result = run_propose(store, conversation, anth, "```json\n" + scripted_reply(conversation) + "\n```")
    assert [p.kind for p in result.proposals] == ["addition", "update", "retirement"]


def test_the_offline_provider_cannot_distil(store, conversation):
    from core.providers.offline import OfflineProvider

    with pytest.raises(DistilError) as e:
        distil.propose(store, conversation["chat"].id, OfflineProvider(), never_send=())
    assert "needs a model provider" in str(e.value) and "cairn config set chat.provider" in str(e.value)
    assert "ANTHROPIC_API_KEY" in str(e.value)
    with pytest.raises(NotFound, match="There is no chat 4242."):  # a bad id is reported first
        distil.propose(store, 4242, OfflineProvider(), never_send=())


def test_provider_failure_and_unknown_chat_are_clear_errors(store, conversation, anth, monkeypatch):
    from core.providers import anthropic_provider as ap

    monkeypatch.setattr(ap, "MAX_RETRIES", 0)
    anth.script.add(http_error(500))
    with pytest.raises(DistilError, match=r"The model could not distil chat \d+: .*500"):
        distil.propose(store, conversation["chat"].id, anthropic_provider(anth), never_send=(),
                       searcher=conversation["chat"].searcher)
    with pytest.raises(NotFound, match="There is no chat 4242."):
        distil.propose(store, 4242, anthropic_provider(anth), never_send=())


def test_a_reply_cut_at_the_token_limit_says_so(store, conversation, anth):
    from fakes import stop_reason

    anth.script.add(text('{"proposals": [{"kind": "addition", "ti'), stop_reason("max_tokens"))
    with pytest.raises(DistilError, match="cut at its token limit"):
        distil.propose(store, conversation["chat"].id, anthropic_provider(anth), never_send=(),
                       searcher=conversation["chat"].searcher)


def test_a_long_chat_is_bounded_and_says_what_was_left_out(store, conversation, anth, monkeypatch):
    c = conversation
    monkeypatch.setattr(distil, "MAX_TRANSCRIPT_CHARS", 200)
    reply = json.dumps({"proposals": [
        {"kind": "addition", "title": "From the start", "source": "x", "source_message_id": c["users"][0]}]})
    result = run_propose(store, c, anth, reply)
    sent = anth.last.body["messages"][-1]["content"][0]["text"]
    assert "My compost ratio" not in sent and "Understood: no pizza oven" in sent
    assert any("oldest messages" in w and "were left out" in w and "200 characters" in w for w in result.warnings)
    assert any(f"message {c['users'][0]} was not part of the conversation sent" in w for w in result.warnings)
    assert result.proposals == []


def test_a_newest_message_longer_than_the_bound_keeps_its_end(store, conversation, anth, monkeypatch):
    c = conversation
    monkeypatch.setattr(distil, "MAX_TRANSCRIPT_CHARS", 30)
    result = run_propose(store, c, anth, '{"proposals": []}')
    sent = anth.last.body["messages"][-1]["content"][0]["text"]
    last = c["replies"][-1]
    assert f'<message id="{last}" role="assistant">\n[… start left out]\n' in sent
    assert "from an old filing cabinet." in sent and "Understood: no pizza oven" not in sent
    assert any(f"Message {last} was cut: its first" in w for w in result.warnings)
    assert any("were left out" in w for w in result.warnings)


def test_an_update_to_a_truncated_node_text_is_dropped(store, conversation, anth, monkeypatch):
    c = conversation
    monkeypatch.setattr(distil, "MAX_NODE_TEXT_CHARS", 10)
    reply = json.dumps({"proposals": [
        {"kind": "update", "node_id": c["compost"], "source": "short", "source_message_id": c["users"][0]},
        {"kind": "update", "node_id": c["oven"], "title": "Smoker plan", "source_message_id": c["users"][1]}]})
    result = run_propose(store, c, anth, reply)
    assert [(p.node_id, p.changes) for p in result.proposals] == [(c["oven"], {"title": "Smoker plan"})]
    assert any("too long to send whole" in w for w in result.warnings)
    assert "do not propose a new source for this node" in anth.last.body["messages"][-1]["content"][0]["text"]


# -- apply -----------------------------------------------------------------------------------------
def test_apply_writes_only_the_accepted_proposals_with_provenance(store, conversation, anth):
    c = conversation
    result = run_propose(store, c, anth, scripted_reply(c))
    add, upd, ret = result.proposals
    count = node_count(store)
    compost_before = store.get_node(c["compost"])
    applied = distil.apply(store, c["chat"].id, [add, ret])  # the update is rejected
    assert node_count(store) == count + 1  # one addition; the retirement deleted nothing
    assert applied.updated == [] and applied.retired == [c["oven"]] and len(applied.created) == 1
    new = store.get_node(applied.created[0])
    assert new["title"] == "Cold smoker" and new["source"] == "A cold smoker made from an old filing cabinet."
    assert new["description"] == "Built from an old filing cabinet" and new["dimensions"] == ["projects", "food"]
    assert new["metadata"]["provenance"] == {"chat_id": c["chat"].id, "message_id": c["users"][1], "via": "distil"}
    assert new["chunk_status"] == "pending"  # the indexer embeds it like any other note
    assert store.get_node(c["compost"]) == compost_before  # rejected: untouched
    oven = store.get_node(c["oven"])
    assert oven["source"] == "Build a brick pizza oven in the back garden this summer."  # kept, findable
    assert oven["dimensions"] == ["projects", "retired"]
    retired = oven["metadata"]["retired"]
    assert retired["reason"] == "Dropped in favour of the cold smoker." and retired["via"] == "distil"
    assert (retired["chat_id"], retired["message_id"]) == (c["chat"].id, c["users"][1]) and retired["at"]
    assert [n["id"] for n in store.nodes_by_dimension("retired")] == [c["oven"]]


def test_an_accepted_update_changes_the_node_and_logs_where_it_came_from(store, conversation, anth):
    c = conversation
    upd = run_propose(store, c, anth, scripted_reply(c)).proposals[1]
    applied = distil.apply(store, c["chat"].id, [upd])
    assert applied.updated == [c["compost"]] and applied.created == [] and applied.retired == []
    node = store.get_node(c["compost"])
    assert node["source"] == "Mix three parts browns to one part greens." and node["title"] == "Compost ratio"
    assert node["dimensions"] == ["garden"] and node["chunk_status"] == "pending"
    (entry,) = node["metadata"]["provenance_log"]
    assert entry["kind"] == "update" and entry["via"] == "distil" and entry["fields"] == ["source"]
    assert (entry["chat_id"], entry["message_id"]) == (c["chat"].id, c["users"][0])
    assert entry["previous"] == {"source": "Mix two parts browns to one part greens."}


def test_a_stale_update_is_refused_and_nothing_is_written(store, conversation, anth):
    c = conversation
    add, upd, ret = run_propose(store, c, anth, scripted_reply(c)).proposals
    store.update_node(c["compost"], source="Edited by hand meanwhile.")
    before = snapshot_nodes(store)
    with pytest.raises(StaleProposal) as e:
        distil.apply(store, c["chat"].id, [add, upd, ret])
    assert f"Node {c['compost']} ('Compost ratio') changed after the update was proposed" in str(e.value)
    assert "nothing was written" in str(e.value)
    assert snapshot_nodes(store) == before  # not the addition, not the retirement either
    assert store.get_node(c["compost"])["source"] == "Edited by hand meanwhile."


def test_a_target_deleted_meanwhile_refuses_the_whole_apply(store, conversation, anth):
    c = conversation
    add, upd, ret = run_propose(store, c, anth, scripted_reply(c)).proposals
    store.delete_node(c["oven"])
    count = node_count(store)
    with pytest.raises(NotFound, match=f"Node {c['oven']} no longer exists; nothing was written."):
        distil.apply(store, c["chat"].id, [add, upd, ret])
    assert node_count(store) == count
    assert store.get_node(c["compost"])["source"] == "Mix two parts browns to one part greens."


def test_a_failure_midway_rolls_back_every_change(store, conversation, anth):
    c = conversation
    add, upd, ret = run_propose(store, c, anth, scripted_reply(c)).proposals
    bad = Proposal("addition", add.source_message_id, title="Bad", source="nul \x00 byte")
    before = snapshot_nodes(store)
    with pytest.raises(InvalidInput, match="NUL byte"):
        distil.apply(store, c["chat"].id, [add, upd, ret, bad])
    assert snapshot_nodes(store) == before


def test_apply_refuses_a_message_from_another_chat(store, conversation, anth):
    c = conversation
    add = run_propose(store, c, anth, scripted_reply(c)).proposals[0]
    other = new_chat(store, anthropic_provider(anth), c["chat"].searcher)
    with pytest.raises(InvalidInput, match=f"Message {add.source_message_id} is not in chat {other.id}"):
        distil.apply(store, other.id, [add])


def test_editing_a_proposal_remakes_the_diff_and_unretire_restores(store, conversation, anth):
    c = conversation
    add, upd, ret = run_propose(store, c, anth, scripted_reply(c)).proposals
    upd2 = upd.edited(text="Mix four parts browns to one part greens.")
    assert "+Mix four parts browns to one part greens." in upd2.diff.splitlines() and upd.diff != upd2.diff
    with pytest.raises(InvalidInput, match="leaves the node as it is"):
        upd.edited(text="Mix two parts browns to one part greens.")
    add2 = add.edited(title="Filing-cabinet smoker", text="Edited text.")
    with pytest.raises(InvalidInput, match="title must not be empty"):
        add.edited(title="  ")
    with pytest.raises(InvalidInput, match="no text to edit"):
        ret.edited(text="x")
    applied = distil.apply(store, c["chat"].id, [add2, upd2, ret])
    assert store.get_node(applied.created[0])["title"] == "Filing-cabinet smoker"
    assert store.get_node(c["compost"])["source"] == "Mix four parts browns to one part greens."
    node = retirement.unretire(store, c["oven"])
    assert node["dimensions"] == ["projects"] and "retired" not in node["metadata"]
    assert [e["kind"] for e in node["metadata"]["provenance_log"]] == ["retirement", "unretired"]
    with pytest.raises(InvalidInput, match="is not retired"):
        retirement.unretire(store, c["oven"])


def test_an_already_retired_node_cannot_be_retired_again(store, conversation, anth):
    c = conversation
    ret = run_propose(store, c, anth, scripted_reply(c)).proposals[2]
    distil.apply(store, c["chat"].id, [ret])
    result = run_propose(store, c, anth, scripted_reply(c))
    assert [p.kind for p in result.proposals] == ["addition", "update"]
    assert any(f"node {c['oven']} is already retired" in w for w in result.warnings)


# -- privacy ---------------------------------------------------------------------------------------
def test_never_send_nodes_are_not_sent_and_cannot_be_targets(store, searcher, anth, indexer):
    secret = store.add_node("Diary of Zanzibar", "The secret figure is 91731.", dimensions=["private"])
    public = store.add_node("Trip planning", "Trip budget planning for the summer.", dimensions=["travel"])
    indexer.run()
    cfg = config()
    cfg.privacy.never_send = ["private"]
    remote = anthropic_provider(anth, remote=True)
    chat = new_chat(store, remote, searcher, cfg=cfg)
    anth.script.add(tool_call("getNodesById", {"ids": [secret["id"], public["id"]]}))
    anth.script.add(text("The trip budget is being planned."))
    send(chat, "What do my notes say about the trip budget and the secret figure?")
    user_id = chat.messages()[0]["id"]
    reply = json.dumps({"proposals": [
        {"kind": "retirement", "node_id": secret["id"], "reason": "x", "source_message_id": user_id},
        {"kind": "update", "node_id": public["id"], "title": "Trip budget", "source_message_id": user_id}]})
    anth.script.add(text(reply))
    result = distil.propose(store, chat.id, remote, never_send=cfg.privacy.never_send, searcher=searcher)
    sent = anth.last.body["messages"][-1]["content"][0]["text"]
    assert "91731" not in sent and "Zanzibar" not in sent and f'<node id="{secret["id"]}"' not in sent
    assert f'<node id="{public["id"]}"' in sent
    assert [(p.kind, p.node_id) for p in result.proposals] == [("update", public["id"])]
    assert any(f"node {secret['id']} was not among the notes sent" in w for w in result.warnings)
    assert any("1 private note was not sent (privacy.never_send)" in w for w in result.warnings)
    assert secret["id"] not in result.sent_node_ids


def test_replies_written_after_seeing_a_private_note_stay_local(store, searcher, anth, indexer):
    """A chat held with a local model saw a private note; distilling it remotely leaves those replies out."""
    secret = store.add_node("Diary of Zanzibar", "The secret figure is 91731.", dimensions=["private"])
    indexer.run()
    cfg = config()
    cfg.privacy.never_send = ["private"]
    local = anthropic_provider(anth)  # loopback: local, so never_send does not apply to the chat itself
    chat = new_chat(store, local, searcher, cfg=cfg)
    anth.script.add(tool_call("getNodesById", {"ids": [secret["id"]]}))
    anth.script.add(text("Your secret figure is 91731."))
    send(chat, "What is the secret figure in my Zanzibar diary?")
    anth.script.add(text("A smoker sounds fun."))
    send(chat, "Let's build a smoker.")
    anth.script.add(text('{"proposals": []}'))
    result = distil.propose(store, chat.id, anthropic_provider(anth, remote=True), never_send=cfg.privacy.never_send,
                            searcher=searcher)
    sent = anth.last.body["messages"][-1]["content"][0]["text"]
    assert "91731" not in sent and "Zanzibar diary?" in sent  # the user's own words are kept
    assert "A smoker sounds fun." in sent
    assert any("2 assistant messages were left out" in w and "private notes" in w for w in result.warnings)
    # the same chat distilled with the local model sends everything
    anth.script.add(text('{"proposals": []}'))
    distil.propose(store, chat.id, anthropic_provider(anth), never_send=cfg.privacy.never_send, searcher=searcher)
    assert "91731" in anth.last.body["messages"][-1]["content"][0]["text"]


def test_distil_through_the_openai_provider(store, searcher, oai, graph):
    chat = new_chat(store, openai_provider(oai), searcher)
    oai.script.add(text("Three to one it is."))
    send(chat, "My compost ratio is now three parts browns to one part greens.")
    user_id = chat.messages()[0]["id"]
    oai.script.add(text(json.dumps({"proposals": [
        {"kind": "update", "node_id": graph["compost"], "description": "3:1 since the chat",
         "source_message_id": user_id}]})))
    result = distil.propose(store, chat.id, openai_provider(oai), never_send=(), searcher=searcher)
    (p,) = result.proposals
    assert p.changes == {"description": "3:1 since the chat"} and p.old == {"description": ""}
    assert p.diff.splitlines()[-1] == "+3:1 since the chat"
    sent = json.dumps(oai.last.body["messages"])
    assert f'<message id=\\"{user_id}\\" role=\\"user\\">' in sent


# -- pending proposals -----------------------------------------------------------------------------
def test_pending_proposals_round_trip(store, conversation, anth):
    c = conversation
    result = run_propose(store, c, anth, scripted_reply(c))
    distil.save_pending(store, result)
    again = distil.load_pending(store, c["chat"].id)
    assert again.proposals == result.proposals and again.chat_id == c["chat"].id
    distil.clear_pending(store, c["chat"].id)
    assert distil.load_pending(store, c["chat"].id) is None


# -- the CLI ---------------------------------------------------------------------------------------
@pytest.fixture
def cli_env(monkeypatch, anth, embedder):
    import core.index.embedder

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)  # the CLI's searcher: the session's embedder
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anth.base_url)


class _Stdin:
    """Standard input that is (or is not) a terminal, with the lines a person would type."""

    def __init__(self, text: str, tty: bool):
        import io

        self._io = io.StringIO(text)
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty

    def readline(self, *a):
        return self._io.readline(*a)

    def read(self, *a):
        return self._io.read(*a)


def cairn(capsys, db_path, *args) -> tuple[int, str, str]:
    from tui.cli.main import main

    rc = main(["distil", *map(str, args), "--db", str(db_path)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_prints_numbered_proposals_and_applies_the_accepted_ones(store, conversation, anth, cli_env, capsys,
                                                                     db_path, monkeypatch):
    c = conversation
    chat_id = c["chat"].id
    anth.script.add(text(scripted_reply(c, extra=bad_items(c)[:1])))
    rc, out, err = cairn(capsys, db_path, chat_id, "--provider", "anthropic")
    assert rc == 0, err
    assert "  1. + Cold smoker  #projects #food" in out
    assert f"  2. ~ node {c['compost']} Compost ratio — the ratio changed" in out
    assert "     -Mix two parts browns to one part greens." in out
    assert "     +Mix three parts browns to one part greens." in out
    assert f"  3. × node {c['oven']} Pizza oven plan" in out and "superseded: Dropped in favour" in out
    assert f"from message {c['users'][1]}: “We dropped the pizza oven." in out
    assert "warning: Item 4 of the model's reply (update) was dropped: node 9999" in out
    assert f"cairn distil {chat_id} --accept 1,3" in out
    count = node_count(store)

    # not at a terminal, without --yes: refused, nothing written
    monkeypatch.setattr("sys.stdin", _Stdin("", tty=False))
    rc, out, err = cairn(capsys, db_path, chat_id, "--accept", "1,3")
    assert rc == 1 and "Pass --yes to confirm when not at a terminal" in err
    assert node_count(store) == count and "retired" not in store.get_node(c["oven"])["dimensions"]
    # at a terminal, answering no: nothing written
    monkeypatch.setattr("sys.stdin", _Stdin("n\n", tty=True))
    rc, out, err = cairn(capsys, db_path, chat_id, "--accept", "1,3")
    assert rc == 1 and "Cancelled; nothing was changed." in err and node_count(store) == count
    # bad numbers
    for bad, expect in (("9", "There is no proposal 9: the last distil of chat"), ("1,x", "'x' is not one"),
                        ("0", "'0' is not one")):
        rc, out, err = cairn(capsys, db_path, chat_id, "--accept", bad, "--yes")
        assert rc == 1 and expect in err, err
    assert len(anth.requests) == 4  # 3 for the chat, 1 to distil: --accept never asks the model again

    rc, out, err = cairn(capsys, db_path, chat_id, "--accept", "1,3", "--yes", "--json")
    assert rc == 0, err
    applied = json.loads(out)["applied"]
    assert len(applied["created"]) == 1 and applied["updated"] == [] and applied["retired"] == [c["oven"]]
    assert node_count(store) == count + 1
    assert store.get_node(c["compost"])["source"] == "Mix two parts browns to one part greens."
    assert store.get_node(applied["created"][0])["metadata"]["provenance"]["message_id"] == c["users"][1]
    rc, out, err = cairn(capsys, db_path, chat_id, "--accept", "2", "--yes")
    assert rc == 1 and f"No proposals are waiting for chat {chat_id}" in err


def test_cli_json_and_a_terminal_yes(store, conversation, anth, cli_env, capsys, db_path, monkeypatch):
    c = conversation
    anth.script.add(text(scripted_reply(c)))
    rc, out, err = cairn(capsys, db_path, c["chat"].id, "--provider", "anthropic", "--json")
    assert rc == 0, err
    data = json.loads(out)
    assert [(p["n"], p["kind"]) for p in data["proposals"]] == [(1, "addition"), (2, "update"), (3, "retirement")]
    assert data["proposals"][1]["diff"].startswith(f"--- node {c['compost']} source (now)")
    assert "source" not in data["proposals"][2] and data["warnings"] == []
    assert data["usage"]["input"] > 0 and data["usage"]["output"] > 0  # the fake server's reported usage
    monkeypatch.setattr("sys.stdin", _Stdin("y\n", tty=True))
    rc, out, err = cairn(capsys, db_path, c["chat"].id, "--accept", "2")
    assert rc == 0, err
    assert "Apply 1 proposal to your notes? [y/N]" in out and "Applied: 1 updated." in out
    assert store.get_node(c["compost"])["source"] == "Mix three parts browns to one part greens."


def test_cli_offline_says_a_provider_is_needed(store, conversation, capsys, db_path):
    rc, out, err = cairn(capsys, db_path, conversation["chat"].id, "--provider", "offline")
    assert rc == 1 and "Distilling a chat needs a model provider" in err and "--provider" in err


def test_cli_distil_as_a_real_process(store, conversation, anth, cairn_cmd, tmp_path):
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if "PROXY" not in k.upper()}
    env.update(ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=anth.base_url, CAIRN_HOME=str(tmp_path / "home"),
               HOME=str(tmp_path))
    anth.script.add(text(scripted_reply(conversation)))
    base = [*cairn_cmd, "distil", str(conversation["chat"].id), "--db", str(store.path)]
    proc = subprocess.run([*base, "--provider", "anthropic"], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=120, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "Additions (new nodes)" in proc.stdout and "Retirements (marked retired, not deleted)" in proc.stdout
    proc = subprocess.run([*base, "--accept", "3", "--yes"], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=120, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "Applied: 1 retired." in proc.stdout
    assert "retired" in store.get_node(conversation["oven"])["dimensions"]


# -- the review screen -----------------------------------------------------------------------------
SIZE = (140, 44)



def review_app(db_path, anth):
    from tui.app import CairnApp

    class App(CairnApp):
        def watch_database(self) -> None:
            """Not under test: the watcher refreshes panes on every write and races a short test."""

    return App(db_path, first_run_prompt=False)


async def open_review(pilot, app, chat_id, anth):
    from tui.screens.distil_review import DistilReviewScreen
    from tui.widgets.chat_pane import ChatPane

    pane, _viewer = await app.right_panes()  # mounted after the first frame
    assert isinstance(pane, ChatPane)
    pane.make_provider = lambda cfg: anthropic_provider(anth)
    pane.load_chat(chat_id)
    await wait_for(pilot, lambda: pane.chat_id == chat_id, what="the chat to load")
    await pilot.press("ctrl+l")
    await pilot.press("ctrl+t")
    await wait_for(pilot, lambda: isinstance(app.screen, DistilReviewScreen), what="the review screen")
    return app.screen


def plain(widget) -> str:
    from rich.text import Text as RichText

    content = widget.content
    return content.plain if isinstance(content, RichText) else str(content)


def status(screen) -> str:
    return plain(screen.query_one("#distil-status"))


async def test_review_screen_applies_only_the_accepted_proposals(store, conversation, anth, embedder, monkeypatch,
                                                                 db_path):
    import core.index.embedder
    from fakes import slow

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)
    c = conversation
    anth.script.add(slow(1.0), text(scripted_reply(c, extra=bad_items(c)[:1])))
    count = node_count(store)
    app = review_app(db_path, anth)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = await open_review(pilot, app, c["chat"].id, anth)
        assert "distilling…" in status(screen)  # the model has not answered yet (it waits 1 s)
        await wait_for(pilot, lambda: screen.state == "review", what="the proposals")
        options = screen.query_one("#distil-proposals")
        labels = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert labels[0].startswith("Additions") and labels[2].startswith("Updates") and labels[4].startswith("Retire")
        assert f"from message {c['users'][1]}: “We dropped the pizza oven." in labels[1]
        # The detail follows the highlight (a message after the list is filled), and a key press returns
        # once the app looks idle, which under CPU load can be before the key was handled: wait for
        # each state before looking at it.
        detail = lambda: plain(screen.query_one("#distil-detail"))  # noqa: E731
        await wait_for(pilot, lambda: "New node: Cold smoker" in detail(), what="the addition's detail")
        warnings = plain(screen.query_one("#distil-warnings-text"))
        assert "⚠ Item 4 of the model's reply (update) was dropped: node 9999" in warnings
        await pilot.press("a")  # the addition
        # the update's diff, now highlighted
        await wait_for(pilot, lambda: "-Mix two parts browns to one part greens." in detail(), what="the update's diff")
        assert screen.decisions[0] == "accepted"
        await pilot.press("r")  # the update
        await wait_for(pilot, lambda: screen.decisions[1] is not None, what="the update's decision")
        await pilot.press("a")  # the retirement
        await wait_for(pilot, lambda: screen.decisions[2] is not None, what="the retirement's decision")
        assert screen.decisions == ["accepted", "rejected", "accepted"]
        assert "2 accepted · 1 rejected" in status(screen)
        assert node_count(store) == count  # nothing written before apply
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, type(screen)), what="the screen to close")
    assert node_count(store) == count + 1
    assert store.get_node(c["compost"])["source"] == "Mix two parts browns to one part greens."
    assert "retired" in store.get_node(c["oven"])["dimensions"]
    added = store.db.execute("SELECT id FROM nodes WHERE title = 'Cold smoker'").fetchone()
    assert store.get_node(added["id"])["metadata"]["provenance"]["chat_id"] == c["chat"].id


async def test_review_screen_edits_shows_text_literally_and_escape_writes_nothing(store, conversation, anth,
                                                                                  embedder, monkeypatch, db_path):
    import core.index.embedder
    from textual.widgets import TextArea

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)
    c = conversation
    reply = json.loads(scripted_reply(c))
    reply["proposals"][0]["title"] = "[bold]Smoker[/bold] plan"
    anth.script.add(text(json.dumps(reply)))
    anth.script.add(text(json.dumps(reply)))
    before = snapshot_nodes(store)
    app = review_app(db_path, anth)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = await open_review(pilot, app, c["chat"].id, anth)
        await wait_for(pilot, lambda: screen.state == "review", what="the proposals")
        options = screen.query_one("#distil-proposals")
        assert "[bold]Smoker[/bold] plan" in str(options.get_option_at_index(1).prompt)  # not markup
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, type(screen)), what="the screen to close")
        assert snapshot_nodes(store) == before  # cancelled: nothing written

        screen = await open_review(pilot, app, c["chat"].id, anth)
        await wait_for(pilot, lambda: screen.state == "review", what="the proposals")
        await pilot.press("down")  # to the update
        await pilot.press("e")  # (a press may return before the key is handled under load: wait for each state)
        await wait_for(pilot, lambda: screen.state == "editing", what="the editor")
        await pilot.press("escape")  # drops the edit, keeps the dialog
        await wait_for(pilot, lambda: screen.state == "review", what="the edit to be dropped")
        assert isinstance(app.screen, type(screen)) and screen.decisions == [None] * 3
        await pilot.press("e")
        await wait_for(pilot, lambda: screen.state == "editing", what="the editor")
        editor = screen.query_one("#distil-editor", TextArea)
        assert editor.text == "Mix three parts browns to one part greens."
        editor.text = "Mix five parts browns to one part greens."
        await pilot.press("ctrl+s")  # keeps the edit, accepts it
        await wait_for(pilot, lambda: screen.state == "review", what="the edit to be kept")
        assert screen.decisions == [None, "accepted", None]
        await wait_for(pilot, lambda: "+Mix five parts browns to one part greens." in plain(
            screen.query_one("#distil-detail")), what="the edited update's diff")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, type(screen)), what="the screen to close")
    assert store.get_node(c["compost"])["source"] == "Mix five parts browns to one part greens."
    assert "retired" not in store.get_node(c["oven"])["dimensions"]
    assert store.db.execute("SELECT COUNT(*) FROM nodes WHERE title LIKE '%Smoker%'").fetchone()[0] == 0


async def test_review_screen_reports_a_stale_update_and_keeps_the_choices(store, conversation, anth, embedder,
                                                                         monkeypatch, db_path):
    import core.index.embedder

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)
    c = conversation
    anth.script.add(text(scripted_reply(c)))
    app = review_app(db_path, anth)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = await open_review(pilot, app, c["chat"].id, anth)
        await wait_for(pilot, lambda: screen.state == "review", what="the proposals")
        for key in ("a", "a", "a"):
            await pilot.press(key)
        with app.services.store() as s:
            s.update_node(c["compost"], source="Edited in the Focus panel meanwhile.")
        await pilot.press("enter")
        await wait_for(pilot, lambda: screen.state == "review" and "changed after" in status(screen),
                       what="the stale error")
        assert isinstance(app.screen, type(screen)) and screen.decisions == ["accepted"] * 3
        assert any("changed after the update was proposed" in str(n.message) for n in app._notifications)
    assert store.get_node(c["compost"])["source"] == "Edited in the Focus panel meanwhile."
    assert "retired" not in store.get_node(c["oven"])["dimensions"]
    assert store.db.execute("SELECT COUNT(*) FROM nodes WHERE title = 'Cold smoker'").fetchone()[0] == 0


async def test_review_screen_offline_says_a_provider_is_needed(store, conversation, db_path):
    from tui.screens.distil_review import DistilReviewScreen
    from tui.widgets.chat_pane import ChatPane

    app = review_app(db_path, None)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        pane, _ = await app.right_panes()  # mounted after the first frame
        await pilot.press("ctrl+l")
        await pilot.press("ctrl+t")  # a new chat: nothing to distil
        await wait_for(pilot, lambda: any("Nothing to distil yet" in str(n.message) for n in app._notifications),
                       what="the notice")
        assert not isinstance(app.screen, DistilReviewScreen)
        pane.load_chat(conversation["chat"].id)
        await wait_for(pilot, lambda: pane.chat_id == conversation["chat"].id, what="the chat to load")
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        await commands["Chat: distil into notes"].callback()  # the palette entry; the provider: offline
        await wait_for(pilot, lambda: isinstance(app.screen, DistilReviewScreen), what="the review screen")
        screen = app.screen
        await wait_for(pilot, lambda: screen.state == "failed", what="the error")
        assert "needs a model provider" in status(screen)
        assert "f2, Provider" in status(screen)  # where to pick one in the app, not a shell command
        assert "cairn config set" not in status(screen)
        # said once, in the dialog: no error toast on top of it
        assert not any(n.severity == "error" for n in app._notifications)
        await pilot.press("escape")
        assert not isinstance(app.screen, DistilReviewScreen)


async def test_escape_while_distilling_leaves_and_writes_nothing(store, conversation, anth, embedder, monkeypatch,
                                                                 db_path):
    import core.index.embedder
    from fakes import slow

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)
    c = conversation
    anth.script.add(slow(1.0), text(scripted_reply(c)))
    before = snapshot_nodes(store)
    app = review_app(db_path, anth)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = await open_review(pilot, app, c["chat"].id, anth)
        assert screen.state == "distilling"
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, type(screen)), what="the screen to close")
        await app.workers.wait_for_complete()
        await wait_for(pilot, lambda: len(anth.requests) == 4, what="the distil request to end")
    assert snapshot_nodes(store) == before


async def test_review_screen_keeps_every_key_typed_before_ctrl_s(store, conversation, anth, embedder,
                                                                 monkeypatch, db_path):
    """ctrl+s keeps the edit as the app reads it: letters typed in the same burst (a fast typist, a
    laggy SSH link) were still in the editor's queue and the kept text lacked them (issue 26 walkthrough)."""
    import core.index.embedder
    from textual import events
    from textual.widgets import TextArea

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)
    c = conversation
    anth.script.add(text(scripted_reply(c)))
    app = review_app(db_path, anth)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = await open_review(pilot, app, c["chat"].id, anth)
        await wait_for(pilot, lambda: screen.state == "review", what="the proposals")
        await pilot.press("down")  # to the update
        await pilot.press("e")
        await wait_for(pilot, lambda: screen.state == "editing", what="the editor")
        editor = screen.query_one("#distil-editor", TextArea)
        editor.move_cursor(editor.document.end)
        await pilot.pause()
        for char in " Turn weekly":  # one read of the terminal: the letters and ctrl+s together
            app.post_message(events.Key("space" if char == " " else char, char))
        app.post_message(events.Key("ctrl+s", None))
        await wait_for(pilot, lambda: screen.state == "review", what="the edit to be kept")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: not isinstance(app.screen, type(screen)), what="the screen to close")
    assert store.get_node(c["compost"])["source"] == "Mix three parts browns to one part greens. Turn weekly"
