"""The history of every write (core/graph/history.py, core/graph/revert.py): what each write records,
who it names, undo and revert, the bound, the CLI verbs and the MCP server's client name."""

from __future__ import annotations

import json
import threading

import pytest

from core.errors import InvalidInput, NotFound
from core.graph import history, revert
from core.graph.store import Store
from tui.cli.main import main


@pytest.fixture(autouse=True)
def _actor():
    history.set_process_actor("you")  # the CLI and the app set it for their process; tests start plain
    yield
    history.set_process_actor("you")


def changes(store, node_id):
    return history.changes(store.db, node_id)


def test_each_write_records_what_it_changed_and_only_that(store):
    a = store.add_node("Alpha", "one\ntwo", dimensions=["x"])["id"]
    b = store.add_node("Beta", "b")["id"]
    store.update_node(a, title="Alpha", source="one\ntwo")  # the same values: no change, no record
    store.update_node(a, source="one\nthree", dimensions=["x", "y"])
    edge = store.add_edge(a, b, "because")["id"]
    store.update_edge(edge, explanation="since", context={"type": "supports"})
    store.delete_edge(edge)
    store.delete_node(b)
    store.restore_node(b)

    got = [(c.action, c.kind, c.fields) for c in reversed(changes(store, a))]
    assert got == [("create", "node", ["title"]),
                   ("update", "node", ["source", "dimensions"]),
                   ("create", "edge", ["from_node_id", "to_node_id", "explanation", "context", "source"]),
                   ("update", "edge", ["explanation", "context"]),
                   ("delete", "edge", ["from_node_id", "to_node_id", "explanation", "context", "source"])]
    update = changes(store, a)[3]
    assert update.before == {"source": "one\ntwo", "dimensions": ["x"]}
    assert update.after == {"source": "one\nthree", "dimensions": ["x", "y"]}
    # The edge's changes are in both ends' histories; b's own delete keeps the whole node.
    assert [c.action for c in reversed(changes(store, b))] == ["create", "create", "update", "delete", "delete",
                                                               "restore"]
    deleted = changes(store, b)[1]
    assert deleted.before["title"] == "Beta" and deleted.before["source"] == "b" and deleted.after is None
    assert all(c.actor == "you" for c in changes(store, a))


def test_a_write_that_fails_records_nothing(store):
    a = store.add_node("Alpha", "text")["id"]
    with pytest.raises(InvalidInput):
        store.update_node(a, title="")
    with pytest.raises(InvalidInput):
        store.add_edge(a, a, "self")
    assert [c.action for c in changes(store, a)] == ["create"]


def test_the_actor_is_whoever_the_code_writes_for_and_stays_on_its_thread(store):
    a = store.add_node("Alpha", "text")["id"]
    seen = []

    def other_thread():
        with Store(store.path) as own:
            own.update_node(a, description="from a worker")
            seen.append(history.current_actor())

    with history.acting_as(history.model_in_chat(7)):
        store.update_node(a, title="Alpha 2")
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
    history.set_process_actor(history.APP)
    store.update_node(a, source="by hand")
    actors = [c.actor for c in reversed(changes(store, a))]
    assert actors == ["you", "the model in chat 7", "you", "you (app)"]  # the worker wrote as the process
    assert seen == ["you"]


def test_undo_takes_back_one_change_and_refuses_over_a_later_edit(store):
    a = store.add_node("Alpha", "first")["id"]
    with history.acting_as(history.model_in_chat(3)):
        store.update_node(a, source="the model's", description="summary")
    model_change = changes(store, a)[0]
    store.update_node(a, source="mine now")

    with pytest.raises(InvalidInput) as refused:
        revert.undo(store, model_change.id)
    message = str(refused.value)
    assert "text" in message and f"since change {model_change.id}" in message and "you" in message
    assert message.endswith(f"Revert the node to a version instead (cairn revert {a} --to N).")  # the CLI's way out
    assert store.get_node(a)["source"] == "mine now"  # nothing was thrown away

    store.update_node(a, source="the model's")  # back to what the model wrote: now it can be undone
    revert.undo(store, model_change.id)
    node = store.get_node(a)
    assert (node["source"], node["description"]) == ("first", "")
    assert changes(store, a)[0].actor == f"you, undoing change {model_change.id}"


def test_undo_a_creation_trashes_it_and_undo_a_deletion_brings_it_back(store):
    a = store.add_node("Alpha", "text")["id"]
    b = store.add_node("Beta", "text")["id"]
    store.add_edge(a, b, "because")
    revert.undo(store, changes(store, b)[-1].id)  # b's creation
    with pytest.raises(NotFound):
        store.get_node(b)
    assert [t["node_id"] for t in store.trash()] == [b]
    revert.undo(store, changes(store, b)[0].id)  # the delete that undo made
    assert store.get_node(b)["title"] == "Beta" and len(store.edges(a)) == 1


def test_undoing_an_edge_deletion_brings_the_same_edge_back_with_its_context(store):
    a = store.add_node("Alpha", "text")["id"]
    b = store.add_node("Beta", "text")["id"]
    edge = store.add_edge(a, b, "because", context={"type": "supports", "confidence": 0.5})
    store.delete_edge(edge["id"])
    revert.undo(store, changes(store, a)[0].id)
    back = store.get_edge(edge["id"])
    assert (back["explanation"], back["context"], back["source"]) == ("because", edge["context"], "user")


def test_undoing_an_edge_update_puts_its_context_back_exactly(store):
    a = store.add_node("Alpha", "text")["id"]
    b = store.add_node("Beta", "text")["id"]
    edge = store.add_edge(a, b, "because")
    store.update_edge(edge["id"], context={"added": True})  # update_edge merges a key in
    revert.undo(store, changes(store, a)[0].id)
    assert store.get_edge(edge["id"])["context"] == edge["context"]  # the key is gone again, not just reset


def test_revert_to_brings_the_node_and_its_edges_back_in_one_step(store):
    a = store.add_node("Alpha", "v1")["id"]
    b = store.add_node("Beta", "b")["id"]
    c = store.add_node("Gamma", "c")["id"]
    version = changes(store, a)[0].id
    kept = store.add_edge(c, b, "unrelated to Alpha")
    store.update_node(a, source="v2", title="Alpha 2")
    store.add_edge(a, b, "because")
    with history.acting_as(history.mcp_client("claude-ai")):
        store.update_node(a, source="v3", dimensions=["mcp"])
        store.add_edge(c, a, "the client linked it")

    undone = revert.revert_to(store, a, version)
    assert len(undone) == 4
    node = store.get_node(a)
    assert (node["title"], node["source"], node["dimensions"]) == ("Alpha", "v1", [])
    assert store.edges(a) == [] and store.get_edge(kept["id"])  # the edge between others is untouched
    assert revert.revert_to(store, a, changes(store, a)[0].id) == []  # already there
    with pytest.raises(InvalidInput, match="not a change of node"):
        revert.revert_to(store, a, changes(store, b)[-1].id)


def test_undo_says_why_when_the_trash_no_longer_holds_the_node(store):
    a = store.add_node("Alpha", "text")["id"]
    b = store.add_node("Beta", "text")["id"]
    store.add_edge(a, b, "because")
    store.delete_node(b)
    store.db.execute("DELETE FROM trash")  # emptied
    with pytest.raises(InvalidInput, match="no longer in the trash"):
        revert.undo(store, changes(store, b)[0].id)
    link = next(c for c in changes(store, a) if c.kind == "edge")
    # the edge went with b: undoing its creation finds nothing to delete
    with pytest.raises(InvalidInput, match="already gone"):
        revert.undo(store, link.id)


def test_a_failing_step_rolls_the_whole_revert_back(store, monkeypatch):
    a = store.add_node("Alpha", "v1")["id"]
    b = store.add_node("Beta", "b")["id"]
    version = changes(store, a)[0].id
    store.update_node(a, source="v2", title="Alpha 3")
    store.add_edge(a, b, "because")

    def fail(self, edge_id):
        raise InvalidInput("disk full (simulated)")

    monkeypatch.setattr(Store, "delete_edge", fail)  # the step after the node's fields were set back
    with pytest.raises(InvalidInput, match="simulated"):
        revert.revert_to(store, a, version)
    monkeypatch.undo()
    node = store.get_node(a)
    assert (node["title"], node["source"], len(store.edges(a))) == ("Alpha 3", "v2", 1)  # all rolled back
    assert len(changes(store, a)) == 3


def test_a_revert_writes_the_net_difference_not_every_step(store):
    a = store.add_node("Alpha", "v1")["id"]
    b = store.add_node("Beta", "b")["id"]
    version = changes(store, a)[0].id
    for text in ("v2", "v3", "v4"):
        store.update_node(a, source=text)
    edge = store.add_edge(a, b, "because")["id"]
    store.delete_edge(edge)
    store.add_edge(a, b, "again")
    before = len(history.changes(store.db, a))
    revert.revert_to(store, a, version)
    written = history.changes(store.db, a)[: len(history.changes(store.db, a)) - before]
    assert [(c.kind, c.action) for c in written] == [("edge", "delete"), ("node", "update")]
    assert store.get_node(a)["source"] == "v1" and store.edges(a) == []


def test_reverting_to_before_a_deletion_brings_the_node_back(store):
    a = store.add_node("Alpha", "v1")["id"]
    b = store.add_node("Beta", "b")["id"]
    store.add_edge(a, b, "because")
    version = changes(store, a)[0].id
    store.update_node(a, source="v2")
    store.delete_node(a)
    revert.revert_to(store, a, version)
    node = store.get_node(a)
    assert node["source"] == "v1" and [e["explanation"] for e in store.edges(a)] == ["because"]


def test_prune_keeps_each_node_its_newest_changes_and_edges_for_either_end(store):
    a = store.add_node("Alpha", "0")["id"]
    b = store.add_node("Beta", "b")["id"]
    store.add_edge(a, b, "because")
    for i in range(1, 6):
        store.update_node(a, source=str(i))
    assert history.past_bound(store.db, 0) == 0 and history.prune(store.db, 0) == 0  # 0 keeps everything
    # a has 7 (its creation, the edge, 5 updates): its 4 oldest are past 3, but b still keeps the edge.
    assert history.past_bound(store.db, 3) == 3
    assert history.prune(store.db, 3) == 3
    assert [(c.kind, c.action) for c in changes(store, a)] == [("node", "update")] * 3 + [("edge", "create")]
    # b's newest changes still include the edge: kept for b, though a let it go.
    assert [c.action for c in reversed(changes(store, b))] == ["create", "create"]
    assert history.prune(store.db, 3) == 0


def test_doctor_counts_and_repairs_changes_past_the_bound(store):
    from core.ops import doctor

    a = store.add_node("Alpha", "0")["id"]
    for i in range(4):
        store.update_node(a, source=str(i + 1))
    report = doctor.check(store, keep_versions=2)
    finding = next(f for f in report.findings if f.check == "history_bound")
    assert finding.count == 3 and not finding.repaired
    report = doctor.check(store, repair=True, keep_versions=2)
    assert next(f for f in report.findings if f.check == "history_bound").repaired
    assert len(changes(store, a)) == 2


def test_an_old_database_gains_the_history_table(tmp_path):
    from core.graph.migrations import MIGRATIONS
    from core.graph.db import sqlite

    path = tmp_path / "old.db"
    conn = sqlite.connect(str(path))
    from core.graph import db as db_module

    db_module._load_vec(conn)
    for version, statements in enumerate(MIGRATIONS[:4], start=1):
        for statement in statements:
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()
    with Store(path) as store:
        assert store.db.user_version == len(MIGRATIONS)
        a = store.add_node("Alpha", "text")["id"]
        assert [c.action for c in changes(store, a)] == ["create"]
    assert (tmp_path / f"old.db.before-v{len(MIGRATIONS)}.bak").exists()


# -- who: the importers, the model's tools, the MCP server ---------------------------------------------
def test_a_vault_import_names_each_file(store, tmp_path):
    from core.vault.sync import import_vault

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\nLinks to [[b]].\n")
    (vault / "b.md").write_text("# B\ntext\n")
    import_vault(store, vault)
    a = next(n for n in store.recent(10) if n["title"] == "A")
    actors = [c.actor for c in reversed(changes(store, a["id"]))]
    assert actors[0] == "import of a.md"
    assert any(actor == "import of the vault vault" for actor in actors)  # the link, made for the vault


def test_the_models_tools_write_as_the_model_in_its_chat(store):
    from core.agent.tools import ToolContext, ToolRunner

    runner = ToolRunner(ToolContext(store, None, actor=history.model_in_chat(12), confirm=lambda action, detail: True),
                        ("createNode", "updateNode"))
    created = runner.run("createNode", {"title": "From the model", "source": "text"})
    nid = created["created"]["id"] if "created" in created else created["id"]
    runner.run("updateNode", {"id": nid, "description": "said so"})
    assert {c.actor for c in changes(store, nid)} == {"the model in chat 12"}
    assert history.current_actor() == "you"  # only for the tool's write


async def test_the_mcp_server_records_the_clients_name(cairn_cmd, tmp_path):
    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import stdio_client
    import os

    db = tmp_path / "mcp.db"
    Store(db).close()
    params = StdioServerParameters(command=cairn_cmd[0], args=[*cairn_cmd[1:], "mcp", "--db", str(db)],
                                   env={"CAIRN_HOME": os.environ["CAIRN_HOME"], "HOME": os.environ["HOME"]})
    with open(tmp_path / "err.log", "w") as err:
        async with stdio_client(params, errlog=err) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120,
                                     client_info=types.Implementation(name="claude-ai", version="1.0")) as session:
                await session.initialize()
                result = await session.call_tool("createNode", {"title": "Over MCP", "source": "text"})
                assert not result.is_error, result.content
    with Store(db) as store:
        node = next(n for n in store.recent(5) if n["title"] == "Over MCP")
        assert [c.actor for c in changes(store, node["id"])] == ["MCP client claude-ai"]


# -- the CLI ---------------------------------------------------------------------------------------------
def cli(capsys, db_path, *argv):
    rc = main([*argv, "--db", str(db_path)])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_cli_history_diff_and_revert(capsys, db_path):
    assert cli(capsys, db_path, "add", "first text", "--title", "Alpha")[0] == 0
    assert cli(capsys, db_path, "edit", "1", "--text", "second text", "--title", "Alpha two")[0] == 0
    rc, out, _ = cli(capsys, db_path, "history", "1")
    assert rc == 0 and "you (command line)" in out and "changed title, text" in out and "created" in out
    with Store(db_path) as store:
        update, create = changes(store, 1)
    rc, out, _ = cli(capsys, db_path, "history", "1", "--diff", str(update.id))
    assert rc == 0 and "-first text" in out and "+second text" in out and "--- title (before)" in out
    rc, out, _ = cli(capsys, db_path, "history", "1", "--json")
    assert [c["id"] for c in json.loads(out)] == [update.id, create.id]

    rc, out, _ = cli(capsys, db_path, "revert", "1", "--to", str(create.id))
    assert rc == 0 and "undid 1 change" in out
    with Store(db_path) as store:
        node = store.get_node(1)
        assert (node["title"], node["source"]) == ("Alpha", "first text")
        newest = changes(store, 1)[0]
    assert newest.actor == f"you (command line), reverting node 1 to change {create.id}"
    rc, out, _ = cli(capsys, db_path, "revert", "1", "--undo", str(newest.id), "--json")
    assert rc == 0 and json.loads(out)["node"]["title"] == "Alpha two"


@pytest.mark.parametrize("argv, message", [
    (("revert", "1"), "Say which: --to N"),
    (("revert", "1", "--to", "2", "--undo", "2"), "Say which"),
    (("revert", "1", "--undo", "999"), "There is no change 999"),
    (("history", "1", "--diff", "999"), "There is no change 999"),
    (("history", "1", "--diff", "2"), "Change 2 is not a change of node 1"),
    (("history", "77"), "There is no node 77"),
])
def test_cli_history_errors_are_specific(capsys, db_path, argv, message):
    cli(capsys, db_path, "add", "a", "--title", "Alpha")
    cli(capsys, db_path, "add", "b", "--title", "Beta")
    rc, _, err = cli(capsys, db_path, *argv)
    assert rc == 1 and message in err and "Traceback" not in err


def test_a_revert_is_one_operation_that_one_undo_takes_back(store):
    a = store.add_node("Alpha", "v1")["id"]
    b = store.add_node("Beta", "b")["id"]
    version = changes(store, a)[0].id
    store.update_node(a, source="v2")
    store.add_edge(a, b, "because")
    store.update_node(a, title="Alpha 3")
    undone = revert.revert_to(store, a, version)
    assert len(undone) == 3 and store.get_node(a)["source"] == "v1"
    revert.undo(store, changes(store, a)[0].id)  # any change of the revert: the whole of it
    node = store.get_node(a)
    assert (node["title"], node["source"], len(store.edges(a))) == ("Alpha 3", "v2", 1)
