"""The palette's "Help: load the Getting started graph": the guide the first-run welcome offers, for
anyone who skipped it or started with notes of their own. Loads in a worker (one transaction, core.
getting_started); already loaded: says so and opens it; a failure (a locked or read-only database)
is named in a notification.
"""

from __future__ import annotations

from core.errors import CairnError
from tui.messages import NodesChanged, OpenNode


def load_guide(app) -> None:
    app.run_worker(lambda: _load(app), thread=True, exclusive=True, group="guide", exit_on_error=False,
                   name="load the Getting started graph")


def _load(app) -> None:
    from core.graph import getting_started

    try:
        with app.services.store() as store:
            ids = getting_started.load(store)
            first = None if ids else store.db.execute(
                f"SELECT id FROM nodes WHERE json_extract(metadata, '$.{getting_started.MARK}') = 1"
                " ORDER BY id LIMIT 1").fetchone()
    except CairnError as exc:
        app.call_from_thread(app.notify, f"Could not load the Getting started graph: {exc}", severity="error",
                             markup=False)
        return
    # The notice first: by the time the node is open, what happened has been said.
    if ids:
        app.call_from_thread(app.notify, f"Getting started loaded: {len(ids)} nodes, tagged "
                             f"#{getting_started.DIMENSION}.", timeout=5, markup=False)
        app.call_from_thread(app.post_message, NodesChanged(tuple(ids)))
        app.call_from_thread(app.post_message, OpenNode(ids[0]))
    else:
        app.call_from_thread(app.notify, "The Getting started graph is already here.", timeout=4)
        if first is not None:
            app.call_from_thread(app.post_message, OpenNode(first[0]))
