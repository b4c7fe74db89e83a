"""The Nodes list's remembered view: its sort and its #dimension filter, kept in the database's meta
table (key `nodes_view`) only when the user asks for it (the palette's "Nodes: remember this view").
A sort or filter changed any other way lasts until the app quits; the next start shows this view.

Kept with the database, as the Focus tabs are (core/graph/focus_tabs.py): a dimension is a name in
one database, and another `--db` has other dimensions. The value is `{"sort": "edges",
"dimensions": ["research"]}`. A value this version cannot read (written by a later one, or edited
by hand) gives the default view, and the log says why.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

KEY = "nodes_view"
# relevance: best match while searching, recently updated while browsing (nothing to match).
SORTS = ("relevance", "updated", "edges")

log = logging.getLogger("cairn.nodes_view")


@dataclass(frozen=True)
class View:
    sort: str = "relevance"
    dimensions: tuple[str, ...] = ()


def load(store) -> View:
    """The remembered view, or the default one when none was remembered (or it cannot be read)."""
    raw = store.meta(KEY)
    if raw is None:
        return View()
    try:
        value = json.loads(raw)
        sort, dimensions = value["sort"], value["dimensions"]
        if sort not in SORTS or not isinstance(dimensions, list) or not all(
                isinstance(d, str) and d.strip() for d in dimensions):
            raise ValueError(f"sort {sort!r}, dimensions {dimensions!r}")
    except (ValueError, TypeError, KeyError) as exc:
        log.warning("the remembered Nodes view %r is not readable (%s); using the default view", raw, exc)
        return View()
    return View(sort, tuple(dimensions))


def save(store, view: View) -> None:
    """Remember `view` for the next start, replacing what was remembered."""
    if view.sort not in SORTS:
        raise ValueError(f"unknown sort {view.sort!r}; use one of {', '.join(SORTS)}")
    store.set_meta(KEY, json.dumps({"sort": view.sort, "dimensions": list(view.dimensions)}))
