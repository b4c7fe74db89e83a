"""The Focus tabs the app had open, kept in the database's meta table (key `focus_tabs`) so that the
next start opens them again (tui/app.py), in the same order with the same active tab.

Kept with the database, not in a file beside it: node ids mean something only in their own database
(a `--db` elsewhere has other nodes under the same ids), and the meta table is where Cairn already
keeps state between runs (core/graph/shown_lists.py). The value is `{"open": [id, ...], "primary": id}`.

`restore` gives the tabs as they can be opened now, in three reads (the kept value, the trash rows of
ids no longer in `nodes`, the titles): a node trashed since is left out; one merged since
(core/graph/merge.py: its trash payload names `merged_into`) is replaced by the node it was merged
into, followed through later merges; a node reached twice that way keeps its first place. When the
active tab's node is left out, the tab that took its place (else the one before it) is active, as
when a tab is closed.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Iterable

KEY = "focus_tabs"
MAX_TABS = 100  # more are not kept: a session with hundreds of tabs would reopen slowly for nothing
_MERGE_HOPS = 20  # a merge chain longer than this is not followed (merges make no cycles; a bound anyway)

log = logging.getLogger("cairn.focus_tabs")


@dataclass(frozen=True)
class Tabs:
    """The tabs to open: (node id, title) in tab order, and the active one's id (None with no tabs)."""

    open: tuple[tuple[int, str], ...] = ()
    primary: int | None = None


def save(store, open_ids: Iterable[int], primary: int | None) -> None:
    """Keep the open tabs (ids in tab order) and the active one, replacing what was kept."""
    ids = [int(i) for i in open_ids][:MAX_TABS]
    value = {"open": ids, "primary": int(primary) if primary is not None and int(primary) in ids else None}
    store.set_meta(KEY, json.dumps(value))


def _kept(raw: str | None) -> tuple[list[int], int | None]:
    if not raw:
        return [], None
    try:
        value = json.loads(raw)
        ids = [int(i) for i in value["open"] if not isinstance(i, bool)]
        primary = value.get("primary")
        primary = int(primary) if primary is not None else None
    except (ValueError, TypeError, KeyError, AttributeError) as exc:  # written by hand, or by a future version
        log.warning("the kept Focus tabs (meta %s) are not readable (%s); none are reopened", KEY, exc)
        return [], None
    return list(dict.fromkeys(ids))[:MAX_TABS], primary


def _survivors(store, missing: set[int]) -> dict[int, int | None]:
    """For each id no longer in `nodes`: the node it was merged into (through later merges), or None
    when it was trashed (or merged into a node that is gone too)."""
    into: dict[int, int] = {}
    ids = set(missing)
    for _hop in range(_MERGE_HOPS):
        if not ids:
            break
        rows = store.db.execute(
            "SELECT node_id, json_extract(payload, '$.node.metadata.merged_into') AS into_id FROM trash"
            " WHERE node_id IN (SELECT value FROM json_each(?)) ORDER BY id", (json.dumps(sorted(ids)),)).fetchall()
        latest = {row["node_id"]: row["into_id"] for row in rows}  # the latest deletion of each id wins
        found = {i: int(t) for i, t in latest.items() if isinstance(t, int) and not isinstance(t, bool)}
        into.update(found)
        targets = set(found.values())
        existing = {row["id"] for row in store.db.execute(
            "SELECT id FROM nodes WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(targets)),))}
        ids = (targets - existing) - set(into)  # merged into a node merged away in turn: follow it
    result: dict[int, int | None] = {}
    for node_id in missing:
        current, seen = node_id, set()
        while current in into and current not in seen:
            seen.add(current)
            current = into[current]
        result[node_id] = None if current == node_id or current in into or current in missing else current
    return result


def restore(store) -> Tabs:
    """The kept tabs as they can be opened now (see the module's note); no tabs when nothing is kept."""
    ids, primary = _kept(store.meta(KEY))
    if not ids:
        return Tabs()
    titles = {row["id"]: row["title"] for row in store.db.execute(
        "SELECT id, title FROM nodes WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),))}
    missing = {i for i in ids if i not in titles}
    survivors = _survivors(store, missing) if missing else {}
    extra = {s for s in survivors.values() if s is not None and s not in titles}
    if extra:
        titles.update({row["id"]: row["title"] for row in store.db.execute(
            "SELECT id, title FROM nodes WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(sorted(extra)),))})
    opened: list[int] = []
    placed_before_primary = 0  # tabs placed by the ids before the active one
    active = None
    for index, node_id in enumerate(ids):
        now = node_id if node_id in titles else survivors.get(node_id)
        if now is not None and now not in titles:
            now = None  # merged into a node that is gone as well
        if node_id == primary:
            active = now
        if now is not None and now not in opened:
            opened.append(now)
            if primary in ids and index < ids.index(primary):
                placed_before_primary += 1
    if active is None and opened:  # the tab now standing where the active one stood, else the last
        active = opened[min(placed_before_primary, len(opened) - 1)]
    return Tabs(tuple((i, titles[i]) for i in opened), active)
