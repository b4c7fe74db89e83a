"""F1 help for the focused pane. CONTRACT: HelpScreen(focused_widget).

Lists the key bindings that act where the focus is (the focused widget and its ancestors, nearest
first) and those that act everywhere (the app), with each binding's key as currently mapped, its
description and its id — the name to use in the config file's [keymap] table to remap it.

The ids are shown whole at every width (the note below the table asks for them; at 80 columns they
were cut to `send_messag`, issue 26): the Id, Where and Key columns take their full widths and the
Action column the rest, its descriptions wrapping onto more lines (see column_widths).
"""

from __future__ import annotations

import re

from rich.cells import cell_len
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingsMap
from textual.containers import Vertical
from textual.keys import KEY_DISPLAY_ALIASES, format_key
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from core.safe_text import printable


def display_key(key: str) -> str:
    """A key as people type it in the config: "ctrl+w", "[" (not "left_square_bracket")."""
    *modifiers, name = key.split("+")
    char = format_key(name)
    if len(char) != 1 or name in KEY_DISPLAY_ALIASES or not char.isprintable() or char.isspace():
        char = name  # "escape", "enter", "space", "f1": the names the config takes
    return "+".join([*modifiers, char])


def _pane(node) -> str:
    """The pane the focused widget sits in, as the user knows it ("the Focus pane"); else its class."""
    for ancestor in node.ancestors_with_self:
        name = getattr(ancestor, "PANE_NAME", None)
        if name:
            return name
    return _where(node)


def _where(node) -> str:
    """Where a binding acts, as the user knows it: a pane ("Focus") or a widget ("chat input"), short
    enough that the table's Id column fits at 80 columns."""
    name = getattr(node, "PANE_NAME", None)
    if name:
        return name.removeprefix("the ").removesuffix(" pane")
    return re.sub(r"(?<!^)(?=[A-Z])", " ", type(node).__name__).lower()  # ChatInput -> "chat input"


def binding_rows(focused, app) -> list[tuple[str, str, str, str]]:
    """(where, keys, description, id) for the focused widget's chain, then the app. A binding shown is
    one with an id, or one meant for the footer; keys follow the app's keymap."""
    chain = list(focused.ancestors_with_self) if focused is not None else []
    chain = [n for n in chain if n is not app]
    keymap = getattr(app, "_keymap", {}) or {}
    rows: list[tuple[str, str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for node in [*chain, app]:
        bindings: BindingsMap = node._bindings.copy()
        if keymap:
            bindings.apply_keymap(keymap)
        grouped: dict[tuple, list[str]] = {}
        order: list[tuple] = []
        first: dict[tuple, Binding] = {}
        for key, binding in bindings:
            ident = (binding.id or "", binding.action)
            if ident not in grouped:
                grouped[ident] = []
                order.append(ident)
                first[ident] = binding
            if key not in grouped[ident]:
                grouped[ident].append(key)
        for ident in order:
            binding = first[ident]
            if not binding.id and not (binding.show and binding.description):
                continue
            if binding.system:
                continue
            if ident in seen:
                continue
            seen.add(ident)
            where = "everywhere" if node is app else _where(node)
            rows.append((where, ", ".join(display_key(k) for k in grouped[ident]), binding.description or binding.action, binding.id or ""))
    return rows


COLUMNS = ("Where", "Key", "Action", "Id")
ACTION_MIN = 12  # the Action column's least width before the Key column wraps too
KEY_MIN = 9  # the Key column's least width ("ctrl+j," and "alt+enter" on two lines)


def column_widths(rows: list[tuple[str, str, str, str]], room: int, padding: int = 1) -> list[int]:
    """Content widths of the Where, Key, Action and Id columns in `room` cells (each column also takes
    `padding` cells each side): Where and Id whole, Key whole while the Action column keeps
    ACTION_MIN, Action what is left (its text wraps). When even that does not fit, the table scrolls
    sideways; an id is never cut."""
    where, keys, action, ident = (max([cell_len(h), *(cell_len(r[i]) for r in rows)]) for i, h in enumerate(COLUMNS))
    left = room - 2 * padding * len(COLUMNS) - where - ident
    keys = max(min(keys, left - ACTION_MIN), min(keys, KEY_MIN))
    action = max(min(action, left - keys), ACTION_MIN)
    return [where, keys, action, ident]


class HelpTable(DataTable):
    """The bindings table, its columns fitted to its width whenever that changes."""

    def on_resize(self) -> None:
        screen = self.screen
        if isinstance(screen, HelpScreen):
            screen.fill_table()


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close", id="close_help")]

    def __init__(self, focused=None):
        super().__init__()
        self.focused_widget = focused

    def compose(self) -> ComposeResult:
        from core.paths import config_path

        pane = "nothing focused"
        if self.focused_widget is not None:
            pane = _pane(self.focused_widget)
        with Vertical(id="help-dialog", classes="dialog"):
            yield Static(Text(printable(f"Keys for {pane} (nearest first), then those that work everywhere")),
                         classes="dialog-title")
            yield HelpTable(id="help-table", cursor_type="row", zebra_stripes=True)
            try:
                where = str(config_path())
            except Exception:
                where = "config.toml"
            yield Static(Text(printable(
                f"Remap any key by its id in the [keymap] table of {where}, "
                'e.g. send_message = "ctrl+s". escape closes.')), classes="help-note")
        yield Footer()  # its own key (esc Close), not the main screen's, which do nothing here

    def on_mount(self) -> None:
        self.rows = [tuple(printable(cell) for cell in row) for row in binding_rows(self.focused_widget, self.app)]
        self._widths: list[int] = []
        self.fill_table()
        self.query_one("#help-table", DataTable).focus()

    def fill_table(self) -> None:
        """(Re)build the table with columns that fit its width (before the first layout: the screen's)."""
        table = self.query_one("#help-table", DataTable)
        room = (table.size.width or self.app.size.width) - table.styles.scrollbar_size_vertical
        widths = column_widths(self.rows, room, table.cell_padding)
        if widths == self._widths:
            return
        self._widths = widths
        row = table.cursor_row
        table.clear(columns=True)
        for label, width in zip(COLUMNS, widths):
            table.add_column(label, width=width)
        for cells in self.rows:
            # height None: as many lines as the wrapped description needs; the others stay whole
            table.add_row(*(Text(cell) for cell in cells), height=None)
        table.move_cursor(row=min(row, table.row_count - 1))
