"""The provider the config names: `make_provider` for a chat, `preview_provider` to lay a request out
without a key (nothing is sent)."""

from __future__ import annotations

from core.providers.base import Provider, ProviderError, is_loopback


def make_provider(config, name: str | None = None, model: str | None = None) -> Provider:
    """The configured provider. Choosing one without its key is a clear error naming the variable."""
    from core.config import KEY_ENV

    name = name or config.chat.provider
    model = model or config.model(name)
    if name == "offline":
        from core.providers.offline import OfflineProvider

        return OfflineProvider()
    if name not in KEY_ENV:
        raise ProviderError(f"Unknown provider {name!r}; use offline, anthropic or openai.", kind="config")
    key = config.api_key(name)
    base_url = config.base_url(name)
    if not key:
        if name == "openai" and base_url and is_loopback(base_url):
            key = "local"  # Ollama, llama.cpp and LM Studio accept any key
        else:
            raise ProviderError(
                f"The {name} provider needs an API key: set ${KEY_ENV[name]} (or keys.{name} in the config file).",
                kind="missing_key")
    if name == "anthropic":
        from core.providers.anthropic_provider import AnthropicProvider

        return AnthropicProvider(key, model, base_url=base_url, cache_ttl=config.chat.cache_ttl,
                                 timeout=config.chat.timeout)
    from core.providers.openai_provider import OpenAIProvider

    return OpenAIProvider(key, model, base_url=base_url, timeout=config.chat.timeout, cache_ttl=config.chat.cache_ttl,
                          local_window=config.chat.local_context_window)


def preview_provider(config) -> Provider:
    """The configured provider, able to lay out a request body without an API key (nothing is sent):
    for `cairn context` and the Context viewer."""
    name = config.chat.provider
    model = config.model(name)
    if name == "anthropic":
        from core.providers.anthropic_provider import AnthropicProvider

        return AnthropicProvider("", model, base_url=config.base_url(name), cache_ttl=config.chat.cache_ttl)
    if name == "openai":
        from core.providers.openai_provider import OpenAIProvider

        return OpenAIProvider("", model, base_url=config.base_url(name), cache_ttl=config.chat.cache_ttl,
                              local_window=config.chat.local_context_window)
    from core.providers.offline import OfflineProvider

    return OfflineProvider()

