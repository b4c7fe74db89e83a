"""Turn SDK exceptions (anthropic, openai, httpx) into one ProviderError with a specific sentence."""

from __future__ import annotations

from core.providers.base import ProviderError


def translate(exc: Exception, provider: str, model: str, base_url: str | None, retries: int,
              key_env: str | None = None, api_key: str | None = None, label: str | None = None) -> ProviderError:
    """`label`: who answered, as the user knows it ("the local server at 127.0.0.1:8080"); by default
    the provider's name."""
    err = _translate(exc, provider, model, base_url, retries, key_env, label)
    if api_key and len(api_key) >= 8 and api_key in str(err):
        # Some servers and proxies quote the key they were given in their error message.
        return ProviderError(str(err).replace(api_key, "[API key]"), kind=err.kind, retryable=err.retryable)
    return err


def _translate(exc: Exception, provider: str, model: str, base_url: str | None, retries: int,
               key_env: str | None = None, label: str | None = None) -> ProviderError:
    inner = label or {"anthropic": "Anthropic", "openai": "OpenAI"}.get(provider, provider)  # mid-sentence
    label = inner[0].upper() + inner[1:]  # it starts the sentences below
    status = getattr(exc, "status_code", None)
    where = base_url or label
    name = type(exc).__name__
    if status == 401:
        hint = f" Check ${key_env}." if key_env else ""
        return ProviderError(f"{label} rejected the API key (401 unauthorized).{hint}", kind="auth")
    if status == 403:
        return ProviderError(f"{label} refused the request (403 forbidden): this key may not use {model!r}.", kind="forbidden")
    if status == 404:
        from core.providers.models import facts

        retired = facts(model, provider).retirement()
        if retired and "retired" in retired:
            return ProviderError(f"{label} answered 404: {retired}", kind="not_found")
        return ProviderError(f"{label} does not know the model {model!r} (404); pick another in the settings.", kind="not_found")
    if status == 429:
        after = _retry_after(exc)
        wait = f" Try again in {after} s." if after else " Try again shortly."
        return ProviderError(f"{label} is rate limiting requests (429); gave up after {retries} retries.{wait}",
                             kind="rate_limit", retryable=True)
    if status == 529 or "overloaded" in str(exc).lower():
        if status is None or status < 400:  # an error event inside a 200 stream: nothing was retried
            return ProviderError(f"{label} is overloaded and stopped mid-reply; the partial reply is kept, marked "
                                 "incomplete. Try again in a minute.", kind="overloaded", retryable=True)
        return ProviderError(f"{label} is overloaded ({status}); gave up after {retries} retries. Try again in a minute.",
                             kind="overloaded", retryable=True)
    if status is not None and status >= 500:
        return ProviderError(f"{label} had a server error ({status}); gave up after {retries} retries.",
                             kind="server", retryable=True)
    if status == 400:
        return ProviderError(f"{label} rejected the request (400): {_message(exc)}", kind="bad_request")
    if status is not None:
        return ProviderError(f"{label} answered {status}: {_message(exc)}", kind="http")
    if isinstance(exc, ValueError) and ("JSON" in name or "json" in str(exc).lower() or "parse" in str(exc).lower()):
        return ProviderError(f"{label} sent a malformed event stream; the partial reply is kept, marked incomplete.",
                             kind="malformed")
    if "Timeout" in name:
        return ProviderError(f"{label} did not answer in time ({where}).", kind="timeout", retryable=True)
    if "Connection" in name or "Connect" in name:
        return ProviderError(f"Could not connect to {where} (connection refused or unreachable).", kind="connection",
                             retryable=True)
    if "RemoteProtocol" in name or "ReadError" in name or "incomplete" in str(exc).lower():
        return ProviderError(f"The connection to {inner} was cut mid-reply; the partial reply is kept, marked incomplete.",
                             kind="cut")
    return ProviderError(f"{label} failed: {name}: {_message(exc)}", kind="error")


def _retry_after(exc: Exception) -> str | None:
    response = getattr(exc, "response", None)
    if response is None:
        return None
    return response.headers.get("retry-after")


def _message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(getattr(exc, "message", "") or exc)
