"""What a reply, a chat and a week cost in money, from the stored usage and the model table
(core/providers/models.py).

`Cost` is a sum that keeps what could not be priced: a local (loopback) or offline reply has no price
(nothing was billed), a model the table does not know has a price nobody here knows, and says which
model. `Pricer` prices a `Usage` for a provider and model at the cache TTL in use (chat.cache_ttl):
live, from the provider that answered (`for_provider`), or from stored rows (`price`), where a chat's
OpenAI provider counts as local when its configured base URL is on loopback now (the rows do not record the
server) and the TTL is the configured one.

Shown as "$0.0123": four decimals from a cent to a dollar, four significant digits under a cent, two
decimals from a dollar; "no price" for local and offline; "price unknown (model X)".
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone

from core.providers import models
from core.chat.repository import CHAT_TREE
from core.providers.base import ProviderError, Usage, is_loopback


@dataclass(frozen=True)
class Cost:
    usd: float = 0.0  # what the priced requests cost
    priced: bool = False  # at least one request had a price
    unknown: tuple[str, ...] = field(default=())  # models the table does not know

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(self.usd + other.usd, self.priced or other.priced,
                    tuple(dict.fromkeys(self.unknown + other.unknown)))

    def label(self) -> str:
        if self.unknown:
            missing = f"price unknown (model {', '.join(self.unknown)})"
            return f"{usd(self.usd)} + {missing}" if self.priced and self.usd > 0 else missing
        return usd(self.usd) if self.priced else "no price"

    def as_dict(self) -> dict:
        return {"usd": round(self.usd, 8) if self.priced else None, "unknown_models": list(self.unknown),
                "label": self.label()}


NO_PRICE = Cost()


def usd(amount: float) -> str:
    """$0.0123; under a cent four significant digits ($0.001234), from a dollar two decimals."""
    if amount <= 0:
        return "$0.00"
    if amount >= 1:
        return f"${amount:,.2f}"
    if amount >= 0.01:
        return f"${amount:.4f}"
    digits = 3 - math.floor(math.log10(amount))
    return f"${amount:.{digits}f}"


def _usage(u) -> Usage:
    if isinstance(u, Usage):
        return u
    return Usage.from_dict(u)


def of_facts(usage, facts: models.ModelFacts, ttl: str = "5m") -> Cost:
    """The cost of one usage for a model's facts (local: no price; unknown: says which model)."""
    if facts.provider == "local":
        return NO_PRICE
    if not facts.known:
        return Cost(unknown=(facts.model or "?",))
    amount = facts.cost(_usage(usage), ttl)
    return NO_PRICE if amount is None else Cost(amount, True)


class Pricer:
    """Prices usage at the configured cache TTL; `local`: providers whose base URL is on loopback."""

    def __init__(self, ttl: str = "5m", local: frozenset[str] | set[str] = frozenset()):
        self.ttl = ttl
        self.local = frozenset(local)

    @classmethod
    def from_config(cls, config) -> "Pricer":
        # as the provider decides it (OpenAIProvider.facts): an OpenAI-compatible server on loopback
        local = {"openai"} if (url := config.base_url("openai")) and is_loopback(url) else set()
        return cls(config.chat.cache_ttl, local)

    def price(self, usage, provider: str | None, model: str | None) -> Cost:
        """A stored row's cost, by its chat's (or sent_log row's) provider and model."""
        provider = provider or ""
        if provider == "offline":
            return NO_PRICE
        return of_facts(usage, models.facts(model or "", provider, local=provider in self.local), self.ttl)

    def for_provider(self, usage, provider) -> Cost:
        """A live reply's cost, from the provider object that answered it."""
        if provider.name == "offline":
            return NO_PRICE
        return of_facts(usage, provider.facts, self.ttl)


# -- what was spent, from the stored usage ----------------------------------------------------------------
_FIELDS = Usage.fields()


def spend_since(store, pricer: Pricer, since: str) -> dict[str, Cost]:
    """{provider: Cost} of every request since `since` (an ISO stamp, core.clock): the chat replies
    (messages.usage, priced by their chat's provider and model) and the side requests (sent_log.usage,
    by their row's). Prices are linear, so each (provider, model) group's summed usage is priced once."""
    sums = ", ".join(f"COALESCE(SUM(json_extract(u, '$.{f}')), 0) AS {f}" for f in _FIELDS)
    rows = store.db.execute(
        f"SELECT provider, model, {sums} FROM ("
        " SELECT COALESCE(c.provider, 'unknown') AS provider, c.model AS model, m.usage AS u"
        "  FROM messages m JOIN chats c ON c.id = m.chat_id WHERE m.usage IS NOT NULL AND m.created_at >= ?"
        " UNION ALL SELECT provider, model, usage FROM sent_log WHERE usage IS NOT NULL AND created_at >= ?"
        ") GROUP BY 1, 2 ORDER BY 1, 2", (since, since)).fetchall()
    out: dict[str, Cost] = {}
    for r in rows:
        out[r["provider"]] = out.get(r["provider"], NO_PRICE) + pricer.price(
            {f: int(r[f]) for f in _FIELDS}, r["provider"], r["model"])
    return dict(sorted(out.items()))


# -- the daily cap ([chat] max_usd_per_day) ------------------------------------------------------------------
def _day_start(now: datetime | None = None) -> str:
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def spent_today(store, pricer: Pricer, now: datetime | None = None) -> Cost:
    """What every request of this UTC day cost, from the stored usage."""
    total = NO_PRICE
    for cost in spend_since(store, pricer, _day_start(now)).values():
        total = total + cost
    return total


def estimate(provider, turn) -> Cost:
    """At most what this request costs: its body's tokens (core.providers.request.estimate_tokens), all
    at the dearest way a prompt token is billed (a cache write at the TTL), and a reply as long as it may be."""
    from core.providers.request import estimate_tokens

    facts = provider.facts
    if provider.name == "offline" or facts.provider == "local" or not facts.known:
        return NO_PRICE
    prompt = estimate_tokens(json.dumps(provider.body(turn), ensure_ascii=False))
    reply = models.output_cap(facts, turn.max_tokens)
    write = prompt if facts.provider == "anthropic" else 0  # OpenAI bills a write as plain input
    plan = turn.request.cache  # the TTLs the cache policy chose (core/chat/cache_policy.py)
    dearest = "1h" if getattr(provider, "cache_ttl", "5m") == "1h" or (
        plan is not None and "1h" in (plan.system_ttl, plan.history_ttl)) else "5m"
    return of_facts(Usage(input=prompt, output=reply, cache_write=write), facts, dearest)


def spent_in_chat(store, pricer: Pricer, chat_id: int) -> Cost:
    """What a chat cost so far: its replies and side requests, and those of the agents it delegated to
    (sub-chats, at any depth); `chat_id` may be a sub-chat's, whose top chat is counted."""
    tree = CHAT_TREE
    sums = ", ".join(f"COALESCE(SUM(json_extract(u, '$.{f}')), 0) AS {f}" for f in _FIELDS)
    rows = store.db.execute(
        tree + f"SELECT provider, model, {sums} FROM ("
        " SELECT COALESCE(c.provider, 'unknown') AS provider, c.model AS model, m.usage AS u"
        "  FROM messages m JOIN chats c ON c.id = m.chat_id WHERE m.usage IS NOT NULL AND c.id IN tree"
        " UNION ALL SELECT provider, model, usage FROM sent_log WHERE usage IS NOT NULL AND chat_id IN tree"
        ") GROUP BY 1, 2", (int(chat_id),)).fetchall()
    total = NO_PRICE
    for r in rows:
        total = total + pricer.price({f: int(r[f]) for f in _FIELDS}, r["provider"], r["model"])
    return total


def _over(cap: float, provider, turn, spent) -> tuple[Cost, Cost] | None:
    """(what was spent, this request's estimate) when sending `turn` would pass `cap`; None when there
    is no cap (0), the request is local or offline (it costs nothing), or it stays within the cap."""
    if cap <= 0 or provider.name == "offline" or provider.facts.provider == "local":
        return None
    before, ahead = spent(), estimate(provider, turn)
    return None if before.usd + ahead.usd <= cap else (before, ahead)


def over_daily_cap(store, config, provider, turn, now: datetime | None = None) -> ProviderError | None:
    """The refusal to send `turn` when today's spend plus its estimate would pass chat.max_usd_per_day
    (0: no cap), else None. A local or offline request costs nothing and is never refused; an unknown
    model's request cannot be estimated, so only what today already cost counts against the cap."""
    cap = float(config.chat.max_usd_per_day or 0)
    over = _over(cap, provider, turn, lambda: spent_today(store, Pricer.from_config(config), now))
    if over is None:
        return None
    spent, ahead = over
    return ProviderError(
        f"Not sent: today's spend ({usd(spent.usd)}, UTC day) plus up to {usd(ahead.usd)} for this request "
        f"({provider.model}) would pass the daily cap of {usd(cap)}; raise or clear [chat] max_usd_per_day "
        "in config.toml (0 = no cap), or wait for the next UTC day.", kind="spending_cap")


def over_chat_cap(store, config, provider, turn, chat_id: int | None) -> ProviderError | None:
    """The refusal to send `turn` when chat `chat_id`'s spend (its delegates' included) plus its
    estimate would pass chat.max_usd_per_chat (0: no cap), else None."""
    cap = float(config.chat.max_usd_per_chat or 0) if chat_id is not None else 0.0
    over = _over(cap, provider, turn, lambda: spent_in_chat(store, Pricer.from_config(config), chat_id))
    if over is None:
        return None
    spent, ahead = over
    return ProviderError(
        f"Not sent: this chat has cost {usd(spent.usd)} and this request ({provider.model}) may cost up to "
        f"{usd(ahead.usd)}, past the cap of {usd(cap)} per chat; start a new chat (f5), or raise or clear "
        "[chat] max_usd_per_chat in config.toml (0 = no cap).", kind="spending_cap")


class SpendGuard:
    """Both caps for one chat's requests (its turns and side requests: the summary, the citation judge,
    distil) or for requests of no chat (`chat_id` None: integrate's drafts, the daily cap only)."""

    def __init__(self, store, config, chat_id: int | None = None):
        self.store, self.config, self.chat_id = store, config, chat_id

    def __call__(self, provider, turn) -> ProviderError | None:
        return (over_daily_cap(self.store, self.config, provider, turn)
                or over_chat_cap(self.store, self.config, provider, turn, self.chat_id))
