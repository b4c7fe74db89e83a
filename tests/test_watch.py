"""Folder sync (core.watch) with real watchfiles on a temp folder, the watcher in its own thread.

Each check polls the database until the change shows (failing after a generous timeout); nothing
asserts how fast it happened."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from core.config import ConfigError, load
from core.store import Store
from core.watch import Watcher, relevant, start_from_config, start_watching

TIMEOUT = 15.0


def wait_until(check, timeout: float = TIMEOUT, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def node_at(store: Store, rel: str):
    row = store.db.execute(
        "SELECT id FROM nodes WHERE json_extract(metadata, '$.vault.path') = ?", (rel,)).fetchone()
    return store.get_node(row[0]) if row else None


@pytest.fixture
def vault(tmp_path) -> Path:
    v = tmp_path / "vault"
    v.mkdir()
    (v / "Start.md").write_text("# Start\nLinks to [[Later]].\n", encoding="utf-8")
    return v


@pytest.fixture
def running(db_path, vault, store):
    ready = threading.Event()
    changes, errors = [], []
    watcher = start_watching(db_path, vault, on_ready=lambda r: ready.set(), on_change=changes.append,
                             on_error=errors.append)
    assert ready.wait(TIMEOUT), f"the initial import did not finish: {watcher.error!r}"
    yield watcher, changes, errors
    watcher.stop()
    assert not watcher.running
    assert errors == [] and watcher.error is None


def test_create_edit_save_rename_delete(running, store, vault):
    watcher, changes, _ = running
    start = wait_until(lambda: node_at(store, "Start.md"), what="the initial import")
    assert store.edges(start["id"]) == []  # [[Later]] does not exist yet

    # create: the node appears and the waiting link becomes an edge
    (vault / "Later.md").write_text("# Later\nfirst version\n", encoding="utf-8")
    later = wait_until(lambda: node_at(store, "Later.md"), what="the created note")
    wait_until(lambda: store.edges(start["id"]), what="the edge from Start to Later")

    # edit in place
    with open(vault / "Later.md", "a", encoding="utf-8") as fh:
        fh.write("appended line\n")
    wait_until(lambda: "appended line" in store.get_node(later["id"])["source"], what="the edit")

    # an editor's atomic save: write a temp file, then rename it over the note
    tmp = vault / ".Later.md.tmp123"
    tmp.write_text("# Later\nsaved atomically\n", encoding="utf-8")
    os.replace(tmp, vault / "Later.md")
    wait_until(lambda: "saved atomically" in store.get_node(later["id"])["source"], what="the atomic save")

    # vim's save: probe file 4913, backup Later.md~, write the new file, drop the backup; plus a swap file
    (vault / ".Later.md.swp").write_bytes(b"\x00swap")
    (vault / "4913").write_text("")
    (vault / "4913").unlink()
    os.rename(vault / "Later.md", vault / "Later.md~")
    (vault / "Later.md").write_text("# Later\nsaved by vim\n", encoding="utf-8")
    (vault / "Later.md~").unlink()
    (vault / ".Later.md.swp").unlink()
    wait_until(lambda: (n := node_at(store, "Later.md")) and "saved by vim" in n["source"], what="the vim save")
    assert node_at(store, "Later.md")["id"] == later["id"]
    assert store.trash() == [] and store.counts()["nodes"] == 2

    # rename into a sub-folder: same node, new path, edges kept
    (vault / "sub").mkdir()
    os.rename(vault / "Later.md", vault / "sub" / "Renamed.md")
    moved = wait_until(lambda: node_at(store, "sub/Renamed.md"), what="the rename")
    assert moved["id"] == later["id"]
    # [[Later]] still resolves (by the note's title now that the file name changed): the edge stays.
    assert [e["to_node_id"] for e in store.edges(start["id"], "out")] == [later["id"]]
    assert store.trash() == []

    # delete: the node goes to the trash and can be restored
    (vault / "sub" / "Renamed.md").unlink()
    wait_until(lambda: store.trash(), what="the deleted note in the trash")
    assert [t["node_id"] for t in store.trash()] == [later["id"]]
    assert store.restore_node(later["id"])["title"] == "Later"
    assert any(r.trashed for r in changes) and any(r.renamed for r in changes)


def test_rename_keeps_edges_pointing_at_it(running, store, vault):
    (vault / "Target.md").write_text("# Target\n", encoding="utf-8")
    (vault / "Pointer.md").write_text("# Pointer\n[[Target]]\n", encoding="utf-8")
    target = wait_until(lambda: node_at(store, "Target.md"), what="Target")
    pointer = wait_until(lambda: node_at(store, "Pointer.md"), what="Pointer")
    wait_until(lambda: store.edges(pointer["id"], "out"), what="the edge")
    edge_id = store.edges(pointer["id"], "out")[0]["id"]
    (vault / "folder").mkdir()
    os.rename(vault / "Target.md", vault / "folder" / "Target.md")  # same name: [[Target]] still resolves
    wait_until(lambda: node_at(store, "folder/Target.md"), what="the move")
    assert node_at(store, "folder/Target.md")["id"] == target["id"]
    assert [e["id"] for e in store.edges(pointer["id"], "out")] == [edge_id]


def test_stop_ends_the_thread(db_path, vault):
    watcher = start_watching(db_path, vault)
    wait_until(lambda: watcher.running, what="the thread to start")
    time.sleep(0.2)
    watcher.stop(timeout=TIMEOUT)
    assert not watcher.running and watcher.error is None


def test_missing_folder_is_reported(db_path, tmp_path):
    from core.errors import InvalidInput

    with pytest.raises(InvalidInput, match="does not exist"):
        start_watching(db_path, tmp_path / "nope")


def test_config_key(db_path, vault, tmp_path):
    cfg_path = tmp_path / "config.toml"
    cfg_path.write_text(f'[vault]\nwatch = "{vault}"\n', encoding="utf-8")
    cfg = load(cfg_path)
    assert cfg.vault_watch == str(vault)
    ready = threading.Event()
    watcher = start_from_config(cfg, db_path, on_ready=lambda r: ready.set())
    try:
        assert isinstance(watcher, Watcher) and ready.wait(TIMEOUT)
    finally:
        watcher.stop()
    assert start_from_config(load(tmp_path / "absent.toml"), db_path) is None
    cfg_path.write_text('[vault]\nwatch = 3\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="vault.watch"):
        load(cfg_path)
    cfg_path.write_text('[vault]\nwach = "x"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown setting `vault.wach`"):
        load(cfg_path)


def test_filter_ignores_temp_and_hidden_files(tmp_path):
    keep = relevant(tmp_path)
    assert keep(None, str(tmp_path / "a.md")) and keep(None, str(tmp_path / "sub" / "b.md"))
    assert keep(None, str(tmp_path / "sub"))
    for name in (".a.md.swp", "a.md~", "4913", ".obsidian/workspace.json", "sub/.git/x", "#a.md#", "a.md.tmp"):
        assert not keep(None, str(tmp_path / name)), name
