"""The app's entry points to the link workflows (core.assist.integrate, core.assist.mentions), kept out of the panes.

- `open_review(app, node_id, title, mode)`: the LinkReviewScreen for a node ("integrate" or "mention");
  the edges it writes refresh every view that shows either end.
- `after_save(app, node_id)`: after a node is saved in the editor or made by quick capture, look for
  mentions of other nodes in a worker; when there are new ones, say "N link suggestions — press L".
  The same suggestions are not announced again for the same node (saving twice is not news), but `L`
  still reviews the note saved last.
- `link_suggestions(app)`: what `L` does: the review of the node last announced, else of the Focus
  panel's active node.
"""

from __future__ import annotations

import weakref

from core.safe_text import printable
from tui.messages import NodesChanged

# Per app: the node whose suggestions were announced last, and what was announced for each node.
_pending: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_announced: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def open_review(app, node_id: int, title: str, mode: str = "integrate") -> None:
    from tui.screens.link_review import LinkReviewScreen

    def done(edges: list | None) -> None:
        if edges:
            app.post_message(NodesChanged((int(node_id), *(e["to_node_id"] for e in edges))))

    app.push_screen(LinkReviewScreen(app.services, node_id, title, mode), done)


def after_save(app, node_id: int) -> None:
    """Check a just-saved node for mentions in a worker (never on the UI thread)."""
    app.run_worker(lambda: _check(app, int(node_id)), thread=True, group=f"mentions-{node_id}", exclusive=True,
                   exit_on_error=False, name="link suggestions")


def _check(app, node_id: int) -> None:
    from core.errors import NotFound
    from core.assist.mentions import suggest_links
    from core.graph.store import Store

    try:
        with Store(app.services.db_path) as store:
            title = store.get_node(node_id)["title"]
            found = suggest_links(store, node_id)
    except NotFound:
        return  # deleted meanwhile: nothing to suggest
    targets = frozenset(s.target_id for s in found)
    if not targets:
        return
    _pending[app] = (node_id, title)  # L reviews the note saved last, announced or not
    seen = _announced.setdefault(app, {})
    if targets <= seen.get(node_id, frozenset()):
        return
    seen[node_id] = targets
    count = len(targets)
    app.call_from_thread(app.notify, printable(f"{count} link suggestion{'s' if count != 1 else ''} for “{title}” "
                                               "— press L"), markup=False, timeout=8)


def link_suggestions(app) -> None:
    """`L`: the mention review of the node last announced, else of the active Focus tab."""
    from tui.widgets.focus_panel import FocusPanel

    pending = _pending.pop(app, None)
    if pending is None:
        view = app.query_one(FocusPanel).active_view
        if view is None or view.node is None:
            app.notify("No node to suggest links for: open one in the Focus panel first.", severity="warning")
            return
        pending = (view.node_id, view.node["title"])
    app.clear_notifications()  # the "press L" toast would otherwise sit on the review it opens
    open_review(app, pending[0], pending[1], "mention")
