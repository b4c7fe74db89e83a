"""The context-window policy: a request the API would refuse for its length is never sent.

Before each request of a chat turn (the first and each tool-loop step) `Chat.send` asks `fit()`:

* Size: `estimate_tokens` of the provider's own body (`provider.body(turn)` serialised as JSON: the
  tools, system, history, tool-loop messages and suffix exactly as they would go out), times the
  chat's correction ratio (below); a local llama.cpp counts it with the model's own tokenizer instead
  (`provider.prompt_tokens`, its POST /tokenize: 661 counted against 658 the server reported for
  SmolLM2, where the estimate said 666).
* Budget: the model's input limit, less room for the reply: the turn's max_tokens capped at the
  model's maximum output (`models.output_cap`). A local server (no maximum output in the table)
  stops a reply where its window ends, so for it the room kept is at most a quarter of the window.
* Correction: `Calibration` keeps, per chat (in its metadata), the sum of the input tokens the
  provider reported for earlier requests and the sum of their estimates; the ratio reported /
  estimated corrects the next estimate. It is never below 1 for an API (an over-estimate stays as a
  margin), down to LOCAL_RATIO_FLOOR for a local server (its usage is its tokenizer's count), and 1
  until a request has reported its usage.

When the request does not fit, it is shrunk in this order, each step only as far as needed:

1. cap the largest tool results of this turn: the tail of each is replaced by
   "… [cut: N characters to fit the context window]" (largest first, each kept to at least
   `MIN_RESULT_CHARS`);
2. summarise the older history through the rolling summary (`Chat._maybe_summarise`, forced; the
   last FOLD_KEEPS[0] exchanges stay); only before the turn's first request, when the history is what
   grows;
3. shrink the fixed part, in this order: the skills catalogue, then the tools the agent can do without
   (first every tool but the read tools, then those too: the retrieved passages still answer), then
   the background hub lines, the last (least connected) first. Before the first request only; a
   small local window (2,048 tokens) cannot hold Cairn's ~1,600 tokens of tools and catalogue;
4. drop retrieved passages from the suffix, the last (least relevant) first; also only before the
   first request (a tool-loop step keeps the passages the model has already read and cited);
5. fold the last exchanges too, keeping one, then none (the summary alone carries the chat): a long
   chat on a small window keeps going, and only a message too long on its own is refused.

A tool-loop step's results are capped before the step is stored, so the next turn's history carries
them as sent.

Each step that cut something yields one line for the user (a `notice` StreamEvent). If the request
still does not fit it is refused before anything is sent: `TooLong`, whose message names the part that
does not fit (your message alone, or the instructions and core notes beside it).

The reply's room: a request never asks for more reply tokens than the window leaves after its prompt
(`with_reply_room`), so a local server is not asked for 4,096 tokens of a 2,048-token window.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Callable

from core.providers import models
from core.providers.base import ProviderError, Turn
from core.providers.request import ContextRequest, estimate_tokens

CUT_MARK = "… [cut: {n:,} characters to fit the context window]"
MIN_RESULT_CHARS = 400  # a capped tool result keeps at least this much of its head
LOCAL_REPLY_SHARE = 4  # a local model: keep at most window // 4 for the reply
FOLD_KEEPS = (4, 1, 0)  # exchanges the forced rolling summary keeps, tried in turn
LOCAL_RATIO_FLOOR = 0.5  # a local server's own counts may lower the estimate to half, no further


class TooLong(ProviderError):
    """The request cannot be made to fit the model's window; nothing was sent."""

    def __init__(self, message: str):
        super().__init__(message, kind="context_window")


@dataclass
class Calibration:
    """Reported vs estimated input tokens of this chat's earlier requests (kept in chat metadata as
    `window_calibration`: [reported, estimated])."""

    reported: int = 0
    estimated: int = 0

    @classmethod
    def from_metadata(cls, metadata: dict) -> "Calibration":
        reported, estimated = (metadata.get("window_calibration") or [0, 0])[:2]
        return cls(int(reported), int(estimated))

    def save(self, metadata: dict) -> None:
        metadata["window_calibration"] = [self.reported, self.estimated]

    @property
    def ratio(self) -> float:
        return max(1.0, self.reported / self.estimated) if self.reported and self.estimated else 1.0

    def ratio_for(self, provider) -> float:
        """The correction for `provider`: never below 1 for an API (an over-estimate stays a margin), but
        for a local server, whose usage is its own tokenizer's exact count, down to LOCAL_RATIO_FLOOR: a
        small window is not wasted on an estimate above what the server counts."""
        if getattr(provider.facts, "provider", "") == "local" and self.reported and self.estimated:
            return max(LOCAL_RATIO_FLOOR, self.reported / self.estimated)
        return self.ratio

    def record(self, estimated: int, reported: int) -> None:
        """One request's raw estimate and the input tokens its provider reported (0: none reported)."""
        if reported > 0 and estimated > 0:
            self.reported += reported
            self.estimated += estimated


def raw_estimate(provider, turn: Turn) -> int:
    """Estimated tokens of what `provider` would send for `turn` (no correction)."""
    try:
        body = provider.body(turn)
    except NotImplementedError:  # a provider without a body (the offline one): the neutral blocks
        return sum(b.tokens_est for b in turn.request.blocks()) + estimate_tokens(
            json.dumps(turn.loop, ensure_ascii=False))
    return estimate_tokens(json.dumps(body, ensure_ascii=False, default=str))


def size_of(provider, turn: Turn, calibration: Calibration) -> int:
    """The prompt's tokens: counted by the server where it can (a local llama.cpp's own tokenizer,
    `prompt_tokens`), else the estimate corrected by the chat's ratio."""
    counted = getattr(provider, "prompt_tokens", None)
    counted = counted(turn) if counted is not None else None
    return counted if counted is not None else round(raw_estimate(provider, turn) * calibration.ratio_for(provider))


def budget(facts: models.ModelFacts, max_tokens: int) -> int:
    """The most prompt tokens a request may carry and still leave room for its reply."""
    reply = models.output_cap(facts, max_tokens)
    if not facts.max_output:  # a local server: the reply ends where the window does
        reply = min(reply, facts.context_window // LOCAL_REPLY_SHARE)
    return min(facts.input_limit, facts.context_window - reply)


def fit(provider, turn: Turn, calibration: Calibration, *,
        summarise: Callable[[int], list[dict] | None] | None = None, drop_passages: bool = True,
        message: str = "") -> tuple[Turn, list[str]]:
    """`turn` made to fit the model's window (tool results in `turn.loop` are capped in place), and
    the lines telling the user what was cut. `summarise(keep)` forces the rolling summary, keeping the
    last `keep` exchanges, and returns the shorter history (None: nothing summarised). Raises `TooLong`."""
    facts = provider.facts
    limit = budget(facts, turn.max_tokens)
    notes: list[str] = []

    def size(t: Turn) -> int:
        return size_of(provider, t, calibration)

    now = size(turn)
    if now <= limit:
        return turn, notes
    # 1. the largest tool results of this turn
    results = [b for m in turn.loop if m["role"] == "user" for b in m["content"]
               if b.get("type") == "tool_result" and isinstance(b.get("content"), str)]
    original: dict[int, int] = {}  # id(block) -> its length before any cut
    while now > limit:
        big = max((b for b in results if len(b["content"]) > MIN_RESULT_CHARS + 80), default=None,
                  key=lambda b: len(b["content"]))
        if big is None:
            break
        text = big["content"]
        full = original.setdefault(id(big), len(text))
        mark = text.rfind(CUT_MARK.split("{")[0])
        if mark >= 0 and full != len(text):  # cut before (by an earlier step): cut its kept head again
            text = text[:mark]
        over_chars = int((now - limit) * 4 / calibration.ratio_for(provider)) + 64
        keep = max(MIN_RESULT_CHARS, len(text) - over_chars)
        if keep >= len(text):
            break
        big["content"] = text[:keep] + CUT_MARK.format(n=full - keep)
        now = size(turn)
    capped = sum(1 for b in results if id(b) in original and len(b["content"]) != original[id(b)])
    if capped:
        notes.append(f"Cut {capped} tool result{'s' if capped > 1 else ''} of this turn to fit "
                     f"{facts.model or provider.model}'s context window.")
    # 2. the older history, into the rolling summary (the last FOLD_KEEPS[0] exchanges stay)
    if now > limit and summarise is not None:
        turn, now = _fold(turn, now, limit, size, summarise, FOLD_KEEPS[:1], notes)
    # 3. the fixed part: skills catalogue, tools, hub lines
    if now > limit and drop_passages:
        turn, now, dropped = _shrink_fixed_part(turn, now, limit, size)
        if dropped:
            notes.append(f"Left out {', '.join(dropped)} to fit {facts.model or provider.model}'s "
                         f"{facts.context_window:,}-token context window.")
    # 4. retrieved passages, the last first
    if now > limit and drop_passages and turn.request.suffix.passages:
        dropped_passages = 0
        while now > limit and turn.request.suffix.passages:
            turn = replace(turn, request=replace(turn.request, suffix=_without_last(turn.request.suffix)))
            dropped_passages += 1
            now = size(turn)
        notes.append(f"Left out {dropped_passages} retrieved passage{'s' if dropped_passages > 1 else ''} "
                     "to fit the context window.")
    # 5. the last exchanges too, into the summary: a chat never stops for its own history
    if now > limit and summarise is not None:
        turn, now = _fold(turn, now, limit, size, summarise, FOLD_KEEPS[1:], notes)
    if now > limit:
        raise TooLong(_refusal(provider, turn, calibration, limit, message))
    return turn, notes


def with_reply_room(provider, turn: Turn, calibration: Calibration) -> Turn:
    """`turn` asking for no more reply tokens than the window leaves after its prompt (a local server
    asked for 4,096 of a 2,048-token window would stop where the window ends, mid-sentence)."""
    room = provider.facts.context_window - size_of(provider, turn, calibration)
    return replace(turn, max_tokens=max(1, room)) if turn.max_tokens > room else turn


def _fold(turn: Turn, now: int, limit: int, size: Callable[[Turn], int],
          summarise: Callable[[int], list[dict] | None], keeps: tuple[int, ...],
          notes: list[str]) -> tuple[Turn, int]:
    """The history folded into the rolling summary keeping each of `keeps` last exchanges in turn, until
    the request fits."""
    for keep in keeps:
        history = summarise(keep)
        if history is not None:  # the rest of the request (what steps 3 and 4 cut) stays as it is
            turn = replace(turn, request=replace(turn.request, history=history))
            now = size(turn)
            notes.append("Summarised the older conversation to fit the context window." if keep else
                         "Summarised the whole conversation so far to fit the context window.")
        if now <= limit:
            break
    return turn, now


def _shrink_fixed_part(turn: Turn, now: int, limit: int, size: Callable[[Turn], int]) -> tuple[Turn, int, list[str]]:
    """Step 3: the skills catalogue, then the tools (all but the read tools, then those), then the hub
    lines from the last, until the request fits; what was left out, in words."""
    from core.agent.profiles import READ_TOOLS

    dropped: list[str] = []

    def snap(**changes) -> Turn:
        return replace(turn, request=replace(turn.request, snapshot=replace(turn.request.snapshot, **changes)))

    if now > limit and turn.request.snapshot.skills:
        turn = snap(skills="")
        now = size(turn)
        dropped.append("the skills catalogue")
    tools = turn.request.snapshot.tools
    for keep in ([t for t in tools if t["name"] in READ_TOOLS], []):
        if now > limit and len(keep) < len(turn.request.snapshot.tools):
            gone = len(turn.request.snapshot.tools) - len(keep)
            turn = snap(tools=keep)
            now = size(turn)
            dropped.append(f"{gone} tool{'s' if gone > 1 else ''}" + (" (the read tools stay)" if keep else ""))
    lines = turn.request.snapshot.background.splitlines()
    hubs = 0
    while now > limit and len(lines) > 1:  # the first line is the section's heading
        lines.pop()
        hubs += 1
        turn = snap(background="\n".join(lines) if len(lines) > 1 else "")
        now = size(turn)
    if hubs:
        dropped.append(f"{hubs} background hub line{'s' if hubs > 1 else ''}")
    return turn, now, dropped


@dataclass(frozen=True)
class Prediction:
    """What the policy would do with a request, without doing it (the Context viewer, `cairn context`)."""

    size: int  # estimated prompt tokens, corrected by the chat's ratio
    limit: int  # the most the request may carry (`budget`)
    window: int  # the model's context window
    cuts: tuple[str, ...] = ()  # what would be cut, one line each
    refusal: str = ""  # why it would not be sent at all ("" when it would)

    @property
    def line(self) -> str:
        head = f"context window: ~{self.size:,} of {self.limit:,} tokens (the model's {self.window:,} less room for the reply)"
        if self.refusal:
            return f"{head}; would not be sent: {self.refusal}"
        if self.cuts:
            return f"{head}; to fit it would: {'; '.join(self.cuts)}"
        return f"{head}: fits"

    def as_dict(self) -> dict:
        return {"tokens_est": self.size, "limit": self.limit, "context_window": self.window,
                "cuts": list(self.cuts), "refusal": self.refusal or None}


def predict(provider, turn: Turn, calibration: Calibration, *, can_summarise: bool = False,
            message: str = "") -> Prediction:
    """`fit` tried on a copy of `turn`: nothing is summarised or sent. `can_summarise`: the chat has an
    older history the rolling summary could fold (the real turn would try that before the passages)."""
    import copy

    facts = provider.facts
    limit = budget(facts, turn.max_tokens)
    size = size_of(provider, turn, calibration)
    if size <= limit:
        return Prediction(size, limit, facts.context_window)
    if can_summarise:
        return Prediction(size, limit, facts.context_window, (
            "summarise the older conversation (then leave out the skills, tools, hubs and retrieved passages if "
            "that is not enough)",))
    try:
        _, notes = fit(provider, copy.deepcopy(turn), calibration, message=message)
    except TooLong as exc:
        return Prediction(size, limit, facts.context_window, refusal=str(exc))
    would = tuple(n.replace("Cut ", "cut ", 1).replace("Left out ", "leave out ", 1).rstrip(".") for n in notes)
    return Prediction(size, limit, facts.context_window, would)


def clip_to_fit(parts: list[str], limit: int) -> list[str]:
    """`parts` (texts joined by blank lines into one message) with the longest cut, largest first, until
    the whole is estimated at most `limit` tokens; each cut part keeps its head and says how much went
    ("… [cut: N characters to fit the context window]"). For the rolling summary's transcript, where an
    older message may be a pasted document larger than the model's window."""
    parts = list(parts)
    full = [len(p) for p in parts]
    while estimate_tokens("\n\n".join(parts)) > limit:
        i = max(range(len(parts)), key=lambda k: len(parts[k]), default=None)
        if i is None:
            break
        head = parts[i][:full[i]] if len(parts[i]) == full[i] else parts[i][:parts[i].rfind(" … [cut:")]
        over = (estimate_tokens("\n\n".join(parts)) - limit) * 4 + 64
        keep = max(MIN_RESULT_CHARS, len(head) - over)
        if keep >= len(head):
            break
        parts[i] = head[:keep] + " " + CUT_MARK.format(n=full[i] - keep)
    return parts


def too_long(provider, turn: Turn) -> TooLong | None:
    """The refusal of a one-off request (a summary, the judge, distil, integrate: nothing in it to cut)
    that would not fit the model's window with room for its reply, else None."""
    limit = budget(provider.facts, turn.max_tokens)
    size = raw_estimate(provider, turn)
    if size <= limit:
        return None
    model = provider.facts.model or provider.model
    return TooLong(f"This request would be about {size:,} tokens; {model} takes at most {limit:,} with room "
                   f"for a {turn.max_tokens:,}-token reply. Nothing was sent.")


def _without_last(suffix):
    """The suffix without its last retrieved passage (the header and the other passages as rendered)."""
    from core.providers.request import Suffix

    passages = suffix.passages[:-1]
    last = suffix.passages[-1]
    head = suffix.retrieved.find(f"[{last.n}] [NODE:{last.node_id}:")
    retrieved = suffix.retrieved[:head].rstrip() if head >= 0 and passages else ""
    focus_ids = [i for i in suffix.node_ids if i not in {p.node_id for p in suffix.passages}]
    ids = list(dict.fromkeys([*focus_ids, *(p.node_id for p in passages)]))
    return Suffix(suffix.focus, retrieved, suffix.datetime, passages, ids)


def _refusal(provider, turn: Turn, calibration: Calibration, limit: int, message: str) -> str:
    """Why the request was not sent, naming the part that does not fit: the message alone, else the
    instructions and core notes (which nothing cuts) beside it, else the whole."""
    model = provider.facts.model or provider.model
    ratio = calibration.ratio_for(provider)
    snap = turn.request.snapshot
    fixed = round(estimate_tokens(f"{snap.system}\n{snap.core_notes}") * ratio)
    if message:
        alone = round(estimate_tokens(message) * ratio)
        if alone + fixed > limit:
            if alone >= limit - fixed // 2:  # the message is what does not fit
                return (f"Your message alone is about {alone:,} tokens; {model} takes at most {limit:,} with room "
                        "for the reply. Shorten it or split it into parts; nothing was sent.")
            return (f"Cairn's instructions and your core notes take about {fixed:,} tokens and your message "
                    f"about {alone:,}; {model} takes at most {limit:,} with room for the reply. Unpin core notes "
                    "or use a model with a larger window; nothing was sent.")
    total = size_of(provider, turn, calibration)
    return (f"This request would be about {total:,} tokens even after cutting tool results, the older "
            f"conversation, the skills, tools and hubs and the retrieved passages; {model} takes at most "
            f"{limit:,} with room for the reply. Nothing was sent.")
