"""One index run at a time per database (issue 16 item 1): between threads, between processes
(`cairn index` beside the app), stoppable between batches, and the app's warm-up loads the model.

The embedder here is the real one, wrapped to count how many `embed` calls overlap and, where a test
needs a run held mid-batch, to wait on an event inside its first call."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core.graph.store import Store
from core.index.indexer import Indexer
from core.index.run_lock import RunLock, held, lock_path


ROOT = Path(__file__).resolve().parent.parent


class CountingEmbedder:
    """The real embedder, counting overlapping embed() calls; `hold` blocks the first call until set."""

    def __init__(self, inner, hold: threading.Event | None = None):
        self.inner = inner
        self.hold = hold
        self.entered = threading.Event()
        self.active = 0
        self.most = 0
        self.calls = 0
        self._lock = threading.Lock()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed(self, texts, progress=None):
        with self._lock:
            self.active += 1
            self.calls += 1
            self.most = max(self.most, self.active)
            first = self.calls == 1
        try:
            self.entered.set()
            if first and self.hold is not None:
                assert self.hold.wait(60), "the test never released the held batch"
            return self.inner.embed(texts, progress)
        finally:
            with self._lock:
                self.active -= 1


def notes(store, n: int, words: int = 40) -> None:
    for i in range(n):
        store.add_node(f"Note {i}", " ".join(f"word{(i * 7 + k) % 97}" for k in range(words)) + ".")


def pending(db_path) -> int:
    with Store(db_path, readonly=True) as s:
        return s.db.execute("SELECT COUNT(*) FROM nodes WHERE chunk_status = 'pending'").fetchone()[0]


def test_two_runs_in_two_threads_never_embed_at_once(db_path, store, embedder):
    notes(store, 60)
    counting = CountingEmbedder(embedder)
    reports = []

    def run():
        with Store(db_path) as own:
            reports.append(Indexer(own, counting, batch_nodes=8).run())

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert counting.most == 1  # the second run waited for the first one's lock
    assert sum(r.indexed for r in reports) == 60 and pending(db_path) == 0
    assert sorted(r.indexed for r in reports) == [0, 60]  # the second found nothing left to embed


def test_a_run_stops_between_batches_and_a_stopped_wait_does_nothing(db_path, store, embedder):
    notes(store, 30)
    calls = []
    # Stopped once the first batch is written: the next one, embedding meanwhile, is dropped unwritten.
    first = Indexer(store, embedder, batch_nodes=5).run(should_stop=lambda: calls and calls[-1] >= 5,
                                                        progress=lambda p: calls.append(p.notes_done))
    assert first.stopped and first.indexed == 5 and pending(db_path) == 25  # one batch, then the stop
    other = RunLock(db_path)
    assert other.try_acquire()
    try:
        waited = []
        report = Indexer(store, embedder).run(should_stop=lambda: True, on_wait=lambda: waited.append(1))
        assert report.busy and report.indexed == 0 and waited == []  # stopped before it had to say so
        stops = iter([False, False, True])
        report = Indexer(store, embedder).run(should_stop=lambda: next(stops), on_wait=lambda: waited.append(1))
        assert report.busy and waited == [1]  # said once that it waits, then gave up
    finally:
        other.release()
    assert Indexer(store, embedder).run().indexed == 25  # the rest, once the lock is free


def test_a_killed_holder_frees_the_lock(db_path, tmp_path):
    """The kernel drops a dead process's flock: a kill never leaves the database locked."""
    Store(db_path).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; from core.index.run_lock import RunLock; "
         f"l = RunLock({str(db_path)!r}); assert l.try_acquire(); print('held', flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert not RunLock(db_path).try_acquire()
    finally:
        holder.kill()
        holder.wait(10)
    lock = RunLock(db_path)
    assert lock.try_acquire()
    lock.release()
    assert lock_path(db_path).exists()


def test_cairn_index_waits_for_the_app_and_says_so(db_path, store, cairn_cmd, cli_env):
    notes(store, 3)
    with held(db_path) as mine:  # as the app's run would hold it
        assert mine
        proc = subprocess.Popen([*cairn_cmd, "--db", str(db_path), "index"], env=cli_env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = proc.stderr.readline()
        assert "Another Cairn process (the app, or cairn index) is indexing this database; waiting" in line
        assert proc.poll() is None and pending(db_path) == 3  # nothing embedded beside the other run
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "Indexed 3 nodes" in out and pending(db_path) == 0


async def test_the_app_runs_one_index_at_a_time_and_quits_after_one_batch(db_path, store, embedder, monkeypatch):
    import core.index.embedder as embedder_module
    import core.index.indexer as indexer_module
    from tui.app import CairnApp

    monkeypatch.setattr(indexer_module, "BATCH_INPUTS", 16)  # many small batches: a stop has room to land
    notes(store, 200, words=30)
    hold = threading.Event()
    counting = CountingEmbedder(embedder, hold)
    monkeypatch.setattr(embedder_module, "_shared", counting)
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(100, 30)) as pilot:
        deadline = time.monotonic() + 60
        while not counting.entered.is_set() and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert counting.entered.is_set(), "the app did not start indexing"
        for _ in range(3):
            app.index_pending()  # as the welcome screen and the database watcher each did
            await pilot.pause(0.05)
        hold.set()  # the first batch goes on; the newer runs wait for its lock
        await pilot.pause(0.3)
    # Quitting cancelled the run: its thread stops after the batch it is in instead of embedding the
    # other notes (a thread outlives the app; without the stop it went on until none was pending).
    quiet_since, calls = time.monotonic(), counting.calls
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and (counting.active or time.monotonic() - quiet_since < 2.0):
        if counting.calls != calls:
            quiet_since, calls = time.monotonic(), counting.calls
        time.sleep(0.05)
    assert counting.most == 1  # never two runs embedding at once
    assert pending(db_path) > 0, "the run went on after the app quit"


async def test_the_apps_warm_up_loads_the_model(db_path, store, monkeypatch):
    import core.index.embedder as embedder_module
    from tui.app import CairnApp

    embedder = embedder_module.Embedder()  # not the session's shared one: that one is loaded already
    monkeypatch.setattr(embedder_module, "_shared", embedder)
    store.add_node("One", "A note, so the list has a row.")
    assert "_session" not in embedder.__dict__
    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(100, 30)) as pilot:
        deadline = time.monotonic() + 60
        while "_session" not in embedder.__dict__ and time.monotonic() < deadline:
            await pilot.pause(0.05)
    assert "_session" in embedder.__dict__ and "tokenizer" in embedder.__dict__


def test_cairn_index_says_what_meaning_search_covers_and_gives_no_empty_rate(db_path, store, cairn_cmd, cli_env):
    """Issue 26, finding 5: the summary read "0.0 nodes/s" for a slow run of few nodes; now a rate is in
    chunks, and only for a run of a second or more, and the summary says what meaning search reaches."""
    notes(store, 3)
    done = subprocess.run([*cairn_cmd, "--db", str(db_path), "index"], env=cli_env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "Indexed 3 nodes" in done.stdout and "meaning search covers 3 of 3 nodes." in done.stdout
    assert "nodes/s" not in done.stdout
    store.add_node("One more", "A fourth note.")
    as_json = subprocess.run([*cairn_cmd, "--db", str(db_path), "index", "--json"], env=cli_env,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    report = json.loads(as_json.stdout)
    assert report["indexed"] == 1 and (report["covered"], report["nodes"]) == (4, 4)


def test_ctrl_c_while_the_model_embeds_a_batch_ends_cairn_index_cleanly(db_path, store, ctrl_c_cairn_cmd, cli_env):
    """A Ctrl-C that lands while `cairn index` waits for the model used to end the process with
    onnxruntime's abort (exit 134, "terminate called without an active exception"): the interrupted
    Thread.join let the process exit under the running model. It says it was interrupted, exits 130,
    and what it committed stays (core/index/background_embedding.py)."""
    import signal

    from core.index.indexer import coverage

    paragraph = "The harbour pilot boards each ship at the outer buoy and steers it through the channel. "
    for i in range(40):  # long notes: the second pass is one long batch, embedded after every note is reached
        store.add_node(f"Pilot log {i}", "\n\n".join(f"Entry {i}.{k}. " + paragraph * 12 for k in range(12)))
    proc = subprocess.Popen([*ctrl_c_cairn_cmd, "--db", str(db_path), "index"], env=cli_env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    with Store(db_path, readonly=True) as reader:
        while coverage(reader.db) != (40, 40) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
    time.sleep(0.5)  # the first pass written: the run now waits for the model's long second batch
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert "terminate called" not in err and "Aborted" not in err, err
    assert proc.returncode == 130, err
    assert "interrupted; committed work is kept" in err
    with Store(db_path, readonly=True) as reader:
        assert coverage(reader.db) == (40, 40)  # the first pass, committed before the Ctrl-C, is kept


def test_cairn_index_says_when_the_process_it_waited_for_did_the_work(db_path, store, embedder, cairn_cmd, cli_env):
    notes(store, 3)
    with held(db_path) as mine:  # as the app's run would hold it
        assert mine
        proc = subprocess.Popen([*cairn_cmd, "--db", str(db_path), "index"], env=cli_env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert "waiting for it to finish" in proc.stderr.readline()
        Indexer(store, embedder)._run(None, None, None)  # the holder's own run (it holds the lock already)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "The other process indexed them; meaning search covers 3 of 3 nodes." in out, out
    assert "Indexed 0 nodes" not in out
