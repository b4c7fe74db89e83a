"""The provider-neutral request: what a chat turn or a side request sends, before a provider lays it
out in its own body with its cache markers (core/providers/*_provider.py).

Block order is the contract (DESIGN.md, "The context engine"): the stable prefix (tools, system part,
skills, core notes, background hubs, history as sent, the new user text) is cached; the volatile
suffix (focused nodes, retrieved passages, the date/time) is appended to the user text and never
stored in history. core/chat/request.py builds these; nothing else does.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field


def estimate_tokens(text: str) -> int:
    """An estimate (about 4 characters a token for English); providers' reported usage corrects it."""
    return math.ceil(len(text.encode("utf-8")) / 4) if text else 0


@dataclass
class Block:
    name: str
    text: str
    cached: bool

    @property
    def tokens_est(self) -> int:
        return estimate_tokens(self.text)

    def summary(self) -> dict:
        return {"name": self.name, "cached": self.cached, "tokens_est": self.tokens_est}


@dataclass
class Passage:
    n: int
    node_id: int
    title: str
    heading_path: list[str]
    text: str
    cosine: float | None  # None for a keyword-fallback passage (core.search.retrieval_fallback)
    via: str = "search"  # "search"; in the keyword fallback "keyword" or "recent" (a recent note, not a match)
    page: int | None = None  # the page of a paged document (a captured PDF) the passage is on: "p. 4"
    origin: str = "user"  # where its node's text came from (core.graph.provenance): not "user", it is fenced


@dataclass
class Snapshot:
    """What a conversation fixes at its start so its prefix never changes."""

    tools: list[dict]
    system: str
    core_notes: str
    background: str
    node_ids: list[int]  # nodes whose content is in the system part (for sent_log)
    # system 2: the skill catalog and workflow list (orchestrators). A default, so the snapshots of
    # chats started before skills existed still load (they simply have no catalog).
    skills: str = ""

    def as_json(self) -> str:
        return json.dumps(self.__dict__, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> "Snapshot":
        return cls(**json.loads(text))


@dataclass
class Suffix:
    focus: str
    retrieved: str
    datetime: str
    passages: list[Passage] = field(default_factory=list)
    node_ids: list[int] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n\n".join(p for p in (self.focus, self.retrieved, self.datetime) if p)


@dataclass
class CachePlan:
    """How long a provider with explicit cache breakpoints (Anthropic) keeps the parts of a request that
    outlive a turn, as core/chat/cache_policy.py chose it: `system_ttl` for the breakpoint closing the
    system part, `history_ttl` for the ones in and closing the history ("5m" or "1h"; never a 1h one
    after a 5m one). `reason` is the sentence the Context viewer and `cairn context` show;
    `expected_usd` the expected cost per turn of each plan weighed ({"system/history": USD})."""

    system_ttl: str = "5m"
    history_ttl: str = "5m"
    reason: str = ""
    expected_usd: dict = field(default_factory=dict)
    gaps_s: tuple = ()  # the gaps between turns the choice was made on, oldest first (seconds)

    def as_dict(self) -> dict:
        return {"system_ttl": self.system_ttl, "history_ttl": self.history_ttl, "reason": self.reason,
                "expected_usd_per_turn": dict(self.expected_usd), "gaps_s": [round(g, 1) for g in self.gaps_s]}


@dataclass
class ContextRequest:
    """Provider-neutral request: providers lay it out in this order and add cache markers."""

    snapshot: Snapshot
    history: list[dict]  # messages as sent: {"role", "content": [neutral blocks]}
    user_text: str
    suffix: Suffix
    model: str
    # The TTLs of the breakpoints that outlive a turn (core/chat/cache_policy.py); None: the provider's
    # configured default (a side request: one request, nothing to carry over).
    cache: CachePlan | None = None

    def blocks(self) -> list[Block]:
        out = [Block("tools", json.dumps(self.snapshot.tools, ensure_ascii=False), True),
               Block("system", self.snapshot.system, True)]
        if self.snapshot.skills:
            out.append(Block("skills", self.snapshot.skills, True))
        if self.snapshot.core_notes:
            out.append(Block("core_notes", self.snapshot.core_notes, True))
        if self.snapshot.background:
            out.append(Block("background", self.snapshot.background, True))
        if self.history:
            out.append(Block("history", json.dumps(self.history, ensure_ascii=False), True))
        out.append(Block("user", self.user_text, True))
        for name in ("focus", "retrieved", "datetime"):
            text = getattr(self.suffix, name)
            if text:
                out.append(Block(name, text, False))
        return out

    @property
    def node_ids(self) -> list[int]:
        seen: dict[int, None] = {}
        for i in [*self.snapshot.node_ids, *self.suffix.node_ids]:
            seen.setdefault(i, None)
        return list(seen)
