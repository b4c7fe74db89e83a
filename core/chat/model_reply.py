"""One model request whose reply is read whole, not shown as it streams: the distil proposals
(core.assist.distil), integrate's drafted explanations (core.assist.integrate) and the citation judge
(core.chat.citations). `complete` sends a system prompt and one user message and collects the reply;
`json_payload` reads the JSON the prompt asked for. Each caller words its own errors (they say what
was being done and what is kept); this module says what went wrong.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import Any, Callable

from core.providers.base import ProviderError, Usage

# The one liberty taken with a reply: the JSON wrapped in a markdown code fence (```json … ```).
_FENCE = re.compile(r"\A```[A-Za-z]*[ \t]*\n?(.*?)\n?\s*```\Z", re.S)


@dataclass
class Reply:
    text: str
    usage: Usage
    stop: str  # the provider's stop reason: "end_turn", "max_tokens", "cancelled", …


class ReplyFailed(ProviderError):
    """The provider failed during the request (an error event, or the stream raised). The message is the
    provider's; `text` and `usage` are what had arrived before it, `__cause__` the provider's error."""

    def __init__(self, error: BaseException, text: str, usage: Usage):
        super().__init__(str(error), getattr(error, "kind", "error"), getattr(error, "retryable", False))
        self.text = text
        self.usage = usage


class NotJSON(ValueError):
    """A reply that is not JSON: `empty` when there was nothing (after a fence), else `reason` says where
    parsing stopped; `body` is the text that was parsed, `error` the json module's error (None if empty)."""

    def __init__(self, body: str, error: json.JSONDecodeError | None):
        self.body = body
        self.error = error
        self.empty = error is None
        self.reason = "" if error is None else f"{error.msg} at line {error.lineno} column {error.colno}"
        super().__init__("the reply was empty" if error is None else f"the reply is not JSON ({self.reason})")


def complete(provider, system: str, user: str, *, chat_key: str, max_tokens: int,
             cancel: threading.Event | None = None, guard: Callable | None = None) -> Reply:
    """Send `system` and one user message to `provider` (no tools, no history) and return the whole reply.
    A provider error raises ReplyFailed; a cancelled request returns with stop "cancelled" (the caller
    says what that means for it); with `cancel` already set, nothing is sent. Nothing is sent either
    (ReplyFailed, no usage) when the request would not fit the model's window (core/chat/window.py) or
    `guard(provider, turn)` refuses it (core/chat/cost.py SpendGuard: the spending caps)."""
    from core.chat import window
    from core.chat.request import one_shot
    from core.providers.base import Turn

    if cancel is not None and cancel.is_set():  # stopped before it started: no request leaves
        return Reply("", Usage(), "cancelled")
    request = one_shot(system, user, provider.model)
    turn = Turn(request, [], chat_key, max_tokens)
    refused = window.too_long(provider, turn) or (guard(provider, turn) if guard is not None else None)
    if refused is not None:
        raise ReplyFailed(refused, "", Usage()) from refused
    turn = window.with_reply_room(provider, turn, window.Calibration())  # never more than the window leaves
    text, stop, usage = "", "", Usage()
    try:
        for event in provider.stream(turn, cancel):
            if event.type == "text":
                text += event.text
            elif event.type == "usage" and event.usage is not None:
                usage = usage + event.usage
            elif event.type == "stop":
                stop = event.stop_reason
            elif event.type == "error":
                raise ReplyFailed(event.error, text, usage) from event.error
    except ReplyFailed:
        raise
    except ProviderError as exc:
        raise ReplyFailed(exc, text, usage) from exc
    return Reply(text, usage, stop)


def json_payload(text: str) -> Any:
    """The JSON value in a model's reply (one markdown code fence around it is allowed); NotJSON if not."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        raise NotJSON(body, None)
    try:
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise NotJSON(body, exc) from None
