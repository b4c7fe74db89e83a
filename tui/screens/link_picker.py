"""The `[[links]]` of a note, to follow one (enter on a note with several, tui/flows/note_links.py).
CONTRACT: LinkPicker(links) → dismissed with the chosen link's number, or None (escape)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from core.safe_text import printable


class LinkPicker(ModalScreen[int | None]):
    DEFAULT_CSS = """
    LinkPicker {
        align: center middle;
    }
    LinkPicker > #link-picker {
        width: 70;
        max-width: 96%;
        height: auto;
        max-height: 90%;
        padding: 0 1;
        border: thick $accent;
        background: $surface;
    }
    LinkPicker #link-picker-title {
        color: $accent;
        text-style: bold;
        padding: 0 0 1 0;
    }
    LinkPicker #link-picker-options {
        height: auto;
        max-height: 16;
        border: none;
    }
    """
    BINDINGS = [Binding("escape", "dismiss(None)", "Close", id="close_link_picker")]

    def __init__(self, links):
        super().__init__()
        self.links = links

    def compose(self) -> ComposeResult:
        with Vertical(id="link-picker"):
            yield Static(Text("Follow a link — enter opens, escape closes"), id="link-picker-title")
            options = []
            for number, link in enumerate(self.links):
                label = Text(printable(link.shown), style="bold")
                target = link.link.target + (f"#{link.link.heading}" if link.link.heading else "")
                if link.shown != target:
                    label.append(printable(f"  → {target}"), style="dim")
                options.append(Option(label, id=f"link-{number}"))
            yield OptionList(*options, id="link-picker-options")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(int((event.option.id or "link-0").removeprefix("link-")))
