"""Messages the panes post; the App (which owns the state) handles them with @on."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from core.chat.focus import Focus


@dataclass
class OpenNode(Message):
    """Open a node in a Focus tab (or switch to its tab)."""

    node_id: int
    title: str = ""  # when the sender knows it: the tab is labelled right away, not after loading


@dataclass
class FocusChanged(Message):
    """The Focus panel's open tabs or active tab changed."""

    focus: Focus


@dataclass
class NodesChanged(Message):
    """Nodes were created, edited or deleted (here or by another process): refresh views, index."""

    node_ids: tuple[int, ...] = ()


@dataclass
class EditInEditor(Message):
    """Edit a node's source in $VISUAL / $EDITOR (E in the Focus panel)."""

    node_id: int


@dataclass
class FollowLink(Message):
    """Follow a [[link]] in a note's text (enter or a click in a Focus tab; tui/flows/note_links.py):
    `links` (core.vault.parse.WikiLink) in the text's order, `chosen` the one meant (None: offer them)."""

    node: dict | None  # the note they are in (a link resolves nearest to it)
    links: tuple
    chosen: int | None = None


@dataclass
class ReviewLinks(Message):
    """Review the links proposed for a node: "integrate" (related nodes) or "mention" (nodes its text names)."""

    node_id: int
    title: str
    mode: str = "integrate"


@dataclass
class IndexStatusChanged(Message):
    """The header's line about meaning search changed (tui/index_status.py). Posted from the index run's
    threads: post_message is thread-safe and does not wait for the UI, as call_from_thread would (the
    embedding thread reports progress, and a wait there would stall the model)."""

    text: str
