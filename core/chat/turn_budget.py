"""The budget of one user message: how many model requests and tool calls it may cause in all.

A model can loop (tool after tool) or fan out (delegates that delegate), and a model steered by an
injection can do so on purpose. The per-chat limits (`MAX_TOOL_CALLS` in a sub-chat, the delegation
depth) bound one agent; this bounds the whole turn: the user's chat and every delegate at every depth
draw from one `TurnBudget`, made when the user sends a message ([chat] max_requests_per_turn,
max_tool_calls_per_turn). When it is spent, no request is sent and no tool runs; the turn ends with the
reply marked incomplete and a sentence saying which limit stopped it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from core.providers.base import ProviderError


@dataclass
class TurnBudget:
    max_requests: int
    max_tool_calls: int
    requests: int = 0
    tool_calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_config(cls, config) -> "TurnBudget":
        return cls(int(config.chat.max_requests_per_turn), int(config.chat.max_tool_calls_per_turn))

    def take_request(self) -> ProviderError | None:
        """Count one model request, or say why it may not be sent (the budget is spent)."""
        with self._lock:
            if self.requests >= self.max_requests:
                return ProviderError(
                    f"Stopped: this message has used its {self.max_requests} model requests (tool steps and "
                    "delegated agents included; [chat] max_requests_per_turn); the reply so far is kept, marked "
                    "incomplete. Ask again to go on, or raise the limit in config.toml.", kind="turn_budget")
            self.requests += 1
            return None

    def take_tool_call(self) -> str | None:
        """Count one tool call, or the sentence the model gets instead of running it."""
        with self._lock:
            if self.tool_calls >= self.max_tool_calls:
                return (f"Not run: this message has used its {self.max_tool_calls} tool calls "
                        "([chat] max_tool_calls_per_turn); answer with what you have.")
            self.tool_calls += 1
            return None

    def can_delegate(self) -> str | None:
        """Why a delegation may not start (it needs at least one request of its own), else None."""
        with self._lock:
            if self.requests >= self.max_requests:
                return (f"Not delegated: this message has used its {self.max_requests} model requests "
                        "([chat] max_requests_per_turn); do the task yourself with what you have.")
            return None

    @property
    def tool_calls_spent(self) -> bool:
        with self._lock:
            return self.tool_calls >= self.max_tool_calls

    def spent_error(self) -> ProviderError:
        return ProviderError(
            f"Stopped: this message has used its {self.max_tool_calls} tool calls (delegated agents included; "
            "[chat] max_tool_calls_per_turn); the reply so far is kept, marked incomplete.", kind="turn_budget")
