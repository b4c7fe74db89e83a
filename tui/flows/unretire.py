"""The palette's "Focus: un-retire", offered while the active Focus tab shows a retired node.

A retired node (core.graph.retirement) stays openable; its tab's retired line (tui.widgets.node_view)
says by which chat and when it was retired, and names this command. Un-retiring writes in a worker,
then posts NodesChanged so every view (the Nodes list, the tab itself) shows the node as current again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from textual.app import SystemCommand

from core.graph import retirement
from core.errors import CairnError
from core.safe_text import printable
from tui.messages import NodesChanged
from tui.widgets.node_view import UNRETIRE_COMMAND

if TYPE_CHECKING:
    from tui.widgets.node_view import NodeView


def commands(app, view: "NodeView") -> Iterator[SystemCommand]:
    """"Focus: un-retire", offered only while the active tab shows a retired node."""
    node = view.node
    if node is not None and retirement.is_retired(node):
        yield SystemCommand(UNRETIRE_COMMAND, "Bring this retired node back into retrieval and the hubs",
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
