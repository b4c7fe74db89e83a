"""The request a message would send, put together in one place.

A chat turn (core/chat/conversation.py), `cairn context` and the Context viewer (both through
core/chat/preview.py) and the side requests (the rolling summary, the citation judge, distil and
integrate drafts, through core/chat/model_reply.py) all build their `ContextRequest` here, so what the
viewer shows is what a turn sends, and the privacy policy is applied the same way on every path.
"""

from __future__ import annotations

from datetime import datetime

from core.agent.profiles import Agent
from core.chat import cache_policy
from core.chat.context import ContextEngine
from core.graph.privacy import SendPolicy
from core.graph.store import Store
from core.providers.models import lookup
from core.providers.request import ContextRequest, Snapshot, Suffix


# -- the model an agent runs on (here, not in core/agent: it reads the providers' model table) ----------
def _configured_model(agent: Agent, config, provider: str) -> tuple[str, str]:
    """(`agents.<name>` as configured, why it is not used with `provider`; "" when it is)."""
    configured = getattr(getattr(config, "agents", None), agent.name, "") or ""
    row = lookup(configured) if configured else None
    if row is not None and row.provider != provider:
        # An Anthropic model sent to OpenAI (or the reverse) is refused as an unknown model; a model
        # the table does not know (a local one) is the user's to name and is sent as given.
        return configured, (f"agents.{agent.name} = {configured!r} is a model of {row.provider}, not of "
                            f"{provider}: not used")
    return configured, ""


def model_note(agent: Agent, config, provider: str) -> str:
    """Why the agent's configured model is not the one it runs on (empty when it is, or none is set)."""
    return "" if provider == "offline" else _configured_model(agent, config, provider)[1]


def model_for(agent: Agent, config, provider: str, *, vendor_models: bool = True) -> str | None:
    """The model `agent` runs on with `provider`: `agents.<name>` in the config (unless the model table
    says it is another provider's: `model_note`), else the profile's own model, else for a cheap_model
    agent with no chat.model configured the provider's cheaper model (core/config.py CHEAP_MODELS) when
    the server serves the vendor's names (`vendor_models`: not a compatible server's own, which would
    answer 404). None: the provider's model as given (chat.model or its default)."""
    from core.config import CHEAP_MODELS

    if provider == "offline":
        return None
    configured, refused = _configured_model(agent, config, provider)
    if configured and not refused:
        return configured
    if agent.model:
        return agent.model
    if agent.cheap_model and not config.chat.model and vendor_models:
        return CHEAP_MODELS.get(provider)
    return None


def provider_for(agent: Agent, config, provider):
    """`provider` on the model `agent` runs on (`model_for`)."""
    return provider.with_model(model_for(agent, config, provider.name, vendor_models=provider.serves_vendor_models))


def variables(config, *, chat_id: int | str, agent: Agent, model: str) -> dict[str, str]:
    """The values of `${name}` in an agent's instructions, resolved once when a chat starts and kept
    with it (a new chat that does not exist yet is chat "new")."""
    return {"user_name": config.user_name or "the user", "chat_id": str(chat_id), "agent": agent.name,
            "model": model}


def policy(config, provider) -> SendPolicy:
    """What may be sent to `provider` under the config's privacy.never_send."""
    return SendPolicy.for_provider(config.privacy.never_send, provider)


def engine(store: Store, searcher, agent: Agent, config, provider) -> ContextEngine:
    """The context engine of a chat with `agent` on `provider` (searcher None: no retrieval)."""
    return ContextEngine(store, searcher, agent, background_enabled=config.chat.background_context,
                         policy=policy(config, provider))


def build(engine: ContextEngine, snapshot: Snapshot, history: list[dict], message: str, model: str, *,
          now: datetime | None = None, provider=None, pace: cache_policy.Pace | None = None,
          scale: float = 1.0) -> ContextRequest:
    """The request for `message`: the chat's prefix and history, then this message's suffix (the Focus
    the engine holds, the passages retrieved for the message, the date/time). For a provider with
    explicit cache breakpoints (Anthropic), the TTLs its breakpoints get (core/chat/cache_policy.py),
    from the chat's `pace` (none: a chat's first turn) and the sizes, estimated and multiplied by `scale`
    (the chat's reported/estimated ratio)."""
    request = ContextRequest(snapshot, history, message, engine.suffix(message, now=now), model)
    if provider is not None and provider.name == "anthropic":
        request.cache = cache_policy.plan(provider.facts, getattr(provider, "cache_ttl", "auto"),
                                          cache_policy.sizes_of(request, scale), pace or cache_policy.Pace())
    return request


def cache_note(request: ContextRequest, provider) -> str:
    """The sentence about caching the viewer and `cairn context` show: the plan's reason (Anthropic), or
    what the provider does by itself ("" offline)."""
    if request.cache is not None:
        return request.cache.reason
    return cache_policy.note_for(provider.name, provider.facts, getattr(provider, "cache_ttl", "auto"))


def one_shot(system: str, user: str, model: str) -> ContextRequest:
    """A side request: a system prompt and one user message; no tools, no history, no suffix."""
    return ContextRequest(Snapshot([], system, "", "", []), [], user, Suffix("", "", ""), model)
