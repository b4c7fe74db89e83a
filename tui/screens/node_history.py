"""The History view of a node (h in Focus): every recorded change of it and of its edges, newest first,
with who made it and when, and the highlighted change's diff below (core/graph/history.py).

`u` takes back the highlighted change alone (refused, inline, when what it changed was changed again
since); `r` brings the node back to how it was right after the highlighted change (core/graph/revert.py).
Both are changes themselves, listed at the top once made, and can be undone the same way. `escape`
closes. Reads and writes run in a worker through Services; the list reloads after each write.
"""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from core.errors import CairnError
from core.graph import history
from core.safe_text import printable
from tui.messages import NodesChanged


def change_line(c: history.Change, titles: dict[int, str], node_id: int) -> Content:
    """One row of the list: "#41 12-02 05:31 the model in chat 3 · changed title, text" (a change not
    made by you stands out: it is the kind a user comes here to check)."""
    return Content.assemble(
        (f"#{c.id:<5}", "bold"), (f"{c.created_at[5:16].replace('T', ' ')}  ", "dim"),
        (printable(c.actor), "bold" if history.is_yours(c.actor) else "bold $warning"),
        " · ", printable(c.summary(titles, node_id)))


def diff_text(c: history.Change, titles: dict[int, str], node_id: int) -> Text:
    text = Text()
    text.append(f"Change #{c.id}", style="bold")
    text.append(f"  {c.created_at[:19].replace('T', ' ')}  by {printable(c.actor)}\n", style="dim")
    text.append(printable(c.summary(titles, node_id)) + "\n")
    for line in history.diff(c):
        style = ("bold" if line.startswith(("---", "+++")) else "green" if line.startswith("+")
                 else "red" if line.startswith("-") else "cyan" if line.startswith("@@") else "")
        text.append(printable(line) + "\n", style=style)
    return text


class NodeHistory(ModalScreen[None]):
    """The changes of one node; `u` undo one, `r` revert to one."""

    BINDINGS = [
        Binding("u", "undo", "Undo this change", id="history_undo"),
        Binding("r", "revert", "Revert to here", id="history_revert"),
        Binding("escape", "close", "Close", id="history_close"),
    ]

    class Loaded(Message):
        def __init__(self, changes: list[history.Change], titles: dict[int, str]) -> None:
            super().__init__()
            self.changes = changes
            self.titles = titles

    class Done(Message):
        def __init__(self, text: str, error: bool) -> None:
            super().__init__()
            self.text = text
            self.error = error

    def __init__(self, services, node_id: int, title: str):
        super().__init__()
        self.services = services
        self.node_id = int(node_id)
        self.node_title = title
        self.changes: list[history.Change] = []
        self.titles: dict[int, str] = {}
        self._busy = False

    def compose(self):
        with Vertical(id="history-box") as box:
            box.border_title = f"History · {printable(self.node_title)}"
            yield OptionList(id="history-list")
            with VerticalScroll(id="history-diff-scroll"):
                yield Static(id="history-diff")
            yield Static(id="history-note")  # what the last undo or revert did, or why it could not
            yield Static("Loading…", id="history-status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#history-note", Static).display = False
        self.query_one(OptionList).focus()
        self.load()

    # -- reading -----------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="history", exit_on_error=False)
    def load(self) -> None:
        with self.services.store() as store:
            changes = history.changes(store.db, self.node_id)
            ids = sorted({i for c in changes for i in (c.node_id, c.other_id) if i is not None})
            titles = {n["id"]: n["title"] for n in store.get_nodes(ids)}
        self.post_message(self.Loaded(changes, titles))

    def on_node_history_loaded(self, event: Loaded) -> None:
        self.changes, self.titles = event.changes, event.titles
        if self.titles.get(self.node_id):  # the title now, after an undo or a revert that changed it
            self.node_title = self.titles[self.node_id]
            self.query_one("#history-box").border_title = f"History · {printable(self.node_title)}"
        options = self.query_one(OptionList)
        was = options.get_option_at_index(options.highlighted).id if options.highlighted is not None else None
        options.clear_options()
        options.add_options([Option(change_line(c, self.titles, self.node_id), id=str(c.id)) for c in self.changes])
        status = self.query_one("#history-status", Static)
        if not self.changes:
            status.update("No changes recorded yet (the history begins with this version of Cairn). esc closes.")
            self.query_one("#history-diff", Static).update("")
            return
        status.update(f"{len(self.changes)} changes · u undo the highlighted one · r revert the node to it")
        # The same change stays highlighted (a new undo goes in at the top and moves the rows down).
        ids = [str(c.id) for c in self.changes]
        options.highlighted = ids.index(was) if was in ids else 0

    @on(OptionList.OptionHighlighted, "#history-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        change = self._change_at(event.option_index)
        if change is not None:
            self.query_one("#history-diff", Static).update(diff_text(change, self.titles, self.node_id))
            self.query_one("#history-diff-scroll", VerticalScroll).scroll_home(animate=False)

    def _change_at(self, index: int | None) -> history.Change | None:
        return self.changes[index] if index is not None and 0 <= index < len(self.changes) else None

    # -- writing -----------------------------------------------------------------------------------
    def action_undo(self) -> None:
        change = self._change_at(self.query_one(OptionList).highlighted)
        if change is None or self._busy:
            return
        if change.kind == "node" and change.action in ("create", "restore"):
            from tui.screens.confirm import ConfirmScreen

            title = self.titles.get(change.node_id, f"node {change.node_id}")
            question = (f"Undoing change #{change.id} moves “{title}” and its links to the trash (u on the undo, or "
                        "cairn restore, brings it back). Go ahead?")
            self.app.push_screen(ConfirmScreen(question),
                                 lambda yes: self._start("undo", "Undoing change #{}…") if yes else None)
            return
        self._start("undo", "Undoing change #{}…")

    def action_revert(self) -> None:
        self._start("revert", "Reverting to change #{}…")

    def _start(self, how: str, saying: str) -> None:
        change = self._change_at(self.query_one(OptionList).highlighted)
        if change is not None and not self._busy:
            self._busy = True
            self._note(saying.format(change.id))
            self.write(how, change.id, self._key_of("revert"))  # bindings are read here, on the UI thread

    @work(thread=True, exclusive=True, group="history-write", exit_on_error=False)
    def write(self, how: str, change_id: int, revert_key: str) -> None:
        from core.graph import revert

        try:
            with self.services.store() as store:
                if how == "undo":
                    undone = revert.undo(store, change_id)
                    also = f" with the {len(undone) - 1} other changes of its operation" if len(undone) > 1 else ""
                    text = f"Undid change #{change_id}{also}; the undo is at the top of the list (u undoes it too)."
                else:
                    undone = revert.revert_to(store, self.node_id, change_id)
                    text = (f"Reverted to change #{change_id}: undid {len(undone)} change{'s' if len(undone) != 1 else ''}."
                            if undone else f"The node is already as it was after change #{change_id}.")
        except revert.ChangedSince as exc:
            self.post_message(self.Done(f"{exc.reason} Revert to a version instead: choose it and press "
                                        f"{revert_key}.", True))
            return
        except CairnError as exc:
            self.post_message(self.Done(str(exc), True))
            return
        self.post_message(self.Done(text, False))

    def _key_of(self, action: str) -> str:
        """The key that runs `action` here, as [keymap] has it, shown as the footer shows keys."""
        for binding in (b.binding for b in self.active_bindings.values()):
            if binding.action == action:
                return self.app.get_key_display(binding)
        return action

    def on_node_history_done(self, event: Done) -> None:
        self._busy = False
        self._note(event.text, error=event.error)
        if not event.error:
            self.app.post_message(NodesChanged((self.node_id,)))
            self.load()

    def _note(self, text: str, *, error: bool = False) -> None:
        note = self.query_one("#history-note", Static)
        note.update(Content.styled(printable(text), "bold $error") if error else printable(text))
        note.display = True

    def action_close(self) -> None:
        self.dismiss(None)
