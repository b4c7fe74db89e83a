"""Merge a duplicate into the node kept (the palette's "Focus: merge “X” into this node"): what the merge
will do, and the combined text to review and edit, before anything is written (core/graph/merge.py).

The plan is made in a worker; `ctrl+s` writes it with the text as edited, `escape` cancels (nothing is
written until ctrl+s). An error — either node changed meanwhile — shows inline and keeps the text.
Dismisses with the kept node's id after a merge, else None.
"""

from __future__ import annotations

from textual import work
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Footer, Static, TextArea

from core.errors import CairnError
from core.safe_text import printable
from tui.messages import NodesChanged
from tui.typed_keys import typed_keys_handled


class MergeReview(ModalScreen[int | None]):
    BINDINGS = [
        Binding("ctrl+s", "merge", "Merge", id="merge_confirm", priority=True),
        Binding("escape", "cancel", "Cancel", id="merge_cancel"),
    ]

    class Planned(Message):
        def __init__(self, plan, titles: dict[int, str]) -> None:
            super().__init__()
            self.plan = plan
            self.titles = titles

    class Failed(Message):
        def __init__(self, error: str, planned: bool) -> None:
            super().__init__()
            self.error = error
            self.planned = planned

    class Merged(Message):
        def __init__(self, node_id: int) -> None:
            super().__init__()
            self.node_id = node_id

    def __init__(self, services, keep_id: int, other_id: int):
        super().__init__()
        self.services = services
        self.keep_id, self.other_id = int(keep_id), int(other_id)
        self.plan = None
        self._busy = True

    def compose(self):
        with Vertical(id="merge-box") as box:
            box.border_title = "Merge"
            yield Static("Preparing the merge…", id="merge-summary")
            yield TextArea(id="merge-text", soft_wrap=True, disabled=True)
            yield Static(id="merge-error")
            yield Static("ctrl+s merge with this text · esc cancel (nothing is written until ctrl+s) · the merge "
                         "is one operation in the History (h): u on any of its changes undoes all of it", id="merge-hint")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#merge-error", Static).display = False
        self.prepare()

    @work(thread=True, exclusive=True, group="merge", exit_on_error=False)
    def prepare(self) -> None:
        from core.graph import merge

        try:
            with self.services.store() as store:
                plan = merge.plan(store, self.keep_id, self.other_id)
                ends = sorted({m.from_id for m in plan.edges} | {m.to_id for m in plan.edges})
                titles = {n["id"]: n["title"] for n in store.get_nodes(ends)}
        except CairnError as exc:
            self.post_message(self.Failed(str(exc), planned=False))
            return
        self.post_message(self.Planned(plan, titles))

    def on_merge_review_planned(self, event: Planned) -> None:
        self.plan, self._busy = event.plan, False
        lines = [*event.plan.summary(), *("  " + m.describe(self.keep_id, event.titles) for m in event.plan.edges),
                 "The text after the merge (edit it here):"]
        self.query_one("#merge-box").border_title = f"Merge into · {printable(event.plan.keep['title'])}"
        self.query_one("#merge-summary", Static).update(printable("\n".join(lines)))
        text = self.query_one("#merge-text", TextArea)
        text.load_text(event.plan.source)
        text.disabled = False
        text.focus()

    async def action_merge(self) -> None:
        if self._busy or self.plan is None:
            return
        self._busy = True
        await typed_keys_handled(self)  # the letters typed before ctrl+s (tui/typed_keys.py)
        self.write(self.query_one("#merge-text", TextArea).text)

    @work(thread=True, exclusive=True, group="merge-write", exit_on_error=False)
    def write(self, source: str) -> None:
        from core.graph import merge

        try:
            with self.services.store() as store:
                node = merge.apply(store, self.plan, source=source)
        except CairnError as exc:
            self.post_message(self.Failed(str(exc), planned=True))
            return
        self.post_message(self.Merged(node["id"]))

    def on_merge_review_failed(self, event: Failed) -> None:
        self._busy = not event.planned  # a plan that could not be made cannot be merged
        error = self.query_one("#merge-error", Static)
        error.update(Content.styled(printable(event.error), "bold $error"))
        error.display = True

    def on_merge_review_merged(self, event: Merged) -> None:
        self.app.post_message(NodesChanged((self.keep_id, self.other_id)))
        self.app.notify(f"Merged node {self.other_id} into node {self.keep_id}; it is in the trash. h in Focus "
                        "shows the merge in the History, where u undoes it.", timeout=6, markup=False)
        self.dismiss(event.node_id)

    def action_cancel(self) -> None:
        self.dismiss(None)
