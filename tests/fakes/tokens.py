"""Deterministic token estimates and the canonical block serialisation used by the fake servers.

Token estimate
    ``count_text(s) == ceil(len(s.encode("utf-8")) / 4)``: one token per 4 UTF-8 bytes, rounded up.
    It is not a real tokenizer, only a stable, documented rule that tests and the cost benchmark
    can compute by hand (4,096 ASCII characters == 1,024 tokens).

Canonical serialisation
    A request is flattened into an ordered list of ``Block`` s, the unit the cache simulations
    count in (Anthropic's 20-block lookback counts these blocks):

    1. tools: each tool definition is one block (in the order given);
    2. system: a ``system`` string is one text block; a list gives one block per entry
       (Anthropic only; for OpenAI, system/developer messages are ordinary messages);
    3. messages, in order: a string ``content`` is one text block; a list gives one block per
       content part. OpenAI assistant ``tool_calls`` add one block per call after the content.

    ``Block.canonical`` is the text that is counted and compared: for a text block the text
    itself, for anything else (tool definitions, tool_use, tool_result, images ...) compact JSON
    with sorted keys and ``cache_control`` removed. ``Block.tokens == count_text(canonical)``;
    a request's input tokens are the sum over its blocks (no per-message overhead).
    ``Block.key`` (kind, role, type and canonical bytes) is what the prefix hashes cover, so the
    same text moved from the system prompt into a user message is a different prefix.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Iterable


def count_text(text: str) -> int:
    """Estimated tokens of a text: ceil(UTF-8 bytes / 4)."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def canonical_json(obj: Any) -> str:
    """Compact, key-sorted JSON (non-ASCII kept as is) with every ``cache_control`` key removed."""
    return json.dumps(_strip_cache_control(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _strip_cache_control(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_cache_control(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_strip_cache_control(v) for v in obj]
    return obj


@dataclass(frozen=True)
class Block:
    """One unit of the canonical serialisation."""

    kind: str  # "tool" | "system" | "message"
    role: str  # "" for tools, "system" for system blocks, else the message role
    type: str  # "text", "tool", "tool_use", "tool_result", "image", "tool_call", ...
    canonical: str
    cache_control: dict | None = field(default=None, compare=False)

    @property
    def tokens(self) -> int:
        return count_text(self.canonical)

    @property
    def key(self) -> bytes:
        return f"{self.kind}\x1f{self.role}\x1f{self.type}\x1f".encode() + self.canonical.encode("utf-8")


def _content_block(kind: str, role: str, part: Any) -> Block:
    if isinstance(part, str):
        return Block(kind, role, "text", part)
    if not isinstance(part, dict):
        return Block(kind, role, "unknown", canonical_json(part))
    ptype = str(part.get("type", "unknown"))
    cc = part.get("cache_control")
    if ptype == "text" and isinstance(part.get("text"), str) and set(part) <= {"type", "text", "cache_control"}:
        return Block(kind, role, "text", part["text"], cc)
    return Block(kind, role, ptype, canonical_json(part), cc)


def anthropic_blocks(body: dict) -> list[Block]:
    """Canonical blocks of an Anthropic Messages request: tools, system, then message content."""
    blocks: list[Block] = []
    for tool in body.get("tools") or []:
        blocks.append(Block("tool", "", "tool", canonical_json(tool), tool.get("cache_control") if isinstance(tool, dict) else None))
    system = body.get("system")
    if isinstance(system, str):
        if system:
            blocks.append(Block("system", "system", "text", system))
    elif isinstance(system, list):
        blocks.extend(_content_block("system", "system", part) for part in system)
    for msg in body.get("messages") or []:
        role = str(msg.get("role", ""))
        content = msg.get("content")
        if isinstance(content, str):
            blocks.append(Block("message", role, "text", content))
        elif isinstance(content, list):
            blocks.extend(_content_block("message", role, part) for part in content)
    return blocks


def openai_blocks(body: dict) -> list[Block]:
    """Canonical blocks of an OpenAI Chat Completions request: tools, then messages in order."""
    blocks: list[Block] = []
    for tool in body.get("tools") or []:
        blocks.append(Block("tool", "", "tool", canonical_json(tool)))
    for msg in body.get("messages") or []:
        role = str(msg.get("role", ""))
        if role == "tool":
            role = f"tool:{msg.get('tool_call_id', '')}"
        content = msg.get("content")
        if isinstance(content, str):
            blocks.append(Block("message", role, "text", content))
        elif isinstance(content, list):
            blocks.extend(_content_block("message", role, part) for part in content)
        for call in msg.get("tool_calls") or []:
            blocks.append(Block("message", role, "tool_call", canonical_json(call)))
    return blocks


def total_tokens(blocks: Iterable[Block]) -> int:
    return sum(b.tokens for b in blocks)


def prefix_tokens(blocks: list[Block]) -> list[int]:
    """``out[i]`` = tokens of blocks[0..i] inclusive."""
    out, acc = [], 0
    for b in blocks:
        acc += b.tokens
        out.append(acc)
    return out


def prefix_hashes(blocks: list[Block], salt: str = "") -> list[str]:
    """``out[i]`` = rolling SHA-256 over ``salt`` and blocks[0..i]: equal iff the prefixes are equal."""
    out = []
    h = hashlib.sha256(salt.encode("utf-8")).digest()
    for b in blocks:
        key = b.key
        h = hashlib.sha256(h + len(key).to_bytes(8, "big") + key).digest()
        out.append(h.hex())
    return out


def common_prefix_tokens(a: list[Block], b: list[Block]) -> int:
    """Tokens of the longest common prefix of two block lists.

    Whole equal blocks count in full; inside the first differing block (same kind/role/type) the
    common leading bytes count as ``floor(bytes / 4)`` tokens, so a shared prefix of a long text
    block still counts, as with a real token-level prefix cache.
    """
    n = 0
    for x, y in zip(a, b):
        if x.key == y.key:
            n += x.tokens
            continue
        if (x.kind, x.role, x.type) == (y.kind, y.role, y.type):
            xb, yb = x.canonical.encode("utf-8"), y.canonical.encode("utf-8")
            i = 0
            for i, (cx, cy) in enumerate(zip(xb, yb)):
                if cx != cy:
                    break
            else:
                i = min(len(xb), len(yb))
            n += i // 4
        break
    return n
