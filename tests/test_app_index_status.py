"""The app's header says how much of the graph meaning search covers (issue 27 item 3) and, while
another process indexes the database, follows that process's run instead of starting its own beside it
(issue 26 finding 5: with the CLI importing, the app started an indexer of its own and nothing said
which process was doing the work). The real app, database, embedder and a real `cairn import`."""

from __future__ import annotations

import re
import subprocess
import threading

import core.index.embedder as embedder_module
from core.graph.store import Store
from tui.app import CairnApp
from tui_support import wait_for


class Recording(CairnApp):
    """The app, keeping every line its header showed."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.shown: list[str] = []

    def watch_sub_title(self, value: str) -> None:
        self.shown.append(value)


class CountingEmbedder:
    """The real embedder, counting embed() calls made in this process (the app's)."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = 0
        self._lock = threading.Lock()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed(self, texts, progress=None):
        with self._lock:
            self.calls += 1
        return self.inner.embed(texts, progress)


async def test_the_header_says_how_much_of_the_graph_meaning_search_covers(db_path, store):
    for i, text in enumerate(["Herons stand in shallow water.", "Trains leave at dawn.", "Bread needs time."]):
        store.add_node(f"Note {i}", text)
    app = Recording(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.sub_title == "meaning search covers 3 of 3 notes", timeout=120,
                       what="the coverage line")
        # the app's own run said how far it was while it ran
        assert any(line.startswith("meaning search covers ") and " of 3 indexed" in line for line in app.shown), app.shown
        with Store(db_path) as other:  # a note saved elsewhere: covered once indexed
            other.add_node("Note 3", "Kites fly on windy days.")
        await wait_for(pilot, lambda: app.sub_title == "meaning search covers 4 of 4 notes", timeout=120,
                       what="the coverage line after a new note")


async def test_the_app_follows_cairn_import_in_another_process_instead_of_indexing(
        db_path, store, tmp_path, cairn_cmd, cli_env, embedder, monkeypatch):
    folder = tmp_path / "vault"
    folder.mkdir()
    for i in range(40):  # notes of a few chunks each: the import's indexing takes a few seconds
        body = "\n\n".join(f"Paragraph {k} of note {i} describes the garden, its beds of beans and the rain "
                           f"gauge by the shed, in some detail and at some length, as gardeners do." for k in range(12))
        (folder / f"note-{i:02}.md").write_text(f"# Garden note {i}\n\n{body}\n", encoding="utf-8")
    counting = CountingEmbedder(embedder)
    monkeypatch.setattr(embedder_module, "_shared", counting)
    app = Recording(db_path, first_run_prompt=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.is_running and not [w for w in app.workers if w.group == "index"
                                                             and not w.is_finished], timeout=60,
                       what="the app's first index pass, over the empty graph")
        assert app.sub_title == ""  # nothing to say about an empty graph
        proc = subprocess.Popen([*cairn_cmd, "--db", str(db_path), "import", str(folder)], env=cli_env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            await wait_for(pilot, lambda: proc.poll() is not None, timeout=600, what="cairn import to finish")
        finally:
            if proc.poll() is None:
                proc.kill()
        out, err = proc.communicate()
        assert proc.returncode == 0, err
        await wait_for(pilot, lambda: app.sub_title == "meaning search covers 40 of 40 notes", timeout=60,
                       what="the coverage line once the other process is done")
    followed = [line for line in app.shown if line.startswith(f"indexing in another process (pid {proc.pid}): ")]
    assert followed, app.shown
    assert any(re.search(r": \d+ of 40\b", line) for line in followed), followed
    assert counting.calls == 0  # the app embedded nothing: the import's own run did it all
    assert "Indexed 40 nodes" in out
