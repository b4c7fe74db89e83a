"""Keys land where the user aimed them (issue 17): a burst typed as one `tmux send-keys` (a fast
typist, a paste, a laggy SSH link), right after a key that moves the keyboard, at 80 and 130
columns, while the app is still indexing the Getting started graph it has just loaded.

Before tui/key_handoff.py, `/find` at 80x24 opened the search but `i` reached the Focus panel (the
Integrate dialog); at 130 columns the search box stayed empty and `d` cycled the node list's
dimension filter. No waits between the keys of a burst: that is the point.
"""

from __future__ import annotations

import shutil
import time

import pytest

from test_e2e_tmux import Terminal, cairn_in_a_fresh_home, pane

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not on PATH; the key-burst test runs the real app in a tmux pane")


def start(tmp_path, width: int, height: int) -> Terminal:
    t = Terminal(tmp_path, width, height)
    t.start(cairn_in_a_fresh_home(tmp_path))
    t.wait_text("Welcome to Cairn", "Load Getting started (g)")
    t.keys("g")
    # Welcome opens in Focus, which takes the keyboard; the 14 notes are indexed in the background.
    t.wait_for("the guide's Welcome node open", lambda s: "Load Getting started" not in s and "Focus · 1 open" in s)
    return t


def nodes_pane(screen: str) -> list[str]:
    """The Nodes pane's lines (at 80 columns the only pane shown after `/`)."""
    return pane(screen, 0) or screen.split("\n")


def search_line(screen: str, text: str) -> str | None:
    """The line of the Nodes pane that shows `text` (the search box), if any."""
    return next((line for line in nodes_pane(screen) if text in line), None)


@pytest.mark.parametrize("width,height", [(80, 24), (130, 40)])
def test_keys_typed_after_slash_reach_the_search_box_while_the_app_indexes(tmp_path, width, height):
    t = start(tmp_path, width, height)
    try:
        t.type("/find")  # one burst, while the guide is still being indexed
        line = t.wait_for("'find' in the search box", lambda s: search_line(s, "find"))
        screen = t.last
        assert "Integrate" not in screen, t.fail("`i` reached the Focus panel (the Integrate dialog opened)")
        assert "#" not in line, t.fail("`d` reached the node list (it wrote a #dimension into the search)")

        # ctrl+n and a title in one burst: the capture dialog's title field gets every letter.
        t.keys("C-n", *"Burst")
        t.wait_for("'Burst' in the capture dialog", lambda s: "Quick capture" in s and "Burst" in s)
        # escape (twice: something was typed), then / and more letters at once: out of the dialog,
        # into the search box. Each escape is followed by a pause: an escape byte with another byte
        # less than Textual's ESCAPE_DELAY (100 ms) behind it is read as alt+key, the terminal's own
        # encoding of alt, which no terminal program can tell apart. Nothing waits for the dialog.
        t.keys("Escape")
        time.sleep(0.3)
        t.keys("Escape")  # the second escape discards what was typed
        time.sleep(0.3)
        t.type("/xy")
        t.wait_for("the dialog closed and 'xy' searched",
                   lambda s: "Quick capture" not in s and search_line(s, "xy"))
        # ctrl+l and a question in one burst: the chat input gets it all.
        t.keys("C-l", *"hello")
        t.wait_for("'hello' in the chat input", lambda s: "hello" in s and "Quick capture" not in s)
        assert "[cairn exited" not in t.screen(), t.fail("the app exited")
    finally:
        t.close()


def nodes_title(screen: str) -> str:
    """The Nodes pane's title (its top border), with the border's dashes left out."""
    top = next((line for line in screen.split("\n") if "╭─ Nodes" in line), None)
    return top[top.index("╭─ Nodes") + 3:].split(" ─", 1)[0] if top else ""


def open_note(screen: str) -> str | None:
    """At 80 columns, with the Focus pane shown: the active tab's title (the line under the tab bar)."""
    lines = pane(screen, 0)
    if "╭─ Focus" not in screen:
        return None
    for i, line in enumerate(lines):
        if "━" in line:
            rest = [l.strip() for l in lines[i + 1:] if l.strip()]
            return rest[0] if rest else None
    return None


def search_then_leave(t: Terminal, query: str) -> None:
    """`/` and a query in one burst, then escape twice (the old code's way out of the box). An escape
    is the byte that also starts alt+key, so the terminal needs a gap after it (Textual's
    ESCAPE_DELAY, 100 ms): a key sooner than that after escape is read as alt+key by any terminal
    program. Nothing else waits."""
    t.keys("/", *query, "Escape")
    time.sleep(0.5)
    t.keys("Escape")
    time.sleep(0.5)


def test_a_new_query_typed_after_escape_never_runs_list_commands(tmp_path):
    """Issue 26: in the search box a second escape left the box, and the next query's letters ran list
    commands (`s` re-sorted, `d` set a dimension filter); `down enter` then opened a note the search
    had not found. Typed as a fast typist does, at 80x24: each new query and its `down enter` go out
    in one burst, before the app has shown anything."""
    t = start(tmp_path, 80, 24)
    try:
        # The guide indexed first: while 14 notes are embedded the app's input thread can be held up
        # long enough that an escape and the key after it reach the terminal parser together (alt+key).
        t.keys("/")
        t.wait_for("the guide indexed", lambda s: nodes_title(s).startswith("Nodes · 14") and "pending" not in s,
                   timeout=120)
        search_then_leave(t, "privacy")
        t.keys(*"search", "Down", "Enter")  # `s` first: the sort key of the list
        t.wait_for("the Search note open", lambda s: open_note(s) == "Search: words, meaning, and the syntax",
                   timeout=60)
        search_then_leave(t, "search")
        t.keys(*"dimensions", "Down", "Enter")  # `d` first: the dimension filter key of the list
        t.wait_for("the Dimensions note open",
                   lambda s: open_note(s) == "Dimensions: tags that cut across the graph", timeout=60)
        t.keys("/")
        screen = t.wait_for("the Nodes pane", lambda s: s if nodes_title(s) and search_line(s, "dimensions") else None)
        title = nodes_title(screen)
        assert title.startswith("Nodes · 14 · best match"), t.fail(f"the sort or the filter changed: {title!r}")
        assert "#" not in title and "#" not in search_line(screen, "dimensions"), t.fail("a dimension filter was set")
        assert "most connected" not in screen and "recently updated" not in screen, t.fail("the sort changed")
        assert "[cairn exited" not in screen, t.fail("the app exited")
    finally:
        t.close()
