"""End to end: the real `cairn` console script in a real terminal (tmux), driven as a person would
over SSH — keys in with `tmux send-keys`, the screen read back with `tmux capture-pane`.

Offline (no API keys), on a fresh CAIRN_HOME and HOME. Every step polls the screen for what it
expects (generous timeouts, never a duration asserted). Keys that move the keyboard to a text field
(`/`, tab, ctrl+l) are followed by a wait for the terminal cursor to land in that field: Textual
routes keys to the widget that had focus when they arrived, so text typed before the focus moved
would go to the old widget — a person's pause, made explicit.

The tmux server is private to the test (its own socket, no user config) and killed in a finally.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not on PATH; the end-to-end test runs the real app in a tmux pane")

CAIRN = Path(sys.executable).parent / "cairn"
WIDTH, HEIGHT = 160, 48
STEP_TIMEOUT = 20.0  # per step; generous on purpose (slow CI, first model load)
POLL = 0.1
PRIMARY = re.compile(r'Primary \(active tab\): \[NODE:\d+:"([^"]+)"\]')


class Terminal:
    """One tmux pane running one command, on a private tmux server."""

    def __init__(self, workdir: Path, width: int, height: int):
        tag = uuid.uuid4().hex[:10]
        self.socket = f"cairn-e2e-{tag}"
        self.session = f"cairn-{tag}"
        self.width, self.height = width, height
        self.conf = workdir / "tmux.conf"
        self.conf.write_text("set -g status off\n")
        self.last = ""  # the last screen read: shown in every failure
        self.socket_path = ""

    def tmux(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, "-f", str(self.conf), *args],
                              capture_output=True, text=True, timeout=30)
        if check and done.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {done.stderr.strip()}\nlast screen:\n{self.last}")
        return done.stdout

    def start(self, command: str) -> None:
        self.tmux("new-session", "-d", "-s", self.session, "-x", str(self.width), "-y", str(self.height), command)
        self.socket_path = self.tmux("display-message", "-p", "#{socket_path}").strip()

    def close(self) -> None:
        self.tmux("kill-session", "-t", self.session, check=False)
        self.tmux("kill-server", check=False)
        if self.socket_path:
            Path(self.socket_path).unlink(missing_ok=True)  # tmux leaves its socket file behind

    # -- input ---------------------------------------------------------------------------------------
    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.session, *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.session, "-l", text)

    # -- output --------------------------------------------------------------------------------------
    def screen(self) -> str:
        self.last = self.tmux("capture-pane", "-p", "-t", self.session)
        return self.last

    def cursor_row(self) -> int:
        return int(self.tmux("display-message", "-p", "-t", self.session, "#{cursor_y}").strip())

    def fail(self, what: str) -> AssertionError:
        return AssertionError(f"{what}\n--- last screen ({self.width}x{self.height}) ---\n{self.last}")

    def wait_for(self, what: str, predicate, timeout: float = STEP_TIMEOUT):
        """Poll the screen until predicate(screen) is truthy; return its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate(self.screen())
            if value:
                return value
            if time.monotonic() > deadline:
                raise self.fail(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(POLL)

    def wait_text(self, *texts: str, timeout: float = STEP_TIMEOUT) -> str:
        return self.wait_for(" and ".join(repr(t) for t in texts),
                             lambda s: s if all(t in s for t in texts) else None, timeout)

    def row_of(self, text: str) -> int:
        """The row showing `text`, waiting for it (a notification may cover it for a few seconds)."""
        return self.wait_for(f"{text!r} on the screen", lambda s: next(
            (i + 1 for i, line in enumerate(s.split("\n")) if text in line), None)) - 1

    def wait_cursor_row(self, row: int, what: str) -> None:
        """Wait for the terminal cursor (Textual puts it in the focused text field) to reach a row."""
        deadline = time.monotonic() + STEP_TIMEOUT
        while self.cursor_row() != row:
            if time.monotonic() > deadline:
                self.screen()
                raise self.fail(f"timed out waiting for the keyboard to reach {what} (row {row}); "
                                 f"the cursor is on row {self.cursor_row()}")
            time.sleep(POLL)


# -- reading the three panes ---------------------------------------------------------------------------
def pane_columns(screen: str) -> list[tuple[int, int]]:
    """Column ranges of the panes, from the top border row (each pane's border starts with ╭)."""
    top = next((line for line in screen.split("\n") if line.startswith("╭")), "")
    starts = [i for i, ch in enumerate(top) if ch == "╭"]
    return [(start, (starts[n + 1] if n + 1 < len(starts) else len(top))) for n, start in enumerate(starts)]


def pane(screen: str, index: int) -> list[str]:
    """One pane's lines (index 0 nodes, 1 focus, 2 right), without its borders."""
    columns = pane_columns(screen)
    if len(columns) <= index:
        return []
    start, end = columns[index]
    return [line[start + 1:end - 1].rstrip() for line in screen.split("\n")]


def flat(lines: list[str]) -> str:
    """Lines joined with single spaces, so text wrapped across lines reads as it was written."""
    return " ".join(" ".join(line.split()) for line in lines if line.strip())


def focus_title(screen: str) -> str | None:
    """The title of the active Focus tab: the first line under the tab bar's underline."""
    lines = pane(screen, 1)
    for i, line in enumerate(lines):
        if "━" in line:
            rest = [l.strip() for l in lines[i + 1:] if l.strip()]
            return rest[0] if rest else None
    return None


def viewer_primary(screen: str) -> str | None:
    match = PRIMARY.search(flat(pane(screen, 2)))
    return match.group(1) if match else None


def footer(screen: str) -> str:
    lines = [line for line in screen.split("\n") if line.strip()]
    return lines[-1] if lines else ""


# -- the session -----------------------------------------------------------------------------------------
@pytest.fixture
def terminal(tmp_path):
    term = Terminal(tmp_path, WIDTH, HEIGHT)
    try:
        yield term
    finally:
        term.close()


def cairn_in_a_fresh_home(tmp_path) -> str:
    """The pane's command: the real `cairn`, offline, on a fresh CAIRN_HOME and HOME."""
    assert CAIRN.exists(), f"the console script is not installed at {CAIRN} (pip install -e .)"
    home, cairn_home = tmp_path / "home", tmp_path / "cairn"
    home.mkdir()
    # COLUMNS/LINES are dropped: under pytest the child environment can carry COLUMNS=80 LINES=24,
    # which Textual would believe over the pane's real size.
    # The pane's shell says how cairn exited and stays, as a login shell would (tmux's own
    # #{pane_dead_status} proved unreliable here, and a dying pane can lose its last output).
    return (f"env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY -u ANTHROPIC_BASE_URL -u OPENAI_BASE_URL "
            f"-u CAIRN_DEBUG -u COLUMNS -u LINES CAIRN_HOME={shlex.quote(str(cairn_home))} "
            f"HOME={shlex.quote(str(home))} {shlex.quote(str(CAIRN))}; "
            f'echo "[cairn exited with status $?]"; exec sleep 120')


def test_a_session_over_ssh(tmp_path, terminal):
    t = terminal
    t.start(cairn_in_a_fresh_home(tmp_path))

    # First run on an empty database: the welcome offers the Getting started graph.
    t.wait_text("Welcome to Cairn", "Load Getting started (g)")
    t.keys("g")
    t.wait_for("the guide loaded and its Welcome node open",
               lambda s: "Load Getting started" not in s and "Focus · 1 open" in s
               and "Hubs: your most connected nodes" in flat(pane(s, 0)))
    t.wait_for("the guide indexed", lambda s: re.search(r"Nodes · 14 · [a-z ]+ ─", s))  # the sort, no "pending"

    # ctrl+n: quick capture, typed field by field.
    t.keys("C-n")
    t.wait_text("Quick capture", "Title (empty")  # the modal focuses its title field before it is drawn
    title_row = t.row_of("Title (empty")
    t.type("Espresso ratios")
    t.wait_for("the title typed", lambda s: "Espresso ratios" in s.split("\n")[title_row])
    body_row = t.row_of("Text (markdown)")
    t.keys("Tab")
    t.wait_cursor_row(body_row, "the text field")
    t.type("Use 18 grams of coffee for 36 grams of espresso.")
    t.wait_text("36 grams of espresso.")
    t.keys("C-s")
    t.wait_for("the capture saved and indexed",
               lambda s: "Quick capture" not in s and re.search(r"Nodes · 15 · [a-z ]+ ─", s))

    # `/` and a word: enter opens the top hit in a Focus tab.
    search_row = t.row_of("search · #dimension")
    t.keys("/")
    t.wait_cursor_row(search_row, "the search box")
    t.type("espresso")
    t.wait_for("the search hit", lambda s: "match" in flat(pane(s, 0)) and "Espresso ratios" in flat(pane(s, 0)))
    t.keys("Enter")
    t.wait_for("the note open in the centre", lambda s: focus_title(s) == "Espresso ratios"
               and "Focus · 2 open" in s and "Use 18 grams of coffee" in flat(pane(s, 1)))
    # enter hands the keyboard to the opened tab (out of the search box), so its bare keys apply.
    t.wait_for("the Focus tab keys in the footer", lambda s: "Prev tab" in footer(s))

    # A second node, from the guide.
    t.keys("/")
    t.wait_cursor_row(search_row, "the search box")
    t.type("hubs")  # the box selects its text on focus: typing replaces "espresso"
    t.wait_for("the hubs hit", lambda s: "Hubs: your most connected nodes" in flat(pane(s, 0)) and
               "Espresso ratios" not in flat(pane(s, 0)))
    t.keys("Enter")
    t.wait_for("the second node open", lambda s: focus_title(s) == "Hubs: your most connected nodes"
               and "Focus · 3 open" in s and "Prev tab" in footer(s))

    # `[`: the previous tab becomes primary.
    t.keys("[")
    t.wait_for("the tab switch", lambda s: focus_title(s) == "Espresso ratios")

    # f2 from the chat: the viewer takes the keyboard; `e` expands its blocks, end scrolls to the suffix.
    t.keys("C-l")
    t.wait_cursor_row(t.row_of("Ask about your notes…"), "the chat input")
    t.keys("F2")
    t.wait_for("the Context viewer", lambda s: "Settings · next request" in s and "Expand/collapse" in footer(s)
               and "focus · not cached" in flat(pane(s, 2)))
    t.keys("e")
    t.wait_for("the blocks expanded", lambda s: "▼" in flat(pane(s, 2)))
    t.keys("End")
    if t.wait_for("the focus block's primary line", viewer_primary) != "Espresso ratios":
        raise t.fail("the viewer's primary line does not name the active tab")

    # Back to the Focus pane (f3 cycles nodes → focus) and `]`: the viewer follows the primary.
    t.keys("F3")
    t.wait_cursor_row(search_row, "the search box (f3)")
    t.keys("F3")
    t.wait_for("the Focus pane's keys (f3)", lambda s: "Prev tab" in footer(s))
    t.keys("]")
    t.wait_for("the viewer's primary line to follow the tab",
               lambda s: viewer_primary(s) == "Hubs: your most connected nodes"
               and focus_title(s) == "Hubs: your most connected nodes")

    # f2 back to the chat, ctrl+l, ask: the offline provider answers with a cited note.
    t.keys("F2")
    t.wait_text("Chat · orchestrator · offline")
    t.keys("C-l")
    t.wait_cursor_row(t.row_of("Ask about your notes…"), "the chat input")
    t.type("how much coffee for espresso?")
    t.wait_text("how much coffee for espresso?")
    t.keys("C-j")

    def replied(screen: str) -> str | None:
        text = flat(pane(screen, 2))
        return text if all(part in text for part in ("Offline answer", "[1] Espresso ratios", "complete")) else None

    reply = t.wait_for("the offline reply with its source", replied)
    if "not written by a model" not in reply or not re.search(r"\[1\] Espresso ratios — Use 18 grams of coffee", reply):
        raise t.fail("the reply is not labelled offline or does not quote the note as [1]")

    # ctrl+q quits cleanly: the process exits 0 and the terminal is given back to the shell.
    t.keys("C-q")
    exited = t.wait_for("the app to exit", lambda s: re.search(r"\[cairn exited with status (\d+)\]", s))
    if exited.group(1) != "0":
        raise t.fail(f"cairn exited with status {exited.group(1)}, not 0")
    screen = t.screen()
    if "Nodes ·" in screen or "Focus ·" in screen:
        raise t.fail("the app's screen was left behind after it exited")
