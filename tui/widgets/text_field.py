"""Whether the keyboard is in a text field: the panes' bare-key bindings stand aside there."""

from __future__ import annotations

import sys

from textual.widgets import Input


def is_text_field(widget) -> bool:
    """Whether keys typed into `widget` are text (so bare-key and ctrl+w/ctrl+e bindings stand aside)."""
    if isinstance(widget, Input):
        return True
    # TextArea costs ~8 ms to import and no pane shows one at startup: if its module is not loaded
    # yet, no widget can be a TextArea.
    text_area = sys.modules.get("textual.widgets._text_area")
    return text_area is not None and isinstance(widget, text_area.TextArea) and not widget.read_only
