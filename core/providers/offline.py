"""No provider configured: answer with the most relevant notes and their citations, clearly labelled
as not written by a model. The Context viewer still shows what would be sent."""

from __future__ import annotations

import threading
from typing import Iterator

from core.providers.base import Provider, StreamEvent, Turn, Usage

LABEL = "*Offline answer — not written by a model.* No LLM provider is configured (see `cairn ask --help`)."


class OfflineProvider(Provider):
    name = "offline"
    remote = False
    supports_tools = False

    def __init__(self):
        super().__init__("offline")

    def body(self, turn: Turn) -> dict:
        from core.providers.anthropic_provider import AnthropicProvider

        # What an Anthropic request would look like, for the viewer; nothing is sent anywhere.
        return AnthropicProvider("", "offline").body(turn)

    def stream(self, turn: Turn, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
        passages = turn.request.suffix.passages
        if not passages:
            text = f"{LABEL}\n\nNo note in your graph matches this message closely enough to quote."
        else:
            lines = [LABEL, "", "The notes most relevant to your message:", ""]
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
