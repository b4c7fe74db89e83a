"""NO_COLOR (https://no-color.org) is honoured by the app and the command line (issue 17), read back
from a real terminal: `tmux capture-pane -e` keeps the escape sequences the program wrote.

The CLI (Rich) then writes no colour at all; the app (Textual) draws in greys: every foreground and
background it sets has red = green = blue (Textual's monochrome filter, its reading of NO_COLOR).
"""

from __future__ import annotations

import re
import shlex
import shutil

import pytest

from test_e2e_tmux import CAIRN, Terminal

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not on PATH; the NO_COLOR test reads a real terminal's escapes")

SGR = re.compile(r"\x1b\[([0-9;]*)m")


def colours(escaped: str) -> list[tuple[int, ...]]:
    """Every colour an SGR sequence sets: (r, g, b) for 24-bit, (n,) for 256/16-colour codes."""
    found = []
    for params in SGR.findall(escaped):
        parts = [int(p) if p else 0 for p in params.split(";")]
        i = 0
        while i < len(parts):
            p = parts[i]
            if p in (38, 48) and i + 1 < len(parts) and parts[i + 1] == 2:
                found.append(tuple(parts[i + 2:i + 5]))
                i += 5
            elif p in (38, 48) and i + 1 < len(parts) and parts[i + 1] == 5:
                found.append((parts[i + 2],))
                i += 3
            else:
                if 30 <= p <= 37 or 40 <= p <= 47 or 90 <= p <= 97 or 100 <= p <= 107:
                    found.append((p,))
                i += 1
    return found


def run_in_tmux(tmp_path, command: str, ready: str, width: int = 100, height: int = 30) -> str:
    t = Terminal(tmp_path, width, height)
    try:
        t.start(command)
        t.wait_text(ready)
        return t.tmux("capture-pane", "-p", "-e", "-t", t.session)
    finally:
        t.close()


def env_prefix(tmp_path, no_color: bool) -> str:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    prefix = (f"env -u COLUMNS -u LINES -u NO_COLOR -u FORCE_COLOR CAIRN_HOME={shlex.quote(str(tmp_path / 'cairn'))} "
              f"HOME={shlex.quote(str(home))} TERM=xterm-256color COLORTERM=truecolor ")
    return prefix + ("NO_COLOR=1 " if no_color else "")


@pytest.mark.parametrize("no_color", [False, True])
def test_the_command_line_writes_no_colour_under_no_color(tmp_path, no_color):
    cmd = env_prefix(tmp_path, no_color) + shlex.quote(str(CAIRN))
    script = f"{cmd} add 'A note' >/dev/null; {cmd} doctor; echo DONE; exec sleep 30"
    screen = run_in_tmux(tmp_path, script, "DONE")
    assert "log_file" in screen  # the doctor's findings are on screen
    if no_color:
        assert colours(screen) == [], colours(screen)[:10]
    else:
        assert colours(screen), "doctor colours its findings in a colour terminal (the test would prove nothing)"


@pytest.mark.parametrize("no_color", [False, True])
def test_the_app_draws_in_greys_under_no_color(tmp_path, no_color):
    script = env_prefix(tmp_path, no_color) + shlex.quote(str(CAIRN)) + "; exec sleep 30"
    screen = run_in_tmux(tmp_path, script, "Load Getting started (g)")
    rgb = [c for c in colours(screen) if len(c) == 3]
    assert rgb, "the app set no 24-bit colours at all"
    grey = all(r == g == b for r, g, b in rgb)
    assert grey is no_color, sorted(set(c for c in rgb if len(set(c)) > 1))[:10]
