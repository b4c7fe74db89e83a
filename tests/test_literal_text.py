"""Untrusted note text is shown literally (issue 7): Rich markup stays bracket text, ANSI/OSC escape
sequences and bidi controls are neutralised (shown as visible `\\uXXXX`), in the CLI and in the TUI."""

from __future__ import annotations

import json
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.safe_text import printable
from core.graph.store import Store
from tui_support import wait_for

MARKUP = "[bold]x[/bold] [link=https://evil]y[/link] [/] [red]z"
ESCAPES = ("\x1b[31mRED\x1b[0m \x1b]8;;http://x\x07click\x1b]8;;\x07 \x1b]52;c;aGVsbG8=\x07 \x9b2J \x1b[2J"
           " \x07bell \x08bs \r\x1b[1A")
BIDI = "\u202eevil\u202c \u2066iso\u2069 \u200f"
TITLE = f"Zebraword {MARKUP} {ESCAPES} {BIDI}"
SOURCE = f"# Heading {MARKUP}\n\nzebraword body {MARKUP}\n\n{ESCAPES}\n\n{BIDI} end"
DESCRIPTION = f"desc {MARKUP} {ESCAPES} {BIDI}"

# Never in what reaches the terminal: ESC, BEL, backspace, CR, C1 controls, bidi overrides/isolates/marks.
RAW_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
LITERALS = ("[bold]x[/bold]", "[link=https://evil]y[/link]", "[/]", "[red]z")


@pytest.fixture
def hostile(tmp_path):
    db = tmp_path / "lit.db"
    with Store(db) as s:
        a = s.add_node(TITLE, SOURCE, description=DESCRIPTION, dimensions=["[red]dim", "\x1b[1mdim2"],
                       link="https://example.org/[bold]")
        b = s.add_node(f"Other {MARKUP}", "plain")
        s.add_edge(a["id"], b["id"], f"because {MARKUP} {ESCAPES}")
    return db, a["id"]


def _cli(capsys, *argv) -> str:
    from tui.cli.main import main

    rc = main([*argv])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert out.err == ""
    return out.out


def _assert_literal(text: str, *, literals=LITERALS) -> None:
    bad = RAW_CONTROL.findall(text)
    assert not bad, f"raw control characters reached the output: {bad!r}"
    for lit in literals:
        assert lit in text, (lit, text)
    assert "\\u001b" in text  # the escape is visible as text, not dropped silently


@pytest.mark.parametrize("verb", ["show", "search", "list", "hubs"])
def test_cli_prints_markup_escapes_and_bidi_literally(hostile, capsys, monkeypatch, verb):
    monkeypatch.setenv("COLUMNS", "400")
    db, nid = hostile
    argv = {"show": ["show", str(nid)], "search": ["search", "zebraword", "--mode", "fts"],
            "list": ["list"], "hubs": ["hubs"]}[verb]
    out = _cli(capsys, *argv, "--db", str(db))
    _assert_literal(out)
    assert f"Zebraword {MARKUP}" in out
    if verb == "show":
        assert "desc [bold]x[/bold]" in out and "because [bold]x[/bold]" in out and "[red]dim" in out
        assert "# Heading [bold]x[/bold]" in out
    if verb == "search":
        assert f"[{nid}] Zebraword" in out


def test_cli_json_keeps_the_text_exactly_but_never_a_raw_escape(hostile, capsys):
    db, nid = hostile
    out = _cli(capsys, "show", str(nid), "--json", "--db", str(db))
    assert not RAW_CONTROL.findall(out.replace("\n", ""))  # C1 (U+009B is CSI) and bidi too, not only C0
    node = json.loads(out)
    assert node["title"] == TITLE.strip() and node["source"] == SOURCE and node["description"] == DESCRIPTION


@settings(derandomize=True, max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(text=st.lists(st.one_of(st.sampled_from(["\x1b", "[", "]", "/", "bold", "link=", "\x07", "\x9b", "\u202e",
                                                 "\u2066", "\r", "\n", "\t", "\\", "u001b", "😀", " "]),
                               st.text(max_size=5)), max_size=30).map("".join))
def test_any_title_and_text_print_without_raw_controls(tmp_path_factory, capsys, text):
    """Whatever the text, `cairn show` prints no raw control or bidi character, and every printable
    character of the text survives (printable() only replaces, never drops)."""
    db = tmp_path_factory.mktemp("prop") / "p.db"
    title = (text.replace("\x00", "").strip() or "t")[:500]
    source = text.replace("\x00", "")
    try:
        source.encode("utf-8")
        title.encode("utf-8")
    except UnicodeEncodeError:
        return
    with Store(db) as s:
        nid = s.add_node(title, source)["id"]
    out = _cli(capsys, "show", str(nid), "--db", str(db))
    assert not RAW_CONTROL.findall(out.replace("\n", "").replace("\t", ""))
    for ch in source:
        if not RAW_CONTROL.match(ch) and not ch.isspace():
            assert ch in out, (ch, out)


def test_printable_is_total_and_leaves_safe_text_alone():
    assert printable("[bold]x[/bold] é 😀 e\u0301\tx\ny") == "[bold]x[/bold] é 😀 e\u0301\tx\ny"
    assert printable("\x1b[31m") == "\\u001b[31m"
    assert printable("\u202e\u2066\x9b\x7f\x00") == "\\u202e\\u2066\\u009b\\u007f\\u0000"


# -- the TUI -----------------------------------------------------------------------------------------
async def _wait(pilot, condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within the timeout")
        await pilot.pause(0.01)


async def test_tui_shows_hostile_node_literally(hostile, monkeypatch):
    from textual.widgets import Static

    from tui.app import CairnApp
    from tui.widgets.focus_panel import FocusPanel
    from tui.widgets.node_browser import NodeList

    monkeypatch.setattr(CairnApp, "index_pending", lambda self: None)
    db, nid = hostile
    app = CairnApp(db, first_run_prompt=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await _wait(pilot, lambda: len(app.query_one(NodeList).options) == 2)
        rows = [o.prompt.plain for o in app.query_one(NodeList).options]
        row = next(r for r in rows if r.startswith("Zebraword"))
        assert row.startswith(f"Zebraword {MARKUP}")
        assert not RAW_CONTROL.findall(row.replace("\n", ""))
        assert "[red]dim" in row

        panel = app.query_one(FocusPanel)
        panel.open_node(nid)
        await _wait(pilot, lambda: panel.view(nid) is not None and panel.view(nid).node is not None)
        await pilot.pause()
        view = panel.view(nid)
        tab = panel.query_one("ContentTab").label.plain
        assert tab.startswith("Zebraword [bold]x[/bold") and not RAW_CONTROL.findall(tab)
        title = str(view.query_one(".node-title", Static).render())
        assert title.startswith(f"Zebraword {MARKUP}") and not RAW_CONTROL.findall(title)
        assert "\\u001b" in title and "\\u202e" in title
        fields = str(view.query_one(".node-fields", Static).render())
        assert "desc [bold]x[/bold]" in fields and not RAW_CONTROL.findall(fields.replace("\n", ""))
        source = view.query_one(".node-source").source
        assert "zebraword body [bold]x[/bold]" in source and not RAW_CONTROL.findall(source.replace("\n", ""))
        rendered = lambda: "\n".join(strip.text for strip in app.screen._compositor.render_strips())
        await wait_for(pilot, lambda: "[link=https://evil]y[/link]" in rendered(), what="the view painted")
        screen = rendered()
        assert not RAW_CONTROL.findall(screen.replace("\n", "")), RAW_CONTROL.findall(screen)
        assert "[bold]x[/bold]" in screen
        assert "[link=https://evil]y[/link]" in screen
