"""Keep the database in step with a folder of markdown notes while it changes.

`watch()` imports the folder once, then waits for file-system events (watchfiles) and, for each
batch, runs the same `VaultSync.sync` again: it re-reads only files whose size or mtime changed, so
an editor's save dance (vim's `4913` probe and `foo.md~` backup, `.foo.md.swp`, write-to-temp then
rename) ends as one update of `foo.md`. Event types are not trusted, the folder is: after each batch
the files on disk are compared with what was seen before. A file that disappears is moved to the
trash (restorable with `cairn restore`) after a short grace period, unless a file with the same
content (or, within one batch, the only new file) appeared elsewhere: then it was a rename, and the
node keeps its id, edges and history with its new path.

A change costs what it touches, not the folder's size: for a small batch of notes saved or created
only the paths the events name are looked at (a stat each, no walk of the folder), and only the
edges the change can affect are reconciled (VaultSync._rescan, VaultSync._refresh_links). A path
that is gone (a delete or a move), a folder or an attachment among them, a timeout, and
RESCAN_SECONDS since the last full scan (in case an event was lost) scan the whole folder instead.
One saved note in a 10k-note vault is a few milliseconds after watchfiles' debounce (bench/io.py).

The running app starts it in a thread with `start_from_config(config, db_path, ...)`; `cairn watch`
runs `watch()` in the foreground.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Callable

from core.errors import CairnError, InvalidInput
from core.graph.store import Store
from core.vault.sync import Progress, SyncReport, VaultSync

DELETE_GRACE = 0.3  # seconds a vanished file may take to come back (delete-then-write saves)
RESCAN_SECONDS = 60  # a full rescan this often when nothing happens, in case an event was lost
TWO_WAY_POLL = 0.1  # seconds between looks at the database for a bound folder (a PRAGMA: cheap; 0.25 added 0.125 s to a save on average)
_TEMP_SUFFIXES = (".swp", ".swx", ".swo", ".tmp", ".part", ".crdownload", ".bak")

OnReport = Callable[[SyncReport], None]


def relevant(root: Path) -> Callable[[object, str], bool]:
    """watchfiles filter: hidden paths, editors' temp files and backups are not worth a rescan."""
    root_str = str(root)

    def keep(change: object, path: str) -> bool:
        rel = os.path.relpath(path, root_str)
        parts = [p for p in rel.split(os.sep) if p not in ("", ".")]
        if not parts or any(p.startswith(".") for p in parts):
            return False
        name = parts[-1]
        if name.endswith("~") or name.lower().endswith(_TEMP_SUFFIXES) or name.isdigit():
            return False
        return not (name.startswith("#") and name.endswith("#"))

    return keep


def watch(
    store: Store,
    folder: str | Path,
    stop_event: threading.Event | None = None,
    on_change: OnReport | None = None,
    *,
    on_ready: OnReport | None = None,
    on_error: Callable[[Exception], None] | None = None,
    progress: Progress | None = None,
    debounce_ms: int = 1_600,
    step_ms: int = 50,
    two_way: bool = False,
    new_notes: str = "",
    on_round: Callable[[object], None] | None = None,
) -> None:
    """Import `folder`, then keep the store in step with it until `stop_event` is set (or Ctrl-C in the
    main thread, which raises KeyboardInterrupt). `on_ready(report)` gets the initial import's report,
    `on_change(report)` each later sync that changed something; both run in this thread. A sync that
    fails (say, the database stayed locked) goes to `on_error` and watching goes on; without
    `on_error` it is raised. The folder disappearing ends the watch with InvalidInput.

    `two_way` (a bound folder, `[vault] path`): each step is a round both ways (core/vault/twoway.py), and
    a change to the database made by another connection (the app saving a note) starts one too: the
    database is looked at every TWO_WAY_POLL seconds (its `data_version`, which this connection's own
    writes leave alone, so the watcher's writes start nothing). `on_round(report)` gets each round's
    RoundReport (the first one too): what went to the files, the conflicts kept, the notes made in Cairn
    that would get a file once the user agrees (`would_create`)."""
    import watchfiles

    # Read before each round, never after: a save made by another connection while a round runs starts
    # the next one (this connection's own writes leave data_version as it is).
    seen_version = store.db.execute("PRAGMA data_version").fetchone()[0]
    rounds = None
    if two_way:
        from core.vault.twoway import TwoWaySync

        rounds = TwoWaySync(store, folder)
        sync = rounds.importer
        first = rounds.round(new_notes=new_notes, progress=progress)
        report = first.imported
    else:
        sync = VaultSync(store, folder)
        report = sync.sync(progress)
    if on_ready:
        on_ready(report)
    if rounds is not None and on_round:
        on_round(first)
    last = time.monotonic()
    first_tick = True
    for changes in watchfiles.watch(
        sync.root, watch_filter=relevant(sync.root), stop_event=stop_event, debounce=debounce_ms, step=step_ms,
        rust_timeout=int(TWO_WAY_POLL * 1000) if two_way else 5_000, yield_on_timeout=True, raise_interrupt=True,
    ):
        if stop_event is not None and stop_event.is_set():
            break
        saved_elsewhere = False
        if rounds is not None:
            version = store.db.execute("PRAGMA data_version").fetchone()[0]
            saved_elsewhere, seen_version = version != seen_version, version
        if not changes and not saved_elsewhere:  # a timeout: rescan at start (changes made before the watch began) and now and then
            if not first_tick and time.monotonic() - last < RESCAN_SECONDS:
                continue
        starting, first_tick = first_tick, False
        last = time.monotonic()
        if not sync.root.is_dir():
            raise InvalidInput(f"The watched folder {sync.root} is gone; stopped watching.")
        # The events' paths (never their types) say where to look; the whole folder is scanned on a
        # timeout, and at least every RESCAN_SECONDS, in case an event was lost (an inotify overflow).
        paths = None if not changes or last - sync.last_full_scan >= RESCAN_SECONDS else {p for _, p in changes}
        if saved_elsewhere and not changes and not starting and last - sync.last_full_scan < RESCAN_SECONDS:
            paths = set()  # only the database changed: no file to look at (the round's own writes come as events)
        try:
            if rounds is not None:
                if paths == set():  # only the database changed: Cairn's side alone (no file changed to import)
                    this_round = rounds.write_back(new_notes=new_notes)
                else:
                    this_round = rounds.round(new_notes=new_notes, paths=paths, pair_renames=True,
                                              prune_grace=DELETE_GRACE)
                report = this_round.imported
                if on_round:
                    on_round(this_round)
            else:
                report = sync.sync(prune=True, pair_renames=True, prune_grace=DELETE_GRACE, paths=paths)
        except CairnError as exc:
            if not sync.root.is_dir():
                raise InvalidInput(f"The watched folder {sync.root} is gone; stopped watching.") from None
            if on_error is None:
                raise
            on_error(exc)
            continue
        if on_change and report is not None and (report.changes or report.skipped or report.missing):
            on_change(report)


class Watcher:
    """`watch()` in a daemon thread with its own database connection (SQLite connections belong to
    one thread). `stop()` ends it within about a second."""

    def __init__(self, db_path: str | Path, folder: str | Path, *, on_change: OnReport | None = None,
                 on_ready: OnReport | None = None, on_error: Callable[[Exception], None] | None = None,
                 two_way: bool = False, new_notes: str = "", on_round: Callable[[object], None] | None = None):
        self.two_way, self.new_notes, self.on_round = two_way, new_notes, on_round
        self.db_path = Path(db_path)
        self.folder = Path(folder).expanduser()
        self.on_change, self.on_ready, self.on_error = on_change, on_ready, on_error
        self.stop_event = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name=f"cairn-watch:{self.folder}", daemon=True)

    def start(self) -> "Watcher":
        self.thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self.stop_event.set()
        if self.thread.is_alive() and threading.current_thread() is not self.thread:
            self.thread.join(timeout)

    @property
    def running(self) -> bool:
        return self.thread.is_alive()

    def _run(self) -> None:
        try:
            with Store(self.db_path) as store:
                watch(store, self.folder, self.stop_event, self.on_change, on_ready=self.on_ready,
                      on_error=self.on_error, two_way=self.two_way, new_notes=self.new_notes, on_round=self.on_round)
        except Exception as exc:  # reported, never raised into a thread nobody joins
            self.error = exc
            if self.on_error:
                self.on_error(exc)


def start_watching(db_path: str | Path, folder: str | Path, **callbacks) -> Watcher:
    """Start keeping `db_path` in step with `folder` in a background thread; returns the Watcher
    (call `.stop()` on exit). Callbacks (`on_ready`, `on_change`, `on_error`) run in that thread."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise InvalidInput(f"The folder to watch, {folder}, does not exist.")
    return Watcher(db_path, folder, **callbacks).start()


def start_from_config(config, db_path: str | Path, **callbacks) -> Watcher | None:
    """What the app calls at start: keep the bound folder (`vault.path`, or the older name `vault.watch`)
    in step both ways, if one is set (else None). Raises InvalidInput when the folder does not exist."""
    folder = config.vault.bound
    if not folder:
        return None
    return start_watching(db_path, folder, two_way=True, new_notes=config.vault.new_notes, **callbacks)
