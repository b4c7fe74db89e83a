"""What may leave the machine: the one policy every path asks (DESIGN.md, "Privacy").

`privacy.never_send` names dimensions whose nodes never leave the machine. The rule has two cases
and lives only here:
- a model provider: the dimensions are hidden from a remote one; a provider whose base URL is on
  loopback (Ollama, llama.cpp, LM Studio on this machine) is local and sees everything;
- an MCP client: always hidden, since Cairn cannot know where the client sends what it reads.
The context (prefix and suffix), every tool, the MCP server, integrate, distil and the sent log ask a
`SendPolicy`; none of them works the rule out again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable


@dataclass(frozen=True)
class SendPolicy:
    """The dimensions (lowercased) whose nodes may not be sent on one path; empty: everything may go."""

    hidden: frozenset[str] = frozenset()

    @classmethod
    def for_provider(cls, never_send: Iterable[str], provider) -> "SendPolicy":
        """The policy for requests to `provider` (its `remote` flag: not on loopback)."""
        return cls(_lowered(never_send)) if provider.remote else cls()

    @classmethod
    def for_mcp(cls, never_send: Iterable[str]) -> "SendPolicy":
        """The policy for an MCP client: never_send always applies."""
        return cls(_lowered(never_send))

    @property
    def restricts(self) -> bool:
        """Whether anything is hidden on this path (raw SQL, which could read any row, is then off)."""
        return bool(self.hidden)

    def allows(self, node: dict) -> bool:
        """Whether this node may leave: none of its dimensions is hidden."""
        return not self.hidden or not any(d.lower() in self.hidden for d in node.get("dimensions") or [])

    def allows_dimension(self, dimension: str) -> bool:
        return dimension.lower() not in self.hidden


def _lowered(dimensions: Iterable[str]) -> frozenset[str]:
    return frozenset(d.lower() for d in dimensions)
