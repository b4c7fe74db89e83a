"""Symbolic links never lead an import out of its folder: vault import and sync (core/vault/sync.py), the
watcher (core/vault/watch.py), the folder capture of PDFs and text files (core/capture/files.py) and
`cairn import` (tui/cli). A linked file or folder outside is skipped and listed with the reason; a link
inside the folder brings its file in once. Real files in tmp_path, real links, a real SQLite file."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from core.capture.files import capture_folder
from core.graph.store import Store
from core.vault.sync import VaultSync, import_vault
from core.vault.watch import start_watching

SECRET = "the secret text that lives outside the vault"
OUTSIDE_NOTE = ("notes/secret.md", "a link to a file outside the vault")
OUTSIDE_FOLDER = ("shared/", "a link to a folder outside the vault")
ETC_PASSWD = Path("/etc/passwd")


@pytest.fixture
def vault(tmp_path) -> Path:
    """A vault with links out (a note, /etc/passwd, a folder) and links in (to a note it imports anyway,
    to a note in a hidden folder, to one of its folders), beside a folder outside it."""
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.md").write_text(f"# Secret\n{SECRET}\n", encoding="utf-8")
    (outside / "secret.txt").write_text(f"{SECRET}\n", encoding="utf-8")
    (outside / "dir" / "inner.md").write_text(f"# Inner\n{SECRET}\n", encoding="utf-8")
    (outside / "dir" / "inner.txt").write_text(f"{SECRET}\n", encoding="utf-8")
    v = tmp_path / "vault"
    (v / "notes").mkdir(parents=True)
    (v / ".drafts").mkdir()
    (v / "notes" / "real.md").write_text("# Real\nA note of the vault, links to [[Draft]].\n", encoding="utf-8")
    (v / "notes" / "real.txt").write_text("A text file of the vault.\n", encoding="utf-8")
    (v / ".drafts" / "draft.md").write_text("# Draft\nA draft kept in a hidden folder.\n", encoding="utf-8")
    os.symlink("../../outside/secret.md", v / "notes" / "secret.md")  # relative, out
    if ETC_PASSWD.is_file():
        os.symlink(ETC_PASSWD, v / "notes" / "passwd.md")
    os.symlink(outside / "dir", v / "shared", target_is_directory=True)
    os.symlink(outside / "secret.txt", v / "secret-link.txt")
    os.symlink("notes/real.md", v / "alias.md")  # in, to a note imported under its own path
    os.symlink("notes/real.txt", v / "dup.txt")
    os.symlink(".drafts/draft.md", v / "draft.md")  # in, to a note nothing else imports
    os.symlink("notes", v / "inner", target_is_directory=True)
    return v


def sources(store: Store) -> dict[str, str]:
    return {r[0]: r[1] for r in store.db.execute("SELECT title, source FROM nodes")}


def assert_nothing_from_outside(store: Store) -> None:
    leaked = {title for title, text in sources(store).items() if SECRET in text or "root:" in text}
    assert leaked == set()


def vault_skips() -> list[tuple[str, str]]:
    expected = [("alias.md", "a link to notes/real.md, which is imported itself"),
                ("inner/", "a link to the folder notes/ in the vault (links to folders are not followed)"),
                OUTSIDE_NOTE, OUTSIDE_FOLDER]
    if ETC_PASSWD.is_file():
        expected.append(("notes/passwd.md", "a link to a file outside the vault"))
    return sorted(expected)


def test_a_vault_import_never_follows_a_link_out_of_the_vault(store, vault):
    report = import_vault(store, vault)
    assert sorted(report.skipped) == vault_skips()
    assert_nothing_from_outside(store)
    assert set(sources(store)) == {"Real", "Draft"}  # the hidden draft comes in once, through its link
    paths = {r[0] for r in store.db.execute("SELECT json_extract(metadata, '$.vault.path') FROM nodes")}
    assert paths == {"notes/real.md", "draft.md"}
    assert report.edges == 1  # [[Draft]] resolves to the linked note


def test_a_sync_after_the_import_lists_the_links_again_and_still_follows_none(store, vault, tmp_path):
    sync = VaultSync(store, vault)
    sync.sync()
    again = sync.sync()
    assert sorted(again.skipped) == vault_skips() and again.created == 0
    # a link made later, told to the sync by a file-system event (the watcher's path), is no exception
    os.symlink(tmp_path / "outside" / "secret.md", vault / "later.md")
    (vault / "notes" / "real.md").write_text("# Real\nEdited.\n", encoding="utf-8")
    report = sync.sync(paths=[str(vault / "later.md"), str(vault / "notes" / "real.md")])
    assert ("later.md", "a link to a file outside the vault") in report.skipped
    assert report.updated == 1
    assert_nothing_from_outside(store)
    # a note swapped for a link out between two syncs
    (vault / "draft.md").unlink()
    os.symlink(tmp_path / "outside" / "secret.md", vault / "draft.md")
    report = sync.sync(paths=[str(vault / "draft.md")])
    assert ("draft.md", "a link to a file outside the vault") in report.skipped
    assert_nothing_from_outside(store)


def test_the_watcher_skips_a_link_out_made_while_it_runs(db_path, store, vault, tmp_path):
    ready, changes, errors = threading.Event(), [], []
    watcher = start_watching(db_path, vault, on_ready=lambda r: ready.set(), on_change=changes.append,
                             on_error=errors.append)
    try:
        assert ready.wait(15), f"the initial import did not finish: {watcher.error!r}"
        os.symlink(tmp_path / "outside" / "secret.md", vault / "new-link.md")
        (vault / "fresh.md").write_text("# Fresh\nWritten while watching.\n", encoding="utf-8")
        deadline = time.monotonic() + 15
        while not any(("new-link.md", "a link to a file outside the vault") in r.skipped for r in changes):
            assert time.monotonic() < deadline, f"no report listed the new link: {changes!r}"
            time.sleep(0.05)
        while "Fresh" not in sources(store):
            assert time.monotonic() < deadline, "the note written beside it was not imported"
            time.sleep(0.05)
    finally:
        watcher.stop()
    assert errors == [] and watcher.error is None
    assert_nothing_from_outside(store)


def test_a_folder_capture_never_follows_a_link_out_of_the_folder(store, vault):
    report = capture_folder(store, vault)
    assert sorted(report.skipped) == [
        ("dup.txt", "a link to notes/real.txt, which is captured itself or through another link"),
        ("inner/", "a link to the folder notes/ in the folder (links to folders are not followed)"),
        ("secret-link.txt", "a link to a file outside the folder"),
        ("shared/", "a link to a folder outside the folder"),
    ]
    assert (report.files, report.created) == (1, 1)
    assert_nothing_from_outside(store)
    assert [text.strip() for text in sources(store).values()] == ["A text file of the vault."]


def test_cairn_import_lists_each_link_it_skipped(vault, tmp_path, cairn_cmd, cli_env):
    db = tmp_path / "cli.db"
    done = subprocess.run([*cairn_cmd, "--db", str(db), "import", str(vault), "--no-index"], capture_output=True,
                          text=True, env={**cli_env, "COLUMNS": "200"}, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [line.strip() for line in done.stdout.splitlines()]
    for rel, why in vault_skips():
        assert f"{rel}: {why}" in lines, done.stdout
    assert "secret-link.txt: a link to a file outside the folder" in lines, done.stdout
    with Store(db, readonly=True) as check:
        assert_nothing_from_outside(check)
        assert check.counts()["nodes"] == 3  # Real, Draft, real.txt
