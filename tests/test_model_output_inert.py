"""What a model or a provider says reaches the terminal as text, never as a command (issue 22): one
hostile string, fed to every path that prints a reply, a tool call, a title, a notice, a citation
check or a provider's error, in `cairn ask` / `cairn chats` (real processes against the fake servers)
and in the app (the bytes Textual would write to the terminal, rendered headless).

The string would write the clipboard (OSC 52), plant a hyperlink (OSC 8), clear the screen, colour
through an 8-bit CSI (U+009B) and move the cursor back (CR, BS). core/safe_text.py `printable()` shows
each control as a visible `\\uXXXX`.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from chat_support import KEY, _no_proxies, anth  # noqa: F401  (fixtures: no proxies, the fake Anthropic server)
from core.safe_text import printable
from tui_support import wait_for

HOSTILE = ("\x1b]52;c;ZXZpbA==\x07 \x1b]8;;https://evil.example\x07click\x1b]8;;\x07 \x1b[2J\x1b[H \x9b31m "
           "\r\x08 done")
SHOWN = "\\u001b]52;c;ZXZpbA==\\u0007"  # how its first sequence reads once escaped
# The reply streamed in pieces that split its escape sequences (each piece is escaped on its own).
PIECES = ["Otters live along rivers [1]. \x1b]5", "2;c;ZXZpbA==\x07 \x1b]8;;https://ev", "il.example\x07click\x1b",
          "]8;;\x07 \x1b[2", "J\x1b[H \x9b", "31m \r", "\x08 done"]
assert "".join(PIECES) == "Otters live along rivers [1]. " + HOSTILE


def assert_inert(output: str, where: str) -> None:
    """Nothing of the hostile string acts on the terminal (Textual's own SGR and cursor moves aside)."""
    for sequence in ("\x1b]52", "\x1b]8;;https://evil", "evil.example\x07", "\x07", "\x9b", "\x1b[2J", "\x08"):
        assert sequence not in output, f"{where}: {sequence!r} reached the terminal"


# -- `cairn ask` and `cairn chats`, as processes ------------------------------------------------------
def assert_no_controls(data: bytes, where: str) -> None:
    """Piped, the CLI writes no escape of its own (no colour): any ESC, BEL, CSI, BS or CR is the string's."""
    for byte in (b"\x1b", b"\x07", "\x9b".encode(), b"\x08", b"\r"):
        assert byte not in data, f"{where}: {byte!r} reached the terminal\n{data.decode('utf-8', 'replace')}"


@pytest.fixture
def cli(cairn_cmd, cli_env):
    env = {k: v for k, v in cli_env.items() if not k.endswith(("_API_KEY", "_BASE_URL", "_PROXY", "_proxy"))}
    env.pop("FORCE_COLOR", None)
    Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    db = Path(env["CAIRN_HOME"]) / "cairn.db"
    db.parent.mkdir(parents=True, exist_ok=True)
    from core.graph.store import Store

    with Store(db) as store:  # a captured page's title: it comes back as a Sources line
        node = store.add_node(f"Otter habitats {HOSTILE}", "Otters live along rivers and coasts.")

    def run(*args, extra_env: dict | None = None) -> tuple[int, bytes, bytes]:
        proc = subprocess.run([*cairn_cmd, *map(str, args)], env={**env, **(extra_env or {})},
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr

    return run, node["id"], db


def test_cairn_ask_and_chats_print_a_hostile_reply_tool_call_title_and_check_inert(cli, anth):
    from fakes import invalid_tool_json, text

    run, node_id, _ = cli
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anth.base_url}
    assert run("config", "set", "chat.check_citations", "model")[0] == 0
    anth.script.add(text("".join(PIECES), deltas=PIECES), invalid_tool_json("queryNodes", raw=HOSTILE))
    anth.script.add(text(f"Otters live along coasts [1]. {HOSTILE}"))
    anth.script.add(text(json.dumps({"verdicts": [{"claim": n, "verdict": "unsupported", "why": HOSTILE}
                                                  for n in (1, 2)]})))
    rc, out, err = run("ask", f"Where do otters live? {HOSTILE}", "--provider", "anthropic", extra_env=env)
    assert rc == 0, err.decode()
    assert_no_controls(out + err, "cairn ask")
    shown, said = out.decode(), err.decode()
    assert "Otters live along rivers [1]. " + SHOWN in shown  # the reply, as streamed, escaped piece by piece
    assert "[tool] queryNodes " + SHOWN in said  # the tool call's raw arguments
    assert f"[NODE:{node_id}] Otter habitats {SHOWN}" in shown  # Sources: the node's title
    assert "does not support" in shown and shown.count(SHOWN) >= 4  # the citation check's lines
    assert len(anth.requests) == 3  # the reply, the step after the tool call, the judge

    rc, out, err = run("chats")  # the chat's title is the first line of the message
    assert rc == 0 and "Where do otters live? " + SHOWN in out.decode(), err.decode()
    assert_no_controls(out + err, "cairn chats")
    rc, out, err = run("chats", "show", "1")  # the transcript: the message and the reply
    assert rc == 0 and out.decode().count(SHOWN) >= 2, err.decode()
    assert_no_controls(out + err, "cairn chats show")


def test_cairn_ask_prints_a_providers_hostile_error_inert(cli, anth):
    from fakes import http_error, stream_error, text

    run, _, _ = cli
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anth.base_url}
    anth.script.add(http_error(400, HOSTILE))  # refused: the server's message is in the error
    rc, out, err = run("ask", "Where do otters live?", "--provider", "anthropic", extra_env=env)
    assert rc == 1
    assert_no_controls(out + err, "a refused request")
    assert SHOWN in (out + err).decode()

    anth.script.add(text("Otters live along", deltas=2), stream_error(after_deltas=1, message=HOSTILE))  # cut mid-reply: [incomplete reply: …]
    rc, out, err = run("ask", "Where do otters live?", "--provider", "anthropic", extra_env=env)
    assert rc == 1
    assert_no_controls(out + err, "an error mid-reply")
    assert "[incomplete reply" in out.decode() and SHOWN in out.decode()

    anth.script.add(http_error(400, HOSTILE))  # a side request's error is the command's error (tui/cli/main.py)
    rc, out, err = run("distil", "1", "--provider", "anthropic", extra_env=env)
    assert rc == 1
    assert_no_controls(out + err, "cairn distil's error")
    assert err.decode().startswith("cairn: The model could not distil chat 1") and SHOWN in err.decode()


def test_cairn_ask_prints_a_hostile_notice_inert(cli):
    """A notice names the model (`Cut 1 tool result of this turn to fit MODEL's context window.`): a
    local server's model is named by whoever set it up."""
    from fakes import FakeOpenAI, text, tool_call

    from core.providers.models import LOCAL_CONTEXT_WINDOW

    from core.graph.store import Store

    run, _, db = cli
    with Store(db) as store:  # three long notes: read whole, they do not fit a local model's window
        ids = [store.add_node(f"Long note {i}", " ".join(f"w{i}x{n}" for n in range(20_000)))["id"] for i in range(3)]
    with FakeOpenAI(compatible=True, context_window=LOCAL_CONTEXT_WINDOW) as srv:
        env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": srv.base_url}
        srv.script.add(tool_call("getNodesById", {"ids": ids}))
        srv.script.add(text("Read them."))
        rc, out, err = run("ask", "Read my notes", "--provider", "openai", "--model", f"llama3.2 {HOSTILE}",
                           extra_env=env)
        assert srv.errors == []
    assert rc == 0, err.decode()
    assert_no_controls(out + err, "a notice")
    assert "[Cut 1 tool result" in err.decode() and SHOWN in err.decode()


def test_printable_keeps_a_windows_line_end_and_escapes_a_lone_carriage_return():
    assert printable("one\r\ntwo\rthree") == "one\ntwo\\u000dthree"
    assert printable(printable(HOSTILE)) == printable(HOSTILE)  # escaping twice changes nothing
    assert "".join(printable(p) for p in PIECES) == printable("".join(PIECES))  # piece by piece is the same


# -- the app --------------------------------------------------------------------------------------------
def terminal_output(app) -> str:
    """What Textual writes to the terminal to draw the current screen in full (App._display writes the
    same string: the compositor's update rendered by the app's console)."""
    return app.screen._compositor.render_update(full=True).render_segments(app.console)


@pytest.fixture
def otter(store, indexer):
    node = store.add_node(f"Otter habitats {HOSTILE}", "Otters live along rivers and coasts.")
    indexer.run()
    return node["id"]


async def test_the_app_draws_a_hostile_reply_tool_call_sources_error_and_titles_inert(otter, db_path, embedder,
                                                                                     monkeypatch):
    import core.index.embedder
    from fakes import FakeAnthropic, http_error, invalid_tool_json, text
    from test_tui_chat import SIZE, RecordingApp, errors, metas, type_and_send
    from tui.screens.chat_list import ChatListScreen
    from tui.widgets.chat_pane import ChatPane, SourceList

    monkeypatch.setattr(core.index.embedder, "_shared", embedder)
    with FakeAnthropic() as srv:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)
        srv.script.add(text("".join(PIECES), deltas=PIECES), invalid_tool_json("queryNodes", raw=HOSTILE))
        srv.script.add(text(f"Otters live along coasts [1]. {HOSTILE}"))
        srv.script.add(text(json.dumps({"verdicts": [{"claim": n, "verdict": "unsupported", "why": HOSTILE}
                                                     for n in (1, 2)]})))
        srv.script.add(http_error(400, HOSTILE))
        app = RecordingApp(db_path, first_run_prompt=False)
        async with app.run_test(size=SIZE, notifications=True) as pilot:
            await pilot.pause()
            app.services.config.chat.provider = "anthropic"
            app.services.config.chat.check_citations = "model"
            pane = await type_and_send(pilot, app, f"Where do otters live? {HOSTILE}")
            await wait_for(pilot, lambda: metas(app) and app.query(SourceList), what="the reply and its sources")
            await pilot.pause()
            drawn = terminal_output(app)
            assert_inert(drawn, "the reply")
            assert "Otters live along rivers" in drawn and "ZXZpbA==" in drawn  # shown, as text
            assert "→ queryNodes" in drawn and "does not support" in drawn

            await type_and_send(pilot, app, "And coasts?")  # the provider refuses, quoting the server
            await wait_for(pilot, lambda: errors(app) and not pane.streaming, what="the error line")
            await pilot.pause()
            assert SHOWN in errors(app)[-1]
            assert_inert(terminal_output(app), "the provider's error")

            app.notify(f"Distil failed: {HOSTILE}", title=HOSTILE)  # a toast (any widget's notify comes here)
            await wait_for(pilot, lambda: "Distil failed" in terminal_output(app), what="the toast drawn")
            assert_inert(terminal_output(app), "a toast")

            await pilot.press("ctrl+o")  # the earlier chats: the title is the first message's first line
            await wait_for(pilot, lambda: isinstance(app.screen, ChatListScreen) and app.screen.shown,
                           what="the chats")
            await pilot.pause()
            drawn = terminal_output(app)
            assert_inert(drawn, "the chat list")
            assert "Where do otters live?" in drawn
            await pilot.press("ctrl+r")  # rename: the title in an editable box
            await pilot.pause()
            assert_inert(terminal_output(app), "the rename box")
        assert srv.errors == []


# -- the app in a real terminal: the bytes it wrote ----------------------------------------------------
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not on PATH")
def test_the_app_in_a_terminal_writes_no_sequence_of_a_hostile_reply(tmp_path, cairn_cmd, cli_env, anth):
    """The real `cairn` in tmux, the fake model answering with the hostile string (in pieces that split
    its sequences) and a tool call carrying it: every byte the app wrote to the terminal, from its first
    frame to its exit (tmux pipe-pane), holds none of the string's sequences."""
    from fakes import invalid_tool_json, text
    from test_e2e_tmux import CAIRN, Terminal, flat, pane

    home, cairn_home, raw = tmp_path / "home", tmp_path / "cairn", tmp_path / "written.bin"
    home.mkdir()
    env = {**cli_env, "HOME": str(home), "CAIRN_HOME": str(cairn_home)}
    subprocess.run([*cairn_cmd, "config", "set", "chat.provider", "anthropic"], env=env, check=True,
                   capture_output=True, timeout=60)
    subprocess.run([*cairn_cmd, "add", "Otters live along rivers and coasts.", "--title", f"Otter habitats {HOSTILE}"],
                   env=env, check=True, capture_output=True, timeout=120)
    anth.script.add(text("".join(PIECES), deltas=PIECES), invalid_tool_json("queryNodes", raw=HOSTILE))
    anth.script.add(text(f"Otters live along coasts. {HOSTILE}"))
    command = (f"env -u OPENAI_API_KEY -u OPENAI_BASE_URL -u CAIRN_DEBUG -u COLUMNS -u LINES "
               f"CAIRN_HOME={shlex.quote(str(cairn_home))} HOME={shlex.quote(str(home))} "
               f"ANTHROPIC_API_KEY={KEY} ANTHROPIC_BASE_URL={anth.base_url} {shlex.quote(str(CAIRN))}")
    t = Terminal(tmp_path, 160, 48)
    try:
        t.start(f"read _; {command}; echo '[cairn exited]'; exec sleep 120")  # waits for the pipe below
        t.tmux("pipe-pane", "-t", t.session, "-o", f"cat >> {shlex.quote(str(raw))}")
        t.keys("Enter")
        t.wait_text("Nodes ·", "Otter habitats", timeout=60)  # a loaded CI machine: the first start is slow
        # the chat pane is built after the first frame: a ctrl+l before it is drawn focused an input
        # with no layout yet, and the terminal cursor stayed on the top row (seen once on a loaded machine)
        t.wait_text("Ask about your notes…", timeout=60)
        t.keys("C-l")
        t.wait_cursor_row(t.row_of("Ask about your notes…"), "the chat input")
        t.type("Where do otters live?")
        t.wait_text("Where do otters live?")
        t.keys("C-j")
        t.wait_for("the reply after the tool call",  # retrieval loads the embedder in the app first
                   lambda s: "Otters live along coasts" in flat(pane(s, 2)) and "complete" in flat(pane(s, 2)),
                   timeout=90)
        t.keys("C-q")
        t.wait_text("[cairn exited]")
    finally:  # checked even when a step timed out: a leaked sequence can garble the screen it waits on
        t.close()
        written = raw.read_bytes().decode("utf-8", "replace") if raw.exists() else ""
        drawn = re.sub(r"\x1b\]22;[a-z-]*\x07", "", written)  # the mouse pointer's shape (OSC 22) is Textual's
        assert_inert(drawn, "the app's terminal output")
    assert "ZXZpbA==" in written and "queryNodes" in written  # the reply and the tool line were drawn


def test_a_hostile_file_name_is_printed_inert(cli, tmp_path):
    """A folder anyone could have filled: its file names reach the import's progress lines."""
    run, _, _ = cli
    folder = tmp_path / "drop"
    folder.mkdir()
    (folder / "a\x1b]52;c;ZXZpbA==\x07.txt").write_text("a note\n")
    code, out, err = run("import", folder)
    assert code == 0 and SHOWN.encode() in err
    assert_no_controls(out + err, "cairn import")
