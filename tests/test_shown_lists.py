"""Kept proposal lists (core/graph/shown_lists.py) never outlive the chat or node they belong to: a later
`--accept` names what was deleted, applies nothing and discards the list; listing again sweeps away
every other orphaned list. Run on a real database, the CLI verbs in-process through tui.cli.main."""

from __future__ import annotations

import json

import pytest

from chat_support import _no_proxies, anth, searcher  # noqa: F401  (fixtures)
from core.graph import shown_lists
from core.errors import InvalidInput, NotFound
from core.graph.shown_lists import OwnerDeleted
from fakes import text
from test_distil import cairn as distil_cli, cli_env, conversation, graph, node_count, scripted_reply  # noqa: F401
from tui.cli.main import main


def cli(capsys, db_path, *argv) -> tuple[int, str, str]:
    rc = main([*map(str, argv), "--db", str(db_path)])
    out, err = capsys.readouterr()
    return rc, out, err


def meta_keys(store) -> set[str]:
    return {r[0] for r in store.db.execute("SELECT key FROM meta")}


def edge_count(store) -> int:
    return store.db.execute("SELECT COUNT(*) FROM edges").fetchone()[0]


@pytest.fixture
def notes(store, indexer):
    bodies = {
        "Transformers": "The transformer architecture uses self-attention; see BERT for an encoder.",
        "Attention Is All You Need": "The 2017 paper by Vaswani et al. introduced the transformer, built on attention.",
        "BERT": "BERT is a bidirectional transformer encoder pretrained with masked language modelling.",
    }
    ids = {title: store.add_node(title, body)["id"] for title, body in bodies.items()}
    indexer.run()
    return ids


# -- distil: a list kept for a chat -------------------------------------------------------------------
def test_accept_after_the_chat_was_deleted_names_it_applies_nothing_and_discards_the_list(
        store, conversation, anth, cli_env, capsys, db_path):
    chat_id = conversation["chat"].id
    title = store.db.execute("SELECT title FROM chats WHERE id = ?", (chat_id,)).fetchone()[0]
    anth.script.add(text(scripted_reply(conversation)))
    rc, out, err = distil_cli(capsys, db_path, chat_id, "--provider", "anthropic")
    assert rc == 0, err
    key = f"distil.pending.{chat_id}"
    assert json.loads(store.meta(key))["owner"] == {
        "kind": "chat", "id": chat_id, "title": title,
        "created_at": store.db.execute("SELECT created_at FROM chats WHERE id = ?", (chat_id,)).fetchone()[0]}
    before = [tuple(r) for r in store.db.execute("SELECT * FROM nodes ORDER BY id")]

    # Nothing in Cairn deletes a chat yet: it goes by any other path (sqlite3, a restored backup ...).
    store.db.execute("DELETE FROM chats WHERE id = ?", (chat_id,))
    rc, out, err = distil_cli(capsys, db_path, chat_id, "--accept", "1,3", "--yes")
    assert rc == 1
    assert f"Chat {chat_id} (“{title}”) was deleted after its 3 proposals were listed at " in err
    assert "the kept list was discarded and nothing was written." in err
    assert [tuple(r) for r in store.db.execute("SELECT * FROM nodes ORDER BY id")] == before
    assert store.meta(key) is None  # discarded on this use
    rc, out, err = distil_cli(capsys, db_path, chat_id, "--accept", "1", "--yes")
    assert rc == 1 and f"No proposals are waiting for chat {chat_id}" in err  # gone, not re-reported


def test_a_kept_distil_list_still_applies_while_its_chat_exists(store, conversation, anth, cli_env, capsys,
                                                               db_path):
    chat_id = conversation["chat"].id
    anth.script.add(text(scripted_reply(conversation)))
    assert distil_cli(capsys, db_path, chat_id, "--provider", "anthropic")[0] == 0
    count = node_count(store)
    rc, out, err = distil_cli(capsys, db_path, chat_id, "--accept", "1", "--yes")
    assert rc == 0, err
    assert node_count(store) == count + 1 and store.meta(f"distil.pending.{chat_id}") is None


# -- integrate / links: a list kept for a node --------------------------------------------------------
def test_accept_after_the_node_was_deleted_names_it_writes_no_edge_and_discards_the_list(
        store, notes, capsys, db_path):
    node = notes["Transformers"]
    listed = json.loads(cli(capsys, db_path, "integrate", node, "--json")[1])["proposals"]
    assert listed
    key = f"workflow_pending:integrate:{node}"
    assert store.meta(key) is not None
    store.delete_node(node)

    rc, out, err = cli(capsys, db_path, "integrate", node, "--accept", "1", "--yes", "--explanation", "1=Because.")
    assert rc == 1
    what = "1 proposal was" if len(listed) == 1 else f"{len(listed)} proposals were"
    assert f"Node {node} (“Transformers”) was deleted after its {what} listed at " in err
    assert f"`cairn restore {node}` brings the node back" in err
    assert edge_count(store) == 0 and store.meta(key) is None
    # With the list gone, a retry is the ordinary unknown node.
    rc, out, err = cli(capsys, db_path, "integrate", node, "--accept", "1", "--yes", "--explanation", "1=Because.")
    assert rc == 1 and f"There is no node {node}." in err and edge_count(store) == 0


def test_a_node_deleted_and_restored_keeps_its_list(store, notes, capsys, db_path):
    """Restored, it is the same node (same id, same created_at): the list made for it still applies."""
    node = notes["Transformers"]
    listed = json.loads(cli(capsys, db_path, "links", node, "--json")[1])["proposals"]
    assert listed, "the text mentions BERT"
    store.delete_node(node)
    store.restore_node(node)
    rc, out, err = cli(capsys, db_path, "links", node, "--accept", "1", "--yes")
    assert rc == 0, err
    assert "From the list shown at" in out and edge_count(store) == 1
    assert store.meta(f"workflow_pending:links:{node}") is None


def test_listing_sweeps_away_the_lists_of_deleted_owners(store, notes, conversation, anth, cli_env, capsys,
                                                         db_path):
    a, b = notes["Transformers"], notes["BERT"]
    chat_id = conversation["chat"].id
    anth.script.add(text(scripted_reply(conversation)))
    assert distil_cli(capsys, db_path, chat_id, "--provider", "anthropic")[0] == 0
    assert cli(capsys, db_path, "integrate", b)[0] == 0
    assert cli(capsys, db_path, "links", b)[0] == 0
    store.delete_node(b)
    store.db.execute("DELETE FROM chats WHERE id = ?", (chat_id,))
    kept = {f"workflow_pending:integrate:{b}", f"workflow_pending:links:{b}", f"distil.pending.{chat_id}"}
    assert kept <= meta_keys(store)
    assert cli(capsys, db_path, "integrate", a)[0] == 0  # any new list sweeps
    keys = meta_keys(store)
    assert not kept & keys and f"workflow_pending:integrate:{a}" in keys
    assert "vec_generation" in keys  # other meta rows are left alone


# -- core.graph.shown_lists ---------------------------------------------------------------------------------
def test_an_owner_replaced_under_the_same_id_counts_as_deleted(store):
    node = store.add_node("Original", "text")["id"]
    shown_lists.save(store, "test.list", [{"x": 1}], [], owner=("node", node))
    proposals, warnings, at = shown_lists.load(store, "test.list", owner=("node", node))
    assert proposals == [{"x": 1}] and warnings == [] and at.startswith("20")
    # A backup restored over the database: another row now holds the id.
    store.db.execute("UPDATE nodes SET created_at = '2020-01-01T00:00:00.000Z' WHERE id = ?", (node,))
    with pytest.raises(OwnerDeleted, match=rf"^Node {node} \(“Original”\) was deleted after its 1 proposal was "
                                           "listed at "):
        shown_lists.load(store, "test.list", owner=("node", node))
    assert store.meta("test.list") is None


def test_a_list_saved_before_owners_were_recorded_is_checked_against_the_callers_owner(store):
    node = store.add_node("Old list owner", "text")["id"]
    store.set_meta("test.legacy", json.dumps({"at": "2026-01-02T03:04:05.000Z", "proposals": [{}, {}],
                                              "warnings": []}))
    assert shown_lists.load(store, "test.legacy", owner=("node", node))[0] == [{}, {}]
    store.delete_node(node)
    with pytest.raises(OwnerDeleted, match=rf"^Node {node} was deleted after its 2 proposals were listed at "
                                           r"2026-01-02 03:04 UTC; the kept list was discarded"):
        shown_lists.load(store, "test.legacy", owner=("node", node))
    assert store.meta("test.legacy") is None


def test_bad_owners_are_refused_and_nothing_is_kept(store):
    with pytest.raises(InvalidInput, match="belongs to a chat or a node, not a 'edge'"):
        shown_lists.save(store, "test.bad", [], [], owner=("edge", 1))
    with pytest.raises(NotFound, match="There is no chat 999."):
        shown_lists.save(store, "test.bad", [], [], owner=("chat", 999))
    assert store.meta("test.bad") is None
    with pytest.raises(InvalidInput):
        shown_lists.load(store, "test.bad", owner=("message", 1))


def test_sweep_reports_what_it_discarded(store):
    keep = store.add_node("Kept", "a")["id"]
    gone = store.add_node("Gone", "b")["id"]
    shown_lists.save(store, "test.keep", [], [], owner=("node", keep))
    shown_lists.save(store, "test.gone", [], [], owner=("node", gone))
    store.set_meta("test.not_json", "not json {")  # other meta values, whatever they hold, are left alone
    store.delete_node(gone)
    assert shown_lists.sweep(store) == ["test.gone"]
    assert {"test.keep", "test.not_json"} <= meta_keys(store) and "test.gone" not in meta_keys(store)
