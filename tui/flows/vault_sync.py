"""What the folder watcher's two-way rounds (core/vault/watch.py, core/vault/twoway.py) mean for the
user of the app, kept out of the App.

- The first-sync question: the first round that finds notes made in Cairn with no file in the folder
  (`would_create`) asks, once per run, whether to write them and every new note from now on. Yes
  records the agreement (the meta key TwoWaySync._new_files reads) through the app's store in a worker;
  the watcher sees the database change and writes the files in its next round, and a toast says so.
  No says that `cairn sync --yes` does it later.
- Sync conflicts: after the first round, and after any round that kept a new conflict, the open
  conflicts are counted in a worker and a toast says how many and how to open them (the key of
  `sync_conflicts`, or the palette's "Sync: conflicts"). An open conflicts dialog lists them again.

`after_round` runs on the UI thread (the app hands it each round with call_from_thread).
"""

from __future__ import annotations

from core.safe_text import printable

LIST_CAP = 8  # titles named in the question; the rest are counted
NEW_NOTES_KEY = "vault_new_notes:{}"  # TwoWaySync._new_files: set once the user agreed, per folder


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def conflicts_key(app) -> str:
    """The key that opens the conflicts, as mapped now (the config's [keymap] may move it)."""
    from tui.screens.help import display_key

    keymap = getattr(app, "_keymap", {}) or {}
    keys = keymap.get("sync_conflicts") or "f6"
    return display_key(keys.split(",")[0].strip())


class VaultSyncFlow:
    """The app's side of one bound folder's sync, for one run of the app."""

    def __init__(self, app, folder: str):
        self.app = app
        self.folder = folder  # as the config names it: what the user recognises
        self.rounds = 0
        self.asked = False  # the first-sync question is asked once per run at most
        self.agreed = False  # Yes was answered: the round that writes the files says so

    def after_round(self, report) -> None:
        first = self.rounds == 0
        self.rounds += 1
        if report.created and self.agreed:
            self.agreed = False
            self.app.notify(f"Wrote {plural(len(report.created), 'note')} made in Cairn into {self.folder}; new "
                            "notes get their file as you make them.", timeout=6, markup=False)
        if report.would_create and not self.asked:
            self.asked = True
            self.ask(report)
        if first or report.conflicts:
            self.app.run_worker(self._count_conflicts, thread=True, group="vault-conflicts", exclusive=True,
                                exit_on_error=False, name="sync conflicts")

    # -- the first-sync question ---------------------------------------------------------------------
    def ask(self, report) -> None:
        from tui.screens.confirm import ConfirmScreen

        titles = report.would_create
        shown = [f"• {printable(t)}" for t in titles[:LIST_CAP]]
        if len(titles) > LIST_CAP:
            shown.append(f"… and {len(titles) - LIST_CAP} more")
        count = len(titles)
        question = (f"{plural(count, 'note')} made in Cairn {'have' if count != 1 else 'has'} no file in "
                    f"{self.folder} yet. Write {'them' if count != 1 else 'it'} into the folder, and every new note "
                    "from now on?")
        self.app.push_screen(ConfirmScreen(question, yes="Write them", no="Not now", detail="\n".join(shown)),
                             lambda yes: self.answered(bool(yes), report.folder, count))

    def answered(self, yes: bool, root_key: str, count: int) -> None:
        if not yes:
            self.app.notify(f"Not written: `cairn sync --yes` writes {'them' if count != 1 else 'it'} (and every "
                            "new note from now on) whenever you like.", timeout=8, markup=False)
            return
        self.agreed = True
        self.app.run_worker(lambda: self._agree(root_key), thread=True, group="vault-agree", exclusive=True,
                            exit_on_error=False, name="agreeing to write new notes into the folder")

    def _agree(self, root_key: str) -> None:
        """In a worker: the agreement, written through the app's store; the watcher's next round (it
        polls the database's data_version) writes the files."""
        from core import clock

        with self.app.services.store() as store:
            store.set_meta(NEW_NOTES_KEY.format(root_key), store.meta(NEW_NOTES_KEY.format(root_key)) or clock.now())

    # -- sync conflicts ------------------------------------------------------------------------------
    def _count_conflicts(self) -> None:
        """In a worker: how many conflicts are open; a toast when any is, and an open dialog lists again."""
        from core.vault.conflicts import open_conflicts

        with self.app.services.store() as store:
            count = len(open_conflicts(store))
        try:
            self.app.call_from_thread(self._announce, count)
        except RuntimeError:  # the app closed meanwhile
            pass

    def _announce(self, count: int) -> None:
        from tui.screens.sync_conflicts import SyncConflicts

        for screen in self.app.screen_stack:
            if isinstance(screen, SyncConflicts):
                screen.load()
        if count:
            self.app.notify(f"{plural(count, 'sync conflict')} to resolve: the folder and Cairn changed the same "
                            f"lines. {conflicts_key(self.app)} (or ctrl+p “Sync: conflicts”) compares and resolves "
                            f"{'them' if count != 1 else 'it'}.", severity="warning", timeout=10, markup=False)
