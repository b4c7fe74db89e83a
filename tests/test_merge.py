"""Merging duplicates (core/graph/merge.py, `cairn merge`, the palette's merge and its review)."""

from __future__ import annotations

import json

import pytest

from core.errors import InvalidInput, NotFound
from core.graph import history, merge, revert
from core.graph.store import Store
from tui.cli.main import main


def duplicates(store):
    keep = store.add_node("Sleep", "Sleep needs eight hours.", description="Rest at night", dimensions=["health"],
                          metadata={"aliases": ["Slumber"]})["id"]
    other = store.add_node("Sleeping well", "Dark rooms help.", description="Good sleep", dimensions=["rest", "Health"],
                           link="https://example.org/sleep", event_date="2024-05")["id"]
    rest = store.add_node("Rest", "Rest restores.")["id"]
    store.add_edge(other, rest, "rest restores")  # collapses into keep → rest
    store.add_edge(keep, rest, "sleep is rest")
    store.add_edge(keep, other, "duplicates")  # dropped: between the two
    store.add_edge(rest, other, "rest leads to it", context={"type": "supports"})  # moved: rest → keep
    return keep, other, rest


def snapshot(store, *ids):
    """Every field of the nodes and their edges, to compare before and after."""
    nodes = {}
    for nid in ids:
        try:
            n = dict(store.get_node(nid))
        except NotFound:
            nodes[nid] = None
            continue
        for k in ("updated_at", "chunk_status"):
            n.pop(k)
        nodes[nid] = n
    edges = sorted((e["from_node_id"], e["to_node_id"], e["explanation"], json.dumps(e["context"], sort_keys=True))
                   for nid in ids for e in store.edges(nid))
    return nodes, edges


def test_the_plan_combines_the_two_and_writes_nothing(store):
    keep, other, rest = duplicates(store)
    before = snapshot(store, keep, other, rest)
    plan = merge.plan(store, keep, other)
    assert snapshot(store, keep, other, rest) == before
    assert plan.title == "Sleep" and plan.aliases == ["Slumber", "Sleeping well"]
    assert plan.dimensions == ["health", "rest"]  # "Health" is the same dimension
    assert plan.source.startswith("Sleep needs eight hours.") and "Merged from “Sleeping well”" in plan.source
    assert plan.source.rstrip().endswith("Dark rooms help.")
    assert plan.description == "Rest at night Good sleep"
    assert (plan.link, plan.event_date) == ("https://example.org/sleep", "2024-05")
    outcomes = sorted((m.outcome, m.from_id, m.to_id) for m in plan.edges)
    assert outcomes == [("collapsed", keep, rest), ("dropped", keep, keep), ("moved", rest, keep)]
    collapsed = next(m for m in plan.edges if m.outcome == "collapsed")
    assert collapsed.explanation == "sleep is rest; rest restores"  # both explanations kept


def test_a_text_already_contained_is_not_repeated(store):
    keep = store.add_node("A", "Alpha and beta.")["id"]
    other = store.add_node("A copy", "Alpha and beta.")["id"]
    assert merge.plan(store, keep, other).source == "Alpha and beta."


def test_apply_moves_edges_keeps_aliases_and_trashes_the_other_pointing_at_the_kept(store):
    keep, other, rest = duplicates(store)
    node = merge.apply(store, merge.plan(store, keep, other))
    assert node["metadata"]["aliases"] == ["Slumber", "Sleeping well"] and node["dimensions"] == ["health", "rest"]
    with pytest.raises(NotFound):
        store.get_node(other)
    trashed = next(t for t in store.trash() if t["node_id"] == other)
    assert trashed["merged_into"] == keep
    edges = {(e["from_node_id"], e["to_node_id"]): e for e in store.edges(keep)}
    assert set(edges) == {(keep, rest), (rest, keep)}
    assert edges[(keep, rest)]["explanation"] == "sleep is rest; rest restores"
    moved = edges[(rest, keep)]
    assert moved["explanation"] == "rest leads to it" and moved["context"]["type"] == "supports"
    assert moved["context"]["merged_from"] == other
    # One operation, recorded as the merge
    newest = history.changes(store.db, keep)[0]
    assert newest.operation is not None and newest.actor == f"you, merging {other} into {keep}"


def test_the_reviewed_text_is_the_one_written(store):
    keep, other, _ = duplicates(store)
    merge.apply(store, merge.plan(store, keep, other), source="My own combined text.")
    assert store.get_node(keep)["source"] == "My own combined text."


def test_one_undo_takes_the_whole_merge_back(store):
    keep, other, rest = duplicates(store)
    before = snapshot(store, keep, other, rest)
    merge.apply(store, merge.plan(store, keep, other))
    any_change = history.changes(store.db, keep)[1]  # not even the first of the operation
    undone = revert.undo(store, any_change.id)
    assert len(undone) >= 5
    assert snapshot(store, keep, other, rest) == before
    assert store.trash() == []


def test_a_change_after_the_plan_refuses_the_merge_and_writes_nothing(store):
    keep, other, rest = duplicates(store)
    plan = merge.plan(store, keep, other)
    store.add_edge(other, store.add_node("New", "x")["id"], "made after the plan")
    before = snapshot(store, keep, other, rest)
    with pytest.raises(InvalidInput, match="links of the two nodes changed"):
        merge.apply(store, plan)
    assert snapshot(store, keep, other, rest) == before
    plan = merge.plan(store, keep, other)
    store.update_node(keep, source="edited meanwhile")
    with pytest.raises(InvalidInput, match="the kept one"):
        merge.apply(store, plan)


def test_merging_a_node_into_itself_or_a_missing_one_is_refused(store):
    keep = store.add_node("A", "a")["id"]
    with pytest.raises(InvalidInput, match="into itself"):
        merge.plan(store, keep, keep)
    with pytest.raises(NotFound):
        merge.plan(store, keep, 999)


# -- the CLI ---------------------------------------------------------------------------------------------
def cli(capsys, db_path, *argv):
    rc = main([*argv, "--db", str(db_path)])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_cli_merge_shows_the_result_and_asks_first(capsys, db_path, store):
    keep, other, rest = duplicates(store)
    rc, out, err = cli(capsys, db_path, "merge", str(keep), str(other))  # stdin is not a terminal here
    assert rc == 1 and "Pass --yes" in err
    assert "Aliases: Slumber, Sleeping well" in out and "Dark rooms help." in out and "collapsed" in out
    assert store.get_node(other)  # nothing written
    rc, out, _ = cli(capsys, db_path, "merge", str(keep), str(other), "--json")
    assert rc == 0 and json.loads(out)["merged"] is None and store.get_node(other)  # the plan alone
    rc, out, _ = cli(capsys, db_path, "merge", str(keep), str(other), "--yes")
    assert rc == 0 and f"Merged node {other} into node {keep}" in out
    rc, out, _ = cli(capsys, db_path, "trash")
    assert f"merged into {keep}" in out


def test_cli_merge_edit_writes_the_edited_text(capsys, db_path, store, monkeypatch, tmp_path):
    keep, other, _ = duplicates(store)
    script = tmp_path / "editor.sh"
    script.write_text("#!/bin/sh\nprintf 'Edited by hand.\\n' > \"$1\"\n")
    script.chmod(0o755)
    monkeypatch.setenv("VISUAL", str(script))
    rc, out, _ = cli(capsys, db_path, "merge", str(keep), str(other), "--edit", "--yes")
    assert rc == 0 and "Edited by hand." in out
    assert store.get_node(keep)["source"] == "Edited by hand.\n"


# -- the app ---------------------------------------------------------------------------------------------
async def test_the_palette_merges_another_open_tab_after_review(store, db_path):
    from textual.widgets import TextArea

    from tui.app import CairnApp
    from tui.widgets.focus_panel import FocusPanel
    from tui_support import settle, wait_for

    keep, other, rest = duplicates(store)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.right_panes()
        panel = app.query_one(FocusPanel)
        panel.open_node(other)
        panel.open_node(keep)
        await wait_for(pilot, lambda: all(panel.view(n) is not None and panel.view(n).node is not None
                                          for n in (keep, other)) and panel.primary == keep, what="both tabs")
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        command = commands["Focus: merge “Sleeping well” into this node"]
        command.callback()
        await wait_for(pilot, lambda: type(app.screen).__name__ == "MergeReview" and app.screen.plan is not None,
                       what="the merge review")
        screen = app.screen
        summary = str(screen.query_one("#merge-summary").render())
        assert "Aliases: Slumber, Sleeping well" in summary and "collapsed" in summary
        area = screen.query_one(TextArea)
        assert "Dark rooms help." in area.text
        area.load_text("Reviewed text.")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: type(app.screen).__name__ != "MergeReview", what="the merge")
        assert store.get_node(keep)["source"] == "Reviewed text."
        with pytest.raises(NotFound):
            store.get_node(other)
        await wait_for(pilot, lambda: other not in panel.open_ids, what="the merged tab to close")
        await settle(app, pilot)
