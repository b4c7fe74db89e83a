"""The daily note (issue 17): `cairn today`, core/graph/journal.py and the app's f4."""

from __future__ import annotations

import subprocess
import threading
from datetime import date, datetime, timedelta

import pytest

from core.errors import InvalidInput
from core.graph import journal
from core.graph.store import Store


def at(day: str, hm: str) -> datetime:
    return datetime.fromisoformat(f"{day}T{hm}:00").astimezone()


def test_the_first_entry_creates_the_day_note_and_links_it_to_the_day_before(store):
    first, created = journal.append(store, "Planted the garlic.", at("2026-11-29", "08:15"))
    assert created and first["title"] == "Journal 2026-11-29"
    assert first["dimensions"] == ["journal"] and first["event_date"] == "2026-11-29"
    assert first["source"] == "- 08:15 Planted the garlic.\n"
    assert store.edges(first["id"]) == []  # no earlier day to link to

    second, created = journal.append(store, "Ordered more mulch.", at("2026-12-01", "21:40"))
    assert created
    (edge,) = store.edges(second["id"], "out")
    assert edge["to_node_id"] == first["id"] and edge["explanation"] == journal.EXPLANATION  # the latest earlier day

    again, created = journal.append(store, "Mulch arrived.\nTwo bags, one torn.", at("2026-12-01", "22:05"))
    assert not created and again["id"] == second["id"]
    assert again["source"] == "- 21:40 Ordered more mulch.\n- 22:05 Mulch arrived.\n  Two bags, one torn.\n"
    assert again["chunk_status"] == "pending"  # re-indexed like any edit


def test_the_day_note_is_found_by_its_date_even_renamed_and_an_empty_entry_is_refused(store):
    node, _ = journal.append(store, "One.", at("2026-12-02", "09:00"))
    store.update_node(node["id"], title="A long Wednesday")
    same, created = journal.append(store, "Two.", at("2026-12-02", "10:00"))
    assert not created and same["id"] == node["id"] and same["title"] == "A long Wednesday"
    with pytest.raises(InvalidInput, match="empty"):
        journal.append(store, "   \n", at("2026-12-02", "11:00"))


def test_two_writers_appending_at_once_both_keep_their_entries(db_path):
    Store(db_path).close()
    when = datetime.now().astimezone()

    def write(n: int) -> None:
        with Store(db_path) as s:
            for i in range(10):
                journal.append(s, f"writer {n} entry {i}", when)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    with Store(db_path) as s:
        lines = journal.find(s, when.date())["source"].splitlines()
    assert len(lines) == 20 and {f"writer {n} entry {i}" for n in range(2) for i in range(10)} == {
        line.split(" ", 2)[2] for line in lines}


def test_cairn_today_appends_reads_stdin_and_shows_the_note(cairn_cmd, cli_env):
    def cairn(*args, stdin=None):
        return subprocess.run([*cairn_cmd, *args], capture_output=True, text=True, env=cli_env, input=stdin, timeout=60)

    empty = cairn("today")
    assert empty.returncode == 0 and "Nothing in today's journal yet" in empty.stdout
    added = cairn("today", "Called the plumber.")
    today = date.today().isoformat()
    assert added.returncode == 0, added.stderr
    assert f"Added to Journal {today}" in added.stdout and "a new note for today" in added.stdout
    piped = cairn("today", "-", stdin="Plumber comes Friday.\n")
    assert piped.returncode == 0 and "a new note" not in piped.stdout
    shown = cairn("today")
    assert f"Journal {today}" in shown.stdout
    assert "Called the plumber." in shown.stdout and "Plumber comes Friday." in shown.stdout
    nothing = cairn("today", "-", stdin="  \n")
    assert nothing.returncode == 1 and "the entry is empty" in nothing.stderr


def test_yesterdays_note_is_linked_when_today_begins(store):
    yesterday = datetime.now().astimezone() - timedelta(days=1)
    before, _ = journal.append(store, "Yesterday's entry.", yesterday)
    node, created = journal.day_note(store)
    assert created and [e["to_node_id"] for e in store.edges(node["id"], "out")] == [before["id"]]


async def test_f4_adds_an_entry_and_opens_todays_note_in_focus(store, db_path):
    from textual.widgets import TextArea

    from tui.app import CairnApp
    from tui.screens.journal_entry import JournalEntry
    from tui.widgets.focus_panel import FocusPanel
    from tui_support import wait_for

    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f4")
        await wait_for(pilot, lambda: isinstance(app.screen, JournalEntry), what="the journal entry dialog")
        await pilot.press(*"Fed the cat")  # the keys follow f4 into the entry's field
        await wait_for(pilot, lambda: app.screen.query_one(TextArea).text == "Fed the cat", what="the entry typed")
        await pilot.press("ctrl+s")
        panel = app.query_one(FocusPanel)
        await wait_for(pilot, lambda: panel.active_view is not None and panel.active_view.node is not None
                       and "Fed the cat" in panel.active_view.node["source"], what="today's note open in Focus")
    node = journal.find(store, journal.local_now().date())
    assert node["source"].endswith(" Fed the cat\n") and node["source"].startswith("- ")


async def test_f4_escape_with_text_asks_first_and_writes_nothing(store, db_path):
    from textual.widgets import Static

    from tui.app import CairnApp
    from tui.screens.journal_entry import JournalEntry
    from tui_support import wait_for

    app = CairnApp(db_path, first_run_prompt=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f4")
        await wait_for(pilot, lambda: isinstance(app.screen, JournalEntry), what="the journal entry dialog")
        await pilot.press(*"draft")
        await pilot.press("escape")
        await wait_for(pilot, lambda: "press esc again" in str(app.screen.query_one("#journal-hint", Static).render()),
                       what="the second-escape warning")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, JournalEntry), what="the dialog to close")
    assert journal.find(store, journal.local_now().date()) is None
