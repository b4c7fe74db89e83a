"""Model facts, in one table the product and the test fakes share (DESIGN.md, "One home per rule").

For each model a user would choose today: the context window, the maximum output tokens, the minimum
cacheable prefix, and prices in USD per million tokens (input, cache write at 5 minutes and at 1
hour, cache read, output). Every figure names its source; where sources disagree the stricter one is
taken and the comment says so. `facts()` finds a model by its id (a dated snapshot id such as
`claude-haiku-4-5-20251001` or `gpt-4.1-mini-2025-04-14` finds its alias); a model not in the table
gets the strictest figures of the table (smallest window and output, largest minimum) and
`known=False`, so the UI can say "unknown model: assumed …". A model served by a local
OpenAI-compatible server has no price, and the window the user set (chat.local_context_window), else
the one the server reports on its native endpoints (core/providers/local_window.py), else
`LOCAL_CONTEXT_WINDOW`, assumed, which the UI says (`ModelFacts.window_source`, `assumed`).

Sources, cited below by letter:
  [A-price]  platform.claude.com/docs/en/about-claude/pricing, "Model pricing" table (base input,
             5m cache writes, 1h cache writes, cache hits and refreshes, output).
  [A-model]  platform.claude.com/docs/en/models/<model>/overview ("Context window · Max output").
  [A-cache]  platform.claude.com/docs/en/build-with-claude/prompt-caching, minimum cacheable prompt
             length, as quoted in anthropics/anthropic-sdk-python issue 1194 ("4096 tokens for Claude
             Opus 4.6, Claude Opus 4.5; 1024 tokens for Claude Sonnet 4.6, Claude Sonnet 4.5 ...;
             4096 tokens for Claude Haiku 4.5").
  [A-1M]     the 1M-token window needs the `context-1m` beta header, which Cairn does not send;
             without it the API refuses "prompt is too long: 208310 tokens > 200000 maximum"
             (anthropics/claude-code issue 12186, Sonnet 4.5); toolsdock.com's comparison lists
             "200K / 1M (beta)" for Opus 4.6 and Sonnet 4.5. Stricter: 200,000.
  [A-retire] platform.claude.com/docs/en/about-claude/model-deprecations, as the anthropic SDK 2.14.0
             carries it (anthropic/_data/deprecated_models.py: "claude-sonnet-4-5": "November 30th,
             2026", "claude-opus-4-5": "January 22nd, 2027"; the SDK warns "The model ... is deprecated
             and will reach end-of-life on ..."). After that date the API answers a request for the
             model with 404 `{"type": "error", "error": {"type": "not_found_error", "message": "model:
             claude-2.1"}}` (spring-projects/spring-ai PR 2387; PolicyEngine/policyengine-api issue 3800
             for claude-sonnet-4-20250514 after its end-of-life).
  [O-model]  developers.openai.com/api/docs/models/<model> ("context window", "max output tokens",
             "Maximum input tokens"), and Vercel AI Gateway's model pages that copy them.
  [O-price]  developers.openai.com/api/docs/pricing (input, cached input, output), as copied by the
             rate cards of akushonkamen/oG-Memory perf/rate_cards.yaml and the openai-models crate.
  [O-cache]  developers.openai.com/api/docs/guides/prompt-caching: "Caching is enabled automatically
             for prompts that are 1024 tokens or longer"; writes cost nothing extra ("no additional
             fees"), so a cache write is billed as plain input; extended retention
             (`prompt_cache_retention: "24h"`) is "available for: gpt-5.4, gpt-5.2, gpt-5.1, ...,
             gpt-5, gpt-5-codex, gpt-4.1" (the guide as copied 2026-03-05 in will/swarm-zap
             memory/references/openai-prompt-caching.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date

# A local OpenAI-compatible server (Ollama, llama.cpp, LM Studio): the window is whatever the server
# was started with. The OpenAI-compatible API does not report it; the servers' native endpoints do
# (llama.cpp /props, Ollama /api/ps for a loaded model, LM Studio /api/v0/models/{id}: see
# core/providers/local_window.py). When neither the config nor the server says, this is assumed:
# Ollama's docs/context-length.mdx: "< 24 GiB VRAM: 4k context" (older releases: 2,048,
# patrickfleith/datafast issue 140); llama.cpp and LM Studio take the size they are given. 4,096 is
# the default a user most often runs with.
LOCAL_CONTEXT_WINDOW = 4096

# Where a local model's window came from (ModelFacts.window_source).
WINDOW_FROM_CONFIG = "config (chat.local_context_window)"
WINDOW_ASSUMED = "assumed"


def window_from_server(source: str) -> str:
    """The window_source of a window the server reported, e.g. "server (llama.cpp /props)"."""
    return f"server ({source})"


@dataclass(frozen=True)
class ModelFacts:
    """What the product and the fakes know of one model. Prices are USD per million tokens; None: no
    price (a local model) or not known (an unknown model)."""

    provider: str  # "anthropic" | "openai" | "local"
    model: str  # the table's id (the alias a snapshot id resolves to), or the id asked for when unknown
    context_window: int  # tokens the prompt and the reply share
    max_output: int  # the largest max_tokens / max_completion_tokens the API takes (0: the server decides)
    min_cacheable: int  # a prefix shorter than this is silently not cached (0: any common prefix)
    input: float | None = None
    cache_write_5m: float | None = None
    cache_write_1h: float | None = None
    cache_read: float | None = None
    output: float | None = None
    max_input: int | None = None  # a prompt limit below the window, where the API has one
    cache_retention_24h: bool = False  # OpenAI: takes prompt_cache_retention "24h"
    known: bool = True
    # A local model: where its window came from: WINDOW_FROM_CONFIG, window_from_server(...) or
    # WINDOW_ASSUMED; "" when the caller did not say (and for a model of the table).
    window_source: str = ""
    retires: str | None = None  # the provider's end-of-life date (YYYY-MM-DD) [A-retire]; None: none announced
    successor: str | None = None  # what to choose instead, once it is deprecated

    def retirement(self, today: date | None = None) -> str:
        """For the UI: empty for a model in service with no end announced; else one sentence."""
        if not self.retires:
            return ""
        today = today or date.today()
        instead = f"; choose {self.successor} (cairn config set chat.model {self.successor})" if self.successor else ""
        if today.isoformat() >= self.retires:
            return f"{self.model} was retired on {self.retires}: the API refuses it (404){instead}."
        return f"{self.model} is deprecated and retires on {self.retires}{instead}."

    @property
    def input_limit(self) -> int:
        """The most prompt tokens the API takes (the window, or a smaller input limit)."""
        return min(self.context_window, self.max_input or self.context_window)

    @property
    def assumed(self) -> str:
        """For the UI: empty for a known model (and a local one whose window the config or the server
        gave), else what was assumed for this one."""
        if self.provider == "local" and self.window_source == WINDOW_ASSUMED:
            return (f"local model: assumed a {self.context_window:,}-token window (Ollama's default); the server "
                    "did not report its window: set chat.local_context_window")
        if self.known:
            return ""
        return (f"unknown model: assumed a {self.context_window:,}-token window, at most {self.max_output:,} "
                f"output tokens and a {self.min_cacheable:,}-token cache minimum")

    def cost(self, usage, ttl: str = "5m") -> float | None:
        """USD of one request's `core.providers.base.Usage`. Usage's `input` counts every prompt token
        (the Anthropic provider adds its separate cache fields to it; OpenAI's cached_tokens is already a
        part of prompt_tokens), so the plain input is what is left after the cache reads and writes. The
        writes Anthropic reports as one-hour ones (`cache_write_1h`, from usage.cache_creation) are priced
        at the 1-hour price; the rest at the price of `ttl` (chat.cache_ttl): with "1h" a usage stored
        before the split was recorded is priced whole at the 1-hour price, the stricter, never
        under-reporting spend."""
        write = self.cache_write_1h if ttl == "1h" else self.cache_write_5m
        if None in (self.input, write, self.cache_write_1h, self.cache_read, self.output):
            return None
        plain = usage.input - usage.cache_read - usage.cache_write if self.provider == "anthropic" else \
            usage.input - usage.cache_read
        one_hour = min(getattr(usage, "cache_write_1h", 0) or 0, usage.cache_write)
        return (max(0, plain) * self.input + (usage.cache_write - one_hour) * write + one_hour * self.cache_write_1h
                + usage.cache_read * self.cache_read + usage.output * self.output) / 1e6


def _anthropic(model: str, window: int, max_output: int, minimum: int, input: float, write_5m: float,
               write_1h: float, read: float, output: float, *, retires: str | None = None,
               successor: str | None = None) -> ModelFacts:
    return ModelFacts("anthropic", model, window, max_output, minimum, input, write_5m, write_1h, read, output,
                      retires=retires, successor=successor)


def _openai(model: str, window: int, max_output: int, input: float, read: float, output: float, *,
            max_input: int | None = None, retention_24h: bool = False) -> ModelFacts:
    # [O-cache]: from 1,024 tokens on every model; a write is billed as plain input (5m and 1h alike).
    return ModelFacts("openai", model, window, max_output, OPENAI_MIN_CACHEABLE, input, input, input, read, output,
                      max_input=max_input, cache_retention_24h=retention_24h)


OPENAI_MIN_CACHEABLE = 1024  # [O-cache]

MODELS: dict[str, ModelFacts] = {m.model: m for m in (
    # -- Anthropic, 5.x: window 1,000,000 and max output 128,000 [A-model: "Context window 1M tokens ·
    # Max output 128K tokens"; docs.oxen.ai: Sonnet 5 "ships with a native 1M-token context window"].
    # Sonnet 5.5: $2 / $2.50 / $4 / $0.20 / $10 [A-model, sonnet-5-5 "Pricing"]; a cache-read cut to
    # $0.10 from 2026-10-07 is reported (kurofune/claudit v1.9.2, TheKrush/PromptFuel v1.0.23):
    # stricter (the higher price, never under-reporting spend), $0.20. Minimum: no source names it,
    # so the table's strictest, 4,096.
    _anthropic("claude-sonnet-5-5", 1_000_000, 128_000, 4096, 2.00, 2.50, 4.00, 0.20, 10.00),
    # Sonnet 5: same prices [A-model, sonnet-5]; minimum 1,024 (dev.to "Claude's prompt cache fails
    # silently below 1,024 tokens": "1,024 for Opus 4.8, Sonnet 5, Sonnet 4.6/4.5 ...").
    _anthropic("claude-sonnet-5", 1_000_000, 128_000, 1024, 2.00, 2.50, 4.00, 0.20, 10.00),
    # Opus 5.5: $4 / $20 [A-model comparison table], cache read 0.05x = $0.20 (docs.rs
    # claude-session-parser: "Opus 5.5+ is $4/$20 and reads cache at 0.05x"); writes 1.25x / 2x of
    # input [A-price, "Prompt caching" multipliers]. Minimum: no source, the strictest, 4,096.
    _anthropic("claude-opus-5-5", 1_000_000, 128_000, 4096, 4.00, 5.00, 8.00, 0.20, 20.00),
    # -- Anthropic, 4.x. Windows: 200,000 for every model here [A-1M]. Prices [A-price].
    # Opus 4.7: max output 128,000 [A-model, as fetched by tygartmedia.com 2026-05-09]; minimum 4,096
    # (the fakes' earlier table, from docs.orq.ai / clawdemy.org) vs 2,048 (dev.to "Claude's prompt
    # cache fails silently below 1,024 tokens"): stricter, 4,096.
    _anthropic("claude-opus-4-7", 200_000, 128_000, 4096, 5.00, 6.25, 10.00, 0.50, 25.00),
    # Opus 4.6: max output 128,000 [A-model; Effect-TS ai-anthropic 4.0.0-beta.106: "128000 the API
    # actually allows"]; minimum 4,096 [A-cache; docs.aihubmix.com "increased from 1,024 to 4,096"].
    _anthropic("claude-opus-4-6", 200_000, 128_000, 4096, 5.00, 6.25, 10.00, 0.50, 25.00),
    # Opus 4.5: max output 64,000 (Azure Foundry's model card "200K token context window and 64K max
    # output"; Effect-TS: "The 4.5 models keep 64000"); minimum 4,096 [A-cache].
    _anthropic("claude-opus-4-5", 200_000, 64_000, 4096, 5.00, 6.25, 10.00, 0.50, 25.00,
               retires="2027-01-22", successor="claude-opus-4-7"),  # [A-retire]
    # Sonnet 4.6: max output 64,000 (perstack-ai/perstack PR 801, tygartmedia.com's copy of [A-model])
    # vs 128,000 (a later [A-model]): stricter, 64,000. Minimum: [A-cache] says 1,024, docs.orq.ai
    # says 2,048, and users see caching start only at 2,048 (anthropic-sdk-python issue 1194):
    # stricter, 2,048.
    _anthropic("claude-sonnet-4-6", 200_000, 64_000, 2048, 3.00, 3.75, 6.00, 0.30, 15.00),
    # Sonnet 4.5: max output 64,000 (labring/fastgpt-plugin PR 242); minimum 1,024 [A-cache, docs.orq.ai].
    _anthropic("claude-sonnet-4-5", 200_000, 64_000, 1024, 3.00, 3.75, 6.00, 0.30, 15.00,
               retires="2026-11-30", successor="claude-sonnet-4-6"),  # [A-retire]
    # Haiku 4.5: max output 64,000 (toolsdock.com, fastgpt-plugin PR 242); minimum 4,096 [A-cache].
    _anthropic("claude-haiku-4-5", 200_000, 64_000, 4096, 1.00, 1.25, 2.00, 0.10, 5.00),
    # -- OpenAI. Windows and outputs [O-model], prices [O-price].
    # GPT-4.1 family: 1,047,576-token window, 32,768 output; cached input 0.25x.
    _openai("gpt-4.1", 1_047_576, 32_768, 2.00, 0.50, 8.00, retention_24h=True),  # 24h: [O-cache]
    _openai("gpt-4.1-mini", 1_047_576, 32_768, 0.40, 0.10, 1.60),  # not in [O-cache]'s 24h list
    _openai("gpt-4.1-nano", 1_047_576, 32_768, 0.10, 0.025, 0.40),
    # GPT-4o family: 128,000-token window, 16,384 output; cached input 0.5x.
    _openai("gpt-4o", 128_000, 16_384, 2.50, 1.25, 10.00),
    _openai("gpt-4o-mini", 128_000, 16_384, 0.15, 0.075, 0.60),
    # GPT-5 family: 400,000-token window, "Maximum input tokens: 272,000", 128,000 output
    # (developers.openai.com/api/docs/models/gpt-5-nano); cached input 0.1x.
    _openai("gpt-5", 400_000, 128_000, 1.25, 0.125, 10.00, max_input=272_000, retention_24h=True),
    _openai("gpt-5-mini", 400_000, 128_000, 0.25, 0.025, 2.00, max_input=272_000),
    _openai("gpt-5-nano", 400_000, 128_000, 0.05, 0.005, 0.40, max_input=272_000),
)}

# An id plus a snapshot date (claude-haiku-4-5-20251001, gpt-4.1-2025-04-14) or "-latest".
_SNAPSHOT = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")

# The strictest figures of the table, for a model it does not know.
STRICTEST = ModelFacts(
    "unknown", "",
    context_window=min(m.input_limit for m in MODELS.values()),  # 128,000 (gpt-4o)
    max_output=min(m.max_output for m in MODELS.values()),  # 16,384 (gpt-4o)
    min_cacheable=max(m.min_cacheable for m in MODELS.values()),  # 4,096 (Opus 4.5-4.7, Haiku 4.5, ...)
    known=False,
)


def lookup(model: str) -> ModelFacts | None:
    """The table's row for `model` (an alias, or an alias plus a snapshot suffix), or None."""
    if model in MODELS:
        return MODELS[model]
    stem = _SNAPSHOT.sub("", model)
    return MODELS.get(stem)


def facts(model: str, provider: str = "", *, local: bool = False, window: int = 0, source: str = "") -> ModelFacts:
    """What is known of `model`: its row, or (`local`: a model on a local OpenAI-compatible server) no
    price and the local window (`window`: the configured or probed window, 0 for LOCAL_CONTEXT_WINDOW;
    `source`: where it came from, see ModelFacts.window_source; left out, a window given is the
    config's and none is not said), or the strictest figures flagged unknown."""
    if local:
        if not source and window > 0:
            source = WINDOW_FROM_CONFIG
        # No price; any common prefix is reused (llama.cpp's and Ollama's prompt cache keep the KV of
        # the previous prompt, from its first token); the reply's length is the server's to cut.
        return ModelFacts("local", model, window if window > 0 else LOCAL_CONTEXT_WINDOW, 0, 0, window_source=source)
    row = lookup(model)
    if row is not None and (not provider or row.provider == provider):
        return row
    return replace(STRICTEST, provider=provider or "unknown", model=model)


def output_cap(facts: ModelFacts, wanted: int) -> int:
    """`wanted` reply tokens, never above what the model takes (a local server decides its own)."""
    return min(wanted, facts.max_output) if facts.max_output else wanted
