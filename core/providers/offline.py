"""No provider configured: answer with the most relevant notes and their citations, clearly labelled
as not written by a model. The Context viewer still shows what would be sent."""

from __future__ import annotations

import threading
from typing import Iterator

from core.providers.base import Provider, StreamEvent, Turn, Usage

OFFLINE = "*Offline answer — not written by a model.* No LLM provider is configured"
LABEL = f"{OFFLINE} (see `cairn ask --help`)."  # the command line's; the app passes its own (where to choose one)


class OfflineProvider(Provider):
    name = "offline"
    remote = False
    supports_tools = False

    def __init__(self, label: str = LABEL):
        super().__init__("offline")
        self.label = label  # the first line of every answer: offline, and how to choose a provider

    def body(self, turn: Turn) -> dict:
        from core.providers.anthropic_provider import AnthropicProvider

        # What an Anthropic request would look like, for the viewer; nothing is sent anywhere.
        return AnthropicProvider("", "offline").body(turn)

    def stream(self, turn: Turn, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
        passages = turn.request.suffix.passages
        if not passages:
            text = f"{self.label}\n\nNo note in your graph matches this message closely enough to quote."
        else:
            lines = [self.label, "", "The notes most relevant to your message:", ""]
            for p in passages:
                snippet = " ".join(p.text.split())
                if len(snippet) > 280:
                    snippet = snippet[:279].rstrip() + "…"
                recent = " *(a recent note, not ranked for this question)*" if p.via == "recent" else ""
                lines.append(f"- [{p.n}] **{p.title}**{recent} — {snippet}")
            text = "\n".join(lines)
        for piece in text.splitlines(keepends=True):
            if cancel is not None and cancel.is_set():
                yield StreamEvent("stop", stop_reason="cancelled")
                return
            yield StreamEvent("text", text=piece)
        yield StreamEvent("usage", usage=Usage())
        yield StreamEvent("stop", stop_reason="end_turn")
