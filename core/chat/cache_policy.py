"""The prompt-cache policy: how long each breakpoint that outlives a turn is kept, chosen per request
from the chat's pace and the model's prices (issue 27, item 1). Pure: no reading of the clock (only
clock.parse of the stamps it is given), no database.

What it rests on (Anthropic's prompt-caching documentation; the per-model figures are the model
table's, core/providers/models.py [A-price] and [A-cache]):
* `cache_control: {"type": "ephemeral"}` keeps a prefix 5 minutes, `{"type": "ephemeral", "ttl":
  "1h"}` one hour, and "this lifetime is refreshed each time the cached content is used" (the docs as
  quoted in gitlab-org/modelops ai-assist MR 3554; portkey.ai's Anthropic prompt-caching page: "a
  5-minute lifetime that refreshes each time cached content is used").
* Prices: a 5-minute write costs 1.25x the base input price, a 1-hour write 2x, a read 0.1x whatever
  the TTL (Anthropic's pricing table as copied by docs.electronhub.ai/guides/prompt-caching; portkey:
  "Cache reads cost 0.1x the base input token price regardless of TTL").
* A prefix shorter than the model's minimum is not cached at all, silently (`min_cacheable`).
* At most 4 breakpoints, and "a ttl='1h' cache_control block must not come after a ttl='5m'
  cache_control block. Note that blocks are processed in the following order: `tools`, `system`,
  `messages`." (the API's 400, kristianvast/hermes-claude-auth issue 31). So the plans weighed are
  (system, history) = (5m, 5m), (1h, 5m) and (1h, 1h); the breakpoints inside a turn (the end of the
  suffix, the newest tool result) stay at 5 minutes: the tool loop's next step follows at once.

The model, in one paragraph. The pace is the gaps between turns, each from the last request of a turn
(when the cache was last written or refreshed) to the first request of the next; the time since the
last turn until now counts as the newest gap. Over the last RECENT_GAPS gaps, p(T) is the share that
fit within T (less MARGIN_S: a request arrives a moment after it is stamped). For each plan, the
expected cost per turn if the chat keeps this pace and this plan: with the next gap within the
history's TTL the earlier prefix is read (0.1x) and only what is new is written; within the system
part's TTL only the system part is read and the history written again; else everything is written
again, each part at its own TTL's price. The system part caches on its own only from the model's
minimum; a history below it is weighed as if it reached it (no breakpoint writes it, whatever its TTL,
so a wrong guess there costs nothing). The cheapest plan wins; a tie goes to the shorter TTL (cheaper writes). Before any gap is known (a
chat's first turn) the next turn is assumed to follow within 5 minutes: the layout Cairn used before
this policy. Sizes are estimates (core/providers/request.py estimate_tokens), corrected by the chat's
reported usage where the caller has it.

OpenAI and OpenAI-compatible servers cache a prefix by themselves from 1,024 tokens with no lifetime
to choose ([O-cache] in models.py): for them this policy only says so; `chat.cache_ttl = "1h"` still
asks OpenAI for 24-hour retention where the model takes it (core/providers/openai_provider.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from core import clock
from core.providers.models import ModelFacts
from core.providers.request import CachePlan, ContextRequest, estimate_tokens

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
PLANS = (("5m", "5m"), ("1h", "5m"), ("1h", "1h"))  # (system, history): a 1h breakpoint never after a 5m one
RECENT_GAPS = 6  # the gaps the pace is read from: the newest ones, so a change of pace is followed soon
MARGIN_S = 15.0  # a gap counts within a TTL only with this to spare (stamped before sending; latency)
FORCED = ("5m", "1h")  # chat.cache_ttl values that fix the system part's TTL (history at 5m), as before


@dataclass(frozen=True)
class Pace:
    """Gaps between the chat's turns, in seconds, oldest first (the newest may be the time since the
    last turn, up to the request being built)."""

    gaps: tuple[float, ...] = ()

    @property
    def recent(self) -> tuple[float, ...]:
        return self.gaps[-RECENT_GAPS:]

    def within(self, ttl: str) -> float:
        """The share of recent gaps after which an entry of `ttl` would still be alive (1.0 with no gap
        yet: the next turn is assumed to follow at once)."""
        recent = self.recent
        if not recent:
            return 1.0
        return sum(1 for g in recent if g + MARGIN_S <= TTL_SECONDS[ttl]) / len(recent)


@dataclass(frozen=True)
class Sizes:
    """Estimated tokens: `stable` the tools and system part; `history` the earlier turns plus the new
    user text (up to the history breakpoint); `new` the part of `history` since the previous turn's
    user text (its reply, tool steps, the new text): what a turn writes when the rest is read."""

    stable: int
    history: int
    new: int


@dataclass(frozen=True)
class Prices:
    """A model's cache prices, USD per million tokens, and its minimum cacheable prefix. (What is not
    cached is billed at the input price whatever the plan, so it does not weigh in the choice.)"""

    write_5m: float
    write_1h: float
    read: float
    minimum: int

    @classmethod
    def of(cls, facts: ModelFacts) -> "Prices | None":
        if None in (facts.cache_write_5m, facts.cache_write_1h, facts.cache_read):
            return None
        return cls(facts.cache_write_5m, facts.cache_write_1h, facts.cache_read, facts.min_cacheable)

    def write(self, ttl: str) -> float:
        return self.write_1h if ttl == "1h" else self.write_5m


# -- the expected cost of a plan ------------------------------------------------------------------
def expected_cost(plan: tuple[str, str], sizes: Sizes, prices: Prices, pace: Pace) -> float:
    """USD per turn, expected, of the prefix that outlives a turn (tools, system part, history) if the
    chat keeps `pace` and every turn is sent with `plan` (system TTL, history TTL): what this request
    writes is read by the next turn when the gap lets it live, else written again.

    A history below the model's minimum is written by no breakpoint whatever its TTL, so its TTL is
    weighed as if it reached the minimum: an estimate a little short of the real count then costs
    nothing. The system part is cached on its own only from the minimum."""
    system_ttl, history_ttl = plan
    p = prices
    stable, prefix = sizes.stable, sizes.stable + sizes.history  # what this request leaves in the cache
    after = sizes.history + sizes.new  # the next turn's history, when the system part is read alone
    system_alone = stable >= p.minimum

    def all_written() -> float:  # nothing alive: each part written again at its own TTL's price
        if system_alone:
            return stable * p.write(system_ttl) + after * p.write(history_ttl)
        return (stable + after) * p.write(history_ttl)

    def system_read() -> float:  # the history expired, the system part did not
        return stable * p.read + after * p.write(history_ttl) if system_alone else all_written()

    def history_read() -> float:  # this prefix read back, only the next turn's new part written
        return prefix * p.read + sizes.new * p.write(history_ttl)

    p_history = pace.within(history_ttl)
    p_system = max(p_history, pace.within(system_ttl))
    cost = p_history * history_read() + (p_system - p_history) * system_read() + (1 - p_system) * all_written()
    return cost / 1e6


def choose(sizes: Sizes, prices: Prices, pace: Pace) -> tuple[tuple[str, str], dict[tuple[str, str], float]]:
    """The plan of least expected cost (ties: the earlier of PLANS, the shorter TTLs), and every plan's."""
    costs = {plan: expected_cost(plan, sizes, prices, pace) for plan in PLANS}
    best = min(PLANS, key=lambda plan: (round(costs[plan], 12), PLANS.index(plan)))
    return best, costs


# -- the request's sizes and the chat's pace --------------------------------------------------------
def sizes_of(request: ContextRequest, scale: float = 1.0) -> Sizes:
    """The estimated sizes of `request` (`scale`: the chat's reported/estimated ratio, core/chat/window.py)."""
    snap = request.snapshot
    stable = estimate_tokens(json.dumps(snap.tools, ensure_ascii=False)) + sum(
        estimate_tokens(t) for t in (snap.system, snap.skills, snap.core_notes, snap.background))
    per_message = [estimate_tokens(json.dumps(m["content"], ensure_ascii=False)) for m in request.history]
    anchor = next((i for i in range(len(request.history) - 1, -1, -1) if _has_user_text(request.history[i])), -1)
    user = estimate_tokens(request.user_text)
    history = sum(per_message) + user
    new = sum(per_message[anchor + 1:]) + user
    return Sizes(round(stable * scale), round(history * scale), round(new * scale))


def _has_user_text(message: dict) -> bool:
    return message["role"] == "user" and any(b.get("type") == "text" for b in message["content"])


def pace_of(requests: list[tuple[str, bool]], now: str) -> Pace:
    """The pace of a chat from its requests: (ISO time, whether it opens a turn) of each, oldest first
    (core/chat/repository.py request_times), and `now`, when the request being built would leave."""
    turns: list[list[float]] = []  # [first request, last request] per turn
    for stamp, opens in requests:
        t = _seconds(stamp)
        if t is None:  # a row whose time can't be read (hand-made, another tool's) says nothing of the pace
            continue
        if opens or not turns:
            turns.append([t, t])
        else:
            turns[-1][1] = max(turns[-1][1], t)
    gaps = [later[0] - earlier[1] for earlier, later in zip(turns, turns[1:])]
    if turns:
        gaps.append((_seconds(now) or turns[-1][1]) - turns[-1][1])
    return Pace(tuple(max(0.0, g) for g in gaps))


def _seconds(stamp: str) -> float | None:
    """Seconds since the epoch of an ISO stamp; None for a stamp that is not one."""
    when = clock.parse(stamp)
    return None if when is None else when.timestamp()


# -- the plan for one request ---------------------------------------------------------------------
def plan(facts: ModelFacts, configured: str, sizes: Sizes, pace: Pace) -> CachePlan:
    """The cache plan of an Anthropic request: chosen by expected cost under chat.cache_ttl = "auto",
    fixed by "5m" / "1h" (the system part at that TTL, the history at 5 minutes)."""
    prices = Prices.of(facts)
    gaps = pace.recent
    if configured in FORCED:
        chosen = (configured, "5m")
        costs = {p: expected_cost(p, sizes, prices, pace) for p in PLANS} if prices else {}
        reason = (f"system part cached for {_ttl_words(configured)} (chat.cache_ttl = \"{configured}\"), "
                  "history for 5 min")
    elif prices is None:
        chosen, costs = ("5m", "5m"), {}
        reason = f"history cached for 5 min: {facts.model or 'this model'} has no known prices to weigh 1 h against"
    else:
        chosen, costs = choose(sizes, prices, pace)
        reason = _reason(chosen, sizes, prices, pace)
    expected = {f"{s}/{h}": round(c, 8) for (s, h), c in costs.items()}
    return CachePlan(chosen[0], chosen[1], reason, expected, gaps)


def note_for(provider_name: str, facts: ModelFacts, configured: str) -> str:
    """What the cache policy does for a provider that has no breakpoints to time (shown instead of a plan)."""
    if provider_name == "offline" or facts.provider == "local":  # a local server: the minimum's line says it
        return ""
    if facts.provider == "openai":
        kept = (" and keeps it 24 h (chat.cache_ttl = \"1h\")" if configured == "1h" and facts.cache_retention_24h
                else "")
        return (f"OpenAI caches the prefix by itself from {facts.min_cacheable:,} tokens{kept}; "
                "there is no cache lifetime to choose per request")
    return ""


def _reason(chosen: tuple[str, str], sizes: Sizes, prices: Prices, pace: Pace) -> str:
    system_ttl, history_ttl = chosen
    total = sizes.stable + sizes.history
    if system_ttl == history_ttl:
        head = f"history cached for {_ttl_words(history_ttl)}"
    else:
        head = f"system part cached for {_ttl_words(system_ttl)}, history for {_ttl_words(history_ttl)}"
    if total < prices.minimum:
        head += f" once it reaches the model's minimum of {prices.minimum:,} tokens (~{total:,} now, estimate)"
    gaps = pace.recent
    if not gaps:
        return f"{head}: no earlier turn yet to measure your pace by"
    if len(gaps) == 1:
        return f"{head}: your last turn came {_duration(gaps[0])} before this one"
    return f"{head}: your last turns came {_span(min(gaps), max(gaps))} apart"


def _ttl_words(ttl: str) -> str:
    return "1 h" if ttl == "1h" else "5 min"


def _unit(seconds: float) -> tuple[str, float]:
    if seconds < 60:
        return "s", 1.0
    if seconds < 3600:
        return "min", 60.0
    return "h", 3600.0


def _amount(seconds: float, scale: float) -> str:
    value = seconds / scale
    return f"{value:.0f}" if scale < 3600 or value >= 10 else f"{value:.1f}".rstrip("0").rstrip(".")


def _duration(seconds: float) -> str:
    unit, scale = _unit(seconds)
    return f"{_amount(seconds, scale)} {unit}"


def _span(low: float, high: float) -> str:
    """"8–12 min", "40 s–3 min", "10 min" (one figure when both round alike)."""
    lo_unit, lo_scale = _unit(low)
    hi_unit, hi_scale = _unit(high)
    lo, hi = _amount(low, lo_scale), _amount(high, hi_scale)
    if lo_unit == hi_unit:
        return f"{lo} {hi_unit}" if lo == hi else f"{lo}–{hi} {hi_unit}"
    return f"{lo} {lo_unit}–{hi} {hi_unit}"

