"""Retired nodes in the app: the Focus tab's "retired" line and the palette's "Focus: un-retire".

A retired node (core.graph.retirement) stays openable; its tab says it is retired, by which chat and
when, and how to bring it back. Un-retiring writes in a worker, then posts NodesChanged so every
view (the Nodes list, the tab itself) shows the node as current again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from rich.text import Text
from textual.app import SystemCommand

from core.graph import retirement
from core.errors import CairnError
from core.safe_text import printable
from tui.messages import NodesChanged

if TYPE_CHECKING:
    from tui.widgets.node_view import NodeView

COMMAND = "Focus: un-retire"


def status_text(node: dict) -> Text | None:
    """The tab's retired line (None when the node is not retired); the reason on a second line."""
    if not retirement.is_retired(node):
        return None
    rec = retirement.record(node)
    text = Text(printable(f"retired · {retirement.describe(rec)} — palette: {COMMAND}"))
    if rec and rec.get("reason"):
        text.append(printable("\nwhy: " + " ".join(str(rec["reason"]).split())))
    return text


def commands(app, view: "NodeView") -> Iterator[SystemCommand]:
    """"Focus: un-retire", offered only while the active tab shows a retired node."""
    node = view.node
    if node is not None and retirement.is_retired(node):
        yield SystemCommand(COMMAND, "Bring this retired node back into retrieval and the hubs",
                            lambda: unretire(app, view.node_id, node["title"]))


def unretire(app, node_id: int, title: str) -> None:
    """Un-retire in a worker (never on the UI thread); say what happened and refresh the views."""
    app.run_worker(lambda: _unretire(app, int(node_id), title), thread=True, group=f"unretire-{node_id}",
                   exclusive=True, exit_on_error=False, name="un-retire")


def _unretire(app, node_id: int, title: str) -> None:
    try:
        with app.services.store() as store:
            retirement.restore(store, node_id, via="app")
    except CairnError as exc:  # not retired any more (changed elsewhere), or deleted meanwhile
        app.call_from_thread(app.notify, printable(str(exc)), severity="warning", markup=False)
        app.call_from_thread(app.post_message, NodesChanged((node_id,)))
        return
    except Exception as exc:  # a locked or broken database: say so, nothing else to do
        app.call_from_thread(app.notify, printable(f"Could not un-retire “{title}”: {exc}"), severity="error",
                             markup=False, timeout=12)
        return
    app.call_from_thread(app.post_message, NodesChanged((node_id,)))
    app.call_from_thread(app.notify, printable(f"Un-retired “{title}”: the chat is offered it again "
                                               "(hubs, retrieval). Its history keeps the retirement."),
                         markup=False, timeout=6)
