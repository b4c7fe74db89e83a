"""Folder sync (core.vault.watch) with real watchfiles on a temp folder, the watcher in its own thread.

Each check polls the database until the change shows (failing after a generous timeout); nothing
asserts how fast it happened."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from core.config import ConfigError, load
from core.graph.store import Store
from core.vault.watch import Watcher, relevant, start_from_config, start_watching

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
    # (the report reaches on_change a moment after the trash is committed)
    wait_until(lambda: any(r.trashed for r in changes), what="the report of the delete")
    assert store.restore_node(later["id"])["title"] == "Later"
    assert any(r.renamed for r in changes)


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
    assert cfg.vault.watch == str(vault)
    ready = threading.Event()
    watcher = start_from_config(cfg, db_path, on_ready=lambda r: ready.set())
    try:
        assert isinstance(watcher, Watcher) and ready.wait(TIMEOUT)
        assert watcher.two_way  # the older name means what vault.path means: both ways (issue 23)
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


# -- only what a change can affect is looked at again (VaultSync._refresh_links) -----------------
def out_edges(store: Store, node) -> dict[int, str]:
    return {e["to_node_id"]: e["explanation"] for e in store.edges(node["id"], "out")}


def test_a_new_note_resolves_links_waiting_for_it(running, store, vault):
    (vault / "Other.md").write_text("# Other\nSee [[Soon]] and [[Start]].\n", encoding="utf-8")
    other = wait_until(lambda: node_at(store, "Other.md"), what="Other")
    start = wait_until(lambda: node_at(store, "Start.md"), what="Start")
    wait_until(lambda: out_edges(store, other), what="the edge from Other to Start")
    kept = store.edges(other["id"], "out")[0]["id"]
    assert out_edges(store, start) == {}  # [[Later]] resolves to nothing yet, nor does [[Soon]]
    # One new note answers to both waiting links: [[Later]] by its file name, [[Soon]] by an alias.
    (vault / "Later.md").write_text("---\naliases: [Soon]\n---\n# Later\n", encoding="utf-8")
    later = wait_until(lambda: node_at(store, "Later.md"), what="Later")
    wait_until(lambda: later["id"] in out_edges(store, start), what="the edge from Start to Later")
    wait_until(lambda: later["id"] in out_edges(store, other), what="the edge from Other to Later")
    assert set(out_edges(store, other)) == {start["id"], later["id"]}
    assert kept in [e["id"] for e in store.edges(other["id"], "out")]  # the edge that was right is untouched


def test_retitling_a_note_repoints_links_that_used_the_title(running, store, vault):
    (vault / "target.md").write_text("---\ntitle: Old Name\n---\nbody\n", encoding="utf-8")
    (vault / "A.md").write_text("# A\nabout [[Old Name]]\n", encoding="utf-8")
    (vault / "B.md").write_text("# B\nabout [[New Name]]\n", encoding="utf-8")
    target = wait_until(lambda: node_at(store, "target.md"), what="target")
    a = wait_until(lambda: node_at(store, "A.md"), what="A")
    b = wait_until(lambda: node_at(store, "B.md"), what="B")
    wait_until(lambda: target["id"] in out_edges(store, a), what="the edge from A to the note titled Old Name")
    assert out_edges(store, b) == {}
    (vault / "target.md").write_text("---\ntitle: New Name\n---\nbody\n", encoding="utf-8")
    wait_until(lambda: target["id"] in out_edges(store, b), what="the edge from B to the note now titled New Name")
    wait_until(lambda: out_edges(store, a) == {}, what="A's link to the old title to go")
    assert store.get_node(target["id"])["title"] == "New Name"


def _fresh_check(store, folder, report):
    """A full import of the same folder (a new VaultSync checks every link and edge) finds nothing to
    change and counts the same links: the incremental sync left the database as a full one would."""
    from core.vault.sync import VaultSync

    full = VaultSync(store, folder).sync(prune=True)
    assert (full.created, full.renamed, full.trashed, full.edges_created, full.edges_removed, full.edges_updated) \
        == (0, [], [], 0, 0, 0)
    for key in ("files", "other_files", "edges", "wikilinks", "wikilinks_resolved", "same_note_links", "md_links",
                "md_links_resolved", "unresolved", "attachments"):
        assert getattr(report, key) == getattr(full, key), key


def test_a_note_back_from_the_trash_does_not_bring_back_links_since_removed(store, tmp_path):
    from core.vault.sync import VaultSync

    v = tmp_path / "v"
    v.mkdir()
    (v / "A.md").write_text("# A\n[[X]] [[Y]]\n", encoding="utf-8")
    (v / "X.md").write_text("# X\n", encoding="utf-8")
    (v / "Y.md").write_text("# Y\n", encoding="utf-8")
    sync = VaultSync(store, v)
    sync.sync(prune=True)
    (v / "X.md").unlink()
    sync.sync(prune=True, paths=[str(v / "X.md")])  # X (and its edge from A) to the trash
    (v / "A.md").write_text("# A\n[[Y]]\n", encoding="utf-8")
    sync.sync(prune=True, paths=[str(v / "A.md")])
    (v / "X.md").write_text("# X\n", encoding="utf-8")
    report = sync.sync(prune=True, paths=[str(v / "X.md")])  # restored, with its old edges
    assert report.restored == 1
    _fresh_check(store, v, report)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_incremental_syncs_leave_what_a_full_import_would(store, tmp_path, seed):
    """Random creates, edits (titles, aliases, links by name, title, alias, path, embeds of notes
    and attachments), renames, deletes and attachments come and go; after each sync given only the
    changed paths (as the watcher does), a full import changes nothing."""
    import random

    from core.vault.sync import VaultSync

    rng = random.Random(seed)
    v = tmp_path / "v"
    v.mkdir()
    names = [f"N{i}" for i in range(10)] + ["n1"]
    folders = ["", "a/", "b/", "a/c/"]

    def text() -> str:
        front = []
        if rng.random() < 0.3:
            front.append(f"title: {rng.choice(names)} t")
        if rng.random() < 0.3:
            front.append(f"aliases: [{rng.choice(names)}x]")
        links = []
        for _ in range(rng.randint(0, 5)):
            n = rng.choice(names)
            links.append(rng.choice([f"[[{n}]]", f"[[{n} t]]", f"[[{n}x|shown]]", f"[[{rng.choice(folders)}{n}]]",
                                     f"![[img{rng.randint(0, 2)}.png]]", f"![[doc{rng.randint(0, 2)}]]",
                                     f"[[../{n}]]", f"[[{n}#Part]]"]))
        head = "---\n" + "\n".join(front) + "\n---\n" if front else ""
        return head + f"# H{rng.randint(0, 2)}\n" + " ".join(links) + f"\n{rng.random()}\n"

    def new_path() -> Path:
        p = v / (rng.choice(folders) + rng.choice(names) + ".md")
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    for _ in range(8):
        new_path().write_text(text(), encoding="utf-8")
    sync = VaultSync(store, v)
    sync.sync(prune=True)
    for _ in range(40):
        notes = sorted(v.rglob("*.md"))
        op, changed = rng.random(), []
        if op < 0.3 or not notes:
            p = new_path()
            p.write_text(text(), encoding="utf-8")
            changed.append(p)
        elif op < 0.6:
            p = rng.choice(notes)
            p.write_text(text(), encoding="utf-8")
            changed.append(p)
        elif op < 0.75:
            a, b = rng.choice(notes), new_path()
            if not b.exists():
                os.rename(a, b)
                changed += [a, b]
        elif op < 0.85:
            p = rng.choice(notes)
            p.unlink()
            changed.append(p)
        else:
            p = v / (rng.choice(folders) + f"doc{rng.randint(0, 2)}")
            p.parent.mkdir(parents=True, exist_ok=True)
            p.unlink() if p.exists() else p.write_text("x", encoding="utf-8")
            changed.append(p)
        report = sync.sync(prune=True, pair_renames=True, paths=[str(p) for p in changed])
        _fresh_check(store, v, report)


def test_cairn_watch_keeps_both_ways_in_step(cairn_cmd, ctrl_c_cairn_cmd, cli_env, tmp_path):
    """`cairn watch` (no folder: the bound one) writes an edit made in Cairn by another command to its
    file, and imports an edit of the file, until Ctrl-C."""
    import json
    import signal
    import subprocess

    vault = tmp_path / "bound"
    vault.mkdir()
    (vault / "Basil.md").write_text("Basil likes warmth.\n", encoding="utf-8")

    def cairn(*args):
        return subprocess.run([*cairn_cmd, *map(str, args)], env=cli_env, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)

    assert cairn("config", "set", "vault.watch", vault).returncode == 0  # the older key: the same binding
    proc = subprocess.Popen([*ctrl_c_cairn_cmd, "watch", "--no-index"], env=cli_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    try:
        db = Path(cli_env["CAIRN_HOME"]) / "cairn.db"
        wait_until(lambda: db.exists() and '"Basil"' in cairn("search", "Basil", "--json").stdout,
                   timeout=60, what="the first round")
        node = json.loads(cairn("search", "Basil", "--json").stdout)[0]
        assert cairn("edit", node["id"], "--text", "Basil likes warmth and shelter.").returncode == 0
        wait_until(lambda: "shelter" in (vault / "Basil.md").read_text(encoding="utf-8"), timeout=30,
                   what="Cairn's edit to reach the file")
        (vault / "Basil.md").write_text("Basil likes warmth, shelter and water.\n", encoding="utf-8")
        wait_until(lambda: "water" in json.loads(cairn("show", node["id"], "--json").stdout)["source"],
                   timeout=30, what="the file's edit to reach Cairn")
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "in step both ways" in out and "Stopped watching." in out
    # Cairn's edit reached the file (written by the command as it ended, or by the watcher's round if that
    # came first): either way it is not imported back as a change of the file; the file's own edit is
    assert out.count("updated Basil.md") == 1, out
