"""A line under an editor that names the notes its draft mentions, found while the user types.

The owner calls `draft_changed(segments)` on every edit (title, description, source as they are now).
After DELAY seconds without another edit, a thread worker scans the draft (core.assist.mentions, a few tens
of milliseconds for a page of text at 100k nodes) with its own connection; an older scan's result is
dropped when a newer edit came meanwhile. The line says what it found and how to act on it: the edges
are offered for review after saving (`L`), never written from here.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from core.safe_text import printable

DELAY = 0.6  # seconds of quiet typing before the draft is scanned
SHOWN = 3  # titles named on the line; the rest are counted


def describe(titles: list[str]) -> str:
    """'Mentions Graph Theory, Compost — save, then L to link them' (or '' for none)."""
    if not titles:
        return ""
    named = ", ".join(f"“{t}”" for t in titles[:SHOWN])
    more = len(titles) - SHOWN
    if more > 0:
        named += f" and {more} more"
    them = "it" if len(titles) == 1 else "them"
    return f"Mentions {named} — save, then L to link {them}"


class MentionHint(Static):
    """Mentions of other notes in the draft of `node_id` (None: a note not saved yet)."""

    def __init__(self, services, node_id: int | None, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.services = services
        self.node_id = node_id
        self.titles: list[str] = []  # what the line names now
        self._generation = 0  # edits seen
        self._shown = 0  # the edit whose scan the line shows
        self._segments: list[str] = []
        self._timer = None

    def on_mount(self) -> None:
        self.display = False

    @property
    def settled(self) -> bool:
        """The line shows the scan of the latest draft (none pending)."""
        return self._shown == self._generation

    def draft_changed(self, segments: list[str]) -> None:
        self._generation += 1
        self._segments = list(segments)
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(DELAY, self._scan)

    def _scan(self) -> None:
        generation, segments = self._generation, self._segments
        self.run_worker(lambda: self._find(generation, segments), thread=True, exclusive=True,
                        group="mention-hint", exit_on_error=False, name="mentions while typing")

    def _find(self, generation: int, segments: list[str]) -> None:
        from core.errors import CairnError
        from core.assist.mentions import scan, suggest_links
        from core.graph.store import Store

        try:
            with Store(self.services.db_path) as store:
                if self.node_id is None:
                    found = scan(store, segments)
                else:
                    found = suggest_links(store, self.node_id, draft=segments)
        except CairnError as exc:  # the note deleted meanwhile, the database locked: say so, softly
            self.app.call_from_thread(self._show, generation, [], f"Mentions not checked: {exc}")
            return
        self.app.call_from_thread(self._show, generation, [s.target_title for s in found], None)

    def _show(self, generation: int, titles: list[str], problem: str | None) -> None:
        if generation != self._generation or not self.is_mounted:
            return  # typed again meanwhile: a newer scan is coming
        self._shown = generation
        self.titles = titles
        line = problem or describe(titles)
        self.update(Text(printable(line)))
        self.display = bool(line)
