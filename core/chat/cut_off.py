"""A reply the model stopped because its limit was reached is kept, marked incomplete, and said so.

Every provider reports why a reply ended: Anthropic's `stop_reason: "max_tokens"`, OpenAI's and the
OpenAI-compatible servers' `finish_reason: "length"` (the providers map both to "max_tokens"). Such a
reply ends where the limit fell, often mid-sentence: it is stored as incomplete, never as complete, and
the user reads which limit it was — the reply limit the request asked for, or, on a local server that
stops at the end of its window, the window — with the tokens counted, and what to do next.
"""

from __future__ import annotations

from core.providers.base import ProviderError, Usage

STOP = "max_tokens"


def cut_off(facts, max_tokens: int, usage: Usage) -> ProviderError:
    """The sentence for a reply cut at its limit (`facts`: the model's, `max_tokens`: what was asked)."""
    used = f"{usage.input:,} prompt + {usage.output:,} reply tokens" if usage.input or usage.output else ""
    if not facts.max_output:  # a local server: the reply ends where the window does
        limit = f"the model's window was reached ({used + ' of ' if used else ''}{facts.context_window:,})"
    else:
        limit = f"the reply limit was reached ({usage.output:,} of {max_tokens:,} tokens)" if usage.output else \
            f"the reply limit of {max_tokens:,} tokens was reached"
    return ProviderError(f"Cut off: {limit}; the reply is kept, marked incomplete. Regenerate it, or ask the model "
                         "to continue.", kind="cut_off")
