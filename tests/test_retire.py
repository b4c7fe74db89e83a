"""Undoing a retirement (core/graph/retirement.py, `cairn retired` / `cairn unretire`, the Focus tab's retired
line and "Focus: un-retire"): a node retired through the real distil path (a scripted chat and distil
reply against the fake Anthropic server) comes back into hubs and retrieval, its history kept."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from chat_support import KEY, _no_proxies, anth, searcher  # noqa: F401  (fixtures)
from core.assist import distil
from core.agent import profiles
from core.graph import retirement
from core.chat.context import ContextEngine
from core.errors import InvalidInput, NotFound
from test_distil import conversation, graph, plain, run_propose, scripted_reply  # noqa: F401  (fixtures)
from tui_support import settle, wait_for

VARIABLES = {"user_name": "Ada", "chat_id": "1", "agent": "orchestrator", "model": "claude-sonnet-4-6"}
OVEN_QUERY = "a brick pizza oven in the back garden"


@pytest.fixture
def retired(store, conversation, anth):
    """The pizza oven node, a hub (two edges), retired by applying the chat's distil retirement."""
    c = conversation
    store.add_edge(c["oven"], c["compost"], "The oven's ash goes on the compost.")
    store.add_edge(c["bees"], c["oven"], "The bee hotel stands beside the oven.")
    ret = run_propose(store, c, anth, scripted_reply(c)).proposals[2]
    assert ret.kind == "retirement" and ret.node_id == c["oven"]
    distil.apply(store, c["chat"].id, [ret])
    return c


def offered(store, searcher, node_id: int) -> tuple[bool, bool]:
    """(a hub in a new conversation's background, retrieved for a question about it)"""
    eng = ContextEngine(store, searcher, profiles.get("orchestrator"))
    hub = node_id in eng.snapshot(VARIABLES).node_ids
    return hub, node_id in {p.node_id for p in eng.retrieve(OVEN_QUERY)}


# -- core ------------------------------------------------------------------------------------------
def test_unretire_brings_a_distil_retired_node_back_into_hubs_and_retrieval(store, retired, searcher):
    c = retired
    oven = c["oven"]
    assert offered(store, searcher, oven) == (False, False)  # retired: neither hub nor retrieved
    record = store.get_node(oven)["metadata"]["retired"]
    listed = retirement.retired_nodes(store)
    assert [n["id"] for n in listed] == [oven]
    chat_title = store.db.execute("SELECT title FROM chats WHERE id = ?", (c["chat"].id,)).fetchone()[0]
    assert listed[0]["retirement"] == {**record, "chat_title": chat_title or None}
    assert listed[0]["retirement"]["chat_id"] == c["chat"].id

    node = retirement.restore(store, oven, via="cli")
    assert node["dimensions"] == ["projects"] and "retired" not in node["metadata"]
    assert not retirement.is_retired(node) and retirement.record(node) is None
    log = node["metadata"]["provenance_log"]
    assert [e["kind"] for e in log] == ["retirement", "unretired"]  # history kept, not dropped
    assert log[0]["reason"] == "Dropped in favour of the cold smoker." and log[0]["chat_id"] == c["chat"].id
    assert log[1]["was"] == record and log[1]["via"] == "cli" and log[1]["at"] >= record["at"]
    assert retirement.retired_nodes(store) == []
    assert offered(store, searcher, oven) == (True, True)  # current knowledge again


def test_restore_refuses_what_it_cannot_undo_and_changes_nothing(store, retired):
    c = retired
    with pytest.raises(InvalidInput, match=r"Node \d+ \('Compost ratio'\) is not retired; nothing was changed"):
        retirement.restore(store, c["compost"], via="cli")
    with pytest.raises(NotFound, match="There is no node 9999"):
        retirement.restore(store, 9999, via="cli")
    before = store.get_node(c["oven"])
    store.delete_node(c["oven"])
    with pytest.raises(NotFound, match=rf"Node {c['oven']} is in the trash: `cairn restore {c['oven']}`"):
        retirement.restore(store, c["oven"], via="cli")
    assert store.restore_node(c["oven"])["dimensions"] == before["dimensions"]  # still retired, untouched
    assert store.get_node(c["oven"])["metadata"] == before["metadata"]


def test_a_node_retired_by_hand_is_listed_and_restored_without_a_record(store):
    node = store.add_node("Old plan", "Superseded, marked by hand.", dimensions=["Retired", "ideas"])
    listed = retirement.retired_nodes(store)
    assert [(n["id"], n["retirement"]) for n in listed] == [(node["id"], None)]
    assert retirement.describe(retirement.record(listed[0])) == "marked retired by hand (no record of a chat)"
    back = retirement.restore(store, node["id"], via="app")
    assert back["dimensions"] == ["ideas"]
    assert back["metadata"]["provenance_log"][-1]["was"] is None and back["metadata"]["provenance_log"][-1]["via"] == "app"


def test_describe_names_the_chat_and_the_day():
    rec = {"reason": "r", "chat_id": 12, "message_id": 3, "via": "distil", "at": "2026-11-28T10:00:00Z"}
    assert retirement.describe(rec) == "superseded in chat 12 on 2026-11-28"
    assert retirement.describe(rec, "Garden plans") == "superseded in chat 12 “Garden plans” on 2026-11-28"


# -- the CLI ---------------------------------------------------------------------------------------
def cairn(capsys, db_path, *args) -> tuple[int, str, str]:
    from tui.cli.main import main

    rc = main([*map(str, args), "--db", str(db_path)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_lists_retired_nodes_and_unretires_one(store, retired, capsys, db_path, searcher):
    c = retired
    oven = c["oven"]
    rc, out, err = cairn(capsys, db_path, "retired")
    assert rc == 0, err
    assert f"[{oven}] Pizza oven plan  retired 20" in out
    assert f"· chat {c['chat'].id}" in out and f"message {c['users'][1]}" in out
    assert "superseded: Dropped in favour of the cold smoker." in out and "cairn unretire ID" in out
    rc, out, err = cairn(capsys, db_path, "retired", "--json")
    assert rc == 0, err
    data = json.loads(out)
    assert [n["id"] for n in data] == [oven] and data[0]["retirement"]["reason"].startswith("Dropped")
    assert data[0]["dimensions"] == ["projects", "retired"]

    rc, out, err = cairn(capsys, db_path, "retired", "-n", "0")
    assert rc == 1 and "cairn: --limit must be at least 1 (got 0)." in err
    hand = store.add_node("Older plan", "x", dimensions=["retired"])["id"]
    rc, out, err = cairn(capsys, db_path, "retired", "-n", "1", "--json")
    assert rc == 0 and [n["id"] for n in json.loads(out)] == [hand]  # newest retirement first
    rc, out, err = cairn(capsys, db_path, "retired")
    assert f"[{hand}] Older plan  retired by hand (no record of a chat)" in out
    retirement.restore(store, hand, via="cli")

    rc, out, err = cairn(capsys, db_path, "unretire", oven)
    assert rc == 0, err
    assert f"Un-retired node {oven}: Pizza oven plan" in out
    assert f"It was superseded in chat {c['chat'].id} on 20" in out and "keeps the retirement and this undo" in out
    assert store.get_node(oven)["dimensions"] == ["projects"]
    assert store.get_node(oven)["metadata"]["provenance_log"][-1]["via"] == "cli"
    assert offered(store, searcher, oven) == (True, True)

    rc, out, err = cairn(capsys, db_path, "unretire", oven)  # again: not retired any more
    assert rc == 1 and f"cairn: Node {oven} ('Pizza oven plan') is not retired; nothing was changed." in err
    rc, out, err = cairn(capsys, db_path, "retired")
    assert rc == 0 and "No node is retired." in out


def test_cli_unretire_json_prints_the_node(store, retired, capsys, db_path):
    rc, out, err = cairn(capsys, db_path, "unretire", retired["oven"], "--json")
    assert rc == 0, err
    node = json.loads(out)
    assert node["id"] == retired["oven"] and node["dimensions"] == ["projects"]
    assert [e["kind"] for e in node["metadata"]["provenance_log"]] == ["retirement", "unretired"]


def test_cli_verbs_as_a_real_process(store, retired, cairn_cmd, tmp_path):
    env = {k: v for k, v in os.environ.items() if "PROXY" not in k.upper() and k != "CAIRN_DEBUG"}
    env.update(CAIRN_HOME=str(tmp_path / "home"), HOME=str(tmp_path))

    def run(*args):
        return subprocess.run([*cairn_cmd, *map(str, args), "--db", str(store.path)], env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=120, text=True)

    for args, expect in ((("unretire", 9999), "cairn: There is no node 9999.\n"),
                         (("unretire", retired["compost"]), "is not retired; nothing was changed."),
                         (("unretire", "x"), "'x' is not an id (a whole number)")):
        proc = run(*args)
        assert proc.returncode in (1, 2) and expect in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode == (2 if args[1] == "x" else 1)  # argparse's usage error, else a Cairn error
    proc = run("unretire", retired["oven"])
    assert proc.returncode == 0, proc.stderr
    assert f"Un-retired node {retired['oven']}: Pizza oven plan" in proc.stdout
    assert "retired" not in store.get_node(retired["oven"])["dimensions"]
    proc = run("retired", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
    missing = subprocess.run([*cairn_cmd, "retired", "--db", str(tmp_path / "none.db")], env=env,
                             stdin=subprocess.DEVNULL, capture_output=True, timeout=120, text=True)
    assert missing.returncode == 1 and "No database at" in missing.stderr


# -- the app ---------------------------------------------------------------------------------------
SIZE = (140, 44)


def quiet_app(db_path):
    """The app without its database watcher, so only the un-retire's own NodesChanged refreshes views."""
    from tui.app import CairnApp

    class App(CairnApp):
        def watch_database(self) -> None:
            """Off: it would refresh the tab on any write and hide a missing NodesChanged."""

    return App(db_path, first_run_prompt=False)


def palette(app) -> dict:
    return {c.title: c for c in app.get_system_commands(app.screen)}


async def open_tab(app, pilot, node_id: int):
    from tui.widgets.focus_panel import FocusPanel

    panel = app.query_one(FocusPanel)
    panel.open_node(node_id)
    await wait_for(pilot, lambda: panel.primary == node_id and panel.active_view is not None
                   and panel.active_view.node is not None, what="the tab to load")
    return panel.active_view


async def test_focus_tab_says_retired_and_the_palette_unretires(store, retired, db_path):
    from textual.widgets import Static

    c = retired
    app = quiet_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await app.right_panes()
        view = await open_tab(app, pilot, c["compost"])
        line = view.query_one(".node-retired", Static)
        assert not line.display and "Focus: un-retire" not in palette(app)  # a current node: not offered

        view = await open_tab(app, pilot, c["oven"])
        line = view.query_one(".node-retired", Static)
        day = store.get_node(c["oven"])["metadata"]["retired"]["at"][:10]
        assert line.display
        # On screen, not just set: the layout after the tab's content arrives may take a frame more.
        await wait_for(pilot, lambda: line.region.height >= 1, what="the retired line to be laid out")
        assert plain(line) == (f"retired · superseded in chat {c['chat'].id} on {day} — palette: Focus: un-retire\n"
                               "why: Dropped in favour of the cold smoker.")
        commands = palette(app)
        assert "Focus: un-retire" in commands
        commands["Focus: un-retire"].callback()
        await wait_for(pilot, lambda: not line.display, what="the retired line to go")
        await settle(app, pilot)
        assert "retired" not in view.node["dimensions"] and "Focus: un-retire" not in palette(app)
        assert any("Un-retired “Pizza oven plan”" in str(n.message) for n in app._notifications)
    node = store.get_node(c["oven"])
    assert node["dimensions"] == ["projects"] and node["metadata"]["provenance_log"][-1]["via"] == "app"


async def test_palette_unretire_of_a_node_restored_elsewhere_says_so(store, retired, db_path):
    c = retired
    app = quiet_app(db_path)
    async with app.run_test(size=SIZE) as pilot:
        await app.right_panes()
        view = await open_tab(app, pilot, c["oven"])
        command = palette(app)["Focus: un-retire"]
        with app.services.store() as s:
            retirement.restore(s, c["oven"], via="cli")  # meanwhile, from the shell
        command.callback()
        await wait_for(pilot, lambda: any("is not retired; nothing was changed" in str(n.message)
                                          for n in app._notifications), what="the warning")
        await wait_for(pilot, lambda: "retired" not in view.node["dimensions"], what="the tab to refresh")
        assert not view.query_one(".node-retired").display
    log = store.get_node(c["oven"])["metadata"]["provenance_log"]
    assert [e["kind"] for e in log] == ["retirement", "unretired"]  # one undo, not two
