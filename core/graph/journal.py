"""The daily note: one journal node per day, entries appended with their time, each day linked to the
day written before it (issue 17, `cairn today` and the app's ctrl+t).

A day's node is found by `metadata.journal` (its date, ISO), not by its title, so renaming it keeps it
today's note. It is created on first use with the dimension `journal`, its event date the day, and
an explained edge to the latest earlier day's note. Days are the user's local days and entries carry
local times: a note written at 00:30 belongs to the day the user is living.

An append reads the text and writes it back in one transaction (BEGIN IMMEDIATE): two processes
appending at once (the app and `cairn today` in a script) both keep their entry.
"""

from __future__ import annotations

from datetime import date, datetime

from core.errors import InvalidInput
from core.graph.store import Store

DIMENSION = "journal"
EXPLANATION = "the journal of the day before"


def local_now() -> datetime:
    return datetime.now().astimezone()


def title_for(day: date) -> str:
    return f"Journal {day.isoformat()}"


def find(store: Store, day: date) -> dict | None:
    row = store.db.execute(
        "SELECT id FROM nodes WHERE json_extract(metadata, '$.journal') = ? ORDER BY id LIMIT 1",
        (day.isoformat(),)).fetchone()
    return store.get_node(row[0]) if row else None


def previous(store: Store, day: date) -> dict | None:
    """The latest journal node of a day before `day`."""
    row = store.db.execute(
        "SELECT id FROM nodes WHERE json_extract(metadata, '$.journal') < ? ORDER BY"
        " json_extract(metadata, '$.journal') DESC, id LIMIT 1", (day.isoformat(),)).fetchone()
    return store.get_node(row[0]) if row else None


def day_note(store: Store, day: date | None = None) -> tuple[dict, bool]:
    """(the day's journal node, whether it was created now)."""
    day = day or local_now().date()
    with store.db.transaction():
        found = find(store, day)
        if found is not None:
            return found, False
        node = store.add_node(title_for(day), "", event_date=day.isoformat(), dimensions=[DIMENSION],
                              metadata={"journal": day.isoformat()})
        before = previous(store, day)
        if before is not None:
            store.add_edge(node["id"], before["id"], EXPLANATION, source="journal")
    return store.get_node(node["id"]), True


def entry_line(text: str, when: datetime) -> str:
    """`- HH:MM text`; a text of several lines keeps them, indented under the first."""
    lines = text.strip().splitlines()
    head = f"- {when:%H:%M} {lines[0].strip()}"
    return "\n".join([head, *(f"  {line}" if line.strip() else "" for line in lines[1:])])


def append(store: Store, text: str, when: datetime | None = None) -> tuple[dict, bool]:
    """Append a timestamped entry to the day's note (created if needed); (the node, created)."""
    if not text or not text.strip():
        raise InvalidInput("Nothing to add to today's note: the entry is empty.")
    when = when or local_now()
    with store.db.transaction():
        node, created = day_note(store, when.date())
        current = store.get_node(node["id"])["source"].rstrip("\n")
        updated = f"{current}\n{entry_line(text, when)}\n" if current else f"{entry_line(text, when)}\n"
        node = store.update_node(node["id"], source=updated)
    return node, created

