"""The context window a local server runs a model with, asked of the server's own native endpoints.

The OpenAI-compatible API (`/v1/models`, `/v1/chat/completions`) does not report the window a model
was loaded with; llama.cpp's `llama-server`, Ollama and LM Studio each do on an endpoint of their own,
beside `/v1`. `probe()` asks them in turn (stdlib `urllib.request`, GET, a short timeout, with the
user's key: a llama.cpp started with `--api-key` answers /props only to it, and without it Cairn
assumed 4,096 for a 2,048-token server) and never raises: an error, a status other than 200, a body that is not JSON or a missing field moves on to the
next endpoint, and when none answers it returns None (the caller assumes a window and says so).
Only a positive int counts as a window.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from core.providers import local_server


@dataclass(frozen=True)
class Probed:
    tokens: int  # the window the server reports for the model
    source: str  # which endpoint said so, e.g. "llama.cpp /props"
    tools: bool | None = None  # llama.cpp: whether the model's chat template takes tools (None: not said)


root = local_server.root


def _get(url: str, timeout: float, api_key: str | None = None) -> Any:
    """The JSON body of a 200 answer to GET `url`, or None (any error, other status or bad JSON)."""
    return local_server.get_json(url, api_key, timeout)


def _tokens(value: Any) -> int | None:
    """A positive int (not a bool, not a float or a string), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def _llama_cpp(base: str, model: str, timeout: float, key: str | None) -> tuple[int, bool | None] | None:
    # llama.cpp `llama-server`: GET /props answers `default_generation_settings.n_ctx`, the context the
    # server was started with (`-c`/`--ctx-size`): tools/server/README.md ("GET /props: Get server
    # global properties"), and "A tour of llama.cpp's llama-server HTTP endpoints" (mvysny.github.io):
    # "n_ctx: .default_generation_settings.n_ctx". One model per server: the model name is not checked.
    # The same body carries `chat_template_caps` ("A tour ...": "does the template support tools?"):
    # a template without tools makes the server drop them from the prompt.
    body = _get(f"{base}/props", timeout, key)
    settings = body.get("default_generation_settings") if isinstance(body, dict) else None
    tokens = _tokens(settings.get("n_ctx")) if isinstance(settings, dict) else None
    if tokens is None:
        return None
    caps = body.get("chat_template_caps")
    said = caps.get("supports_tools", caps.get("supports_tool_calls")) if isinstance(caps, dict) else None
    return tokens, said if isinstance(said, bool) else None


def _ollama(base: str, model: str, timeout: float, key: str | None) -> int | None:
    # Ollama: GET /api/ps lists the running models, each with `name`, `model` and `context_length`
    # (docs.ollama.com/api/ps; "context_length: the context actually allocated at run time, not the
    # model's maximum"). A model that is not loaded is not listed: no answer. "llama3.2" is listed as
    # "llama3.2:latest".
    body = _get(f"{base}/api/ps", timeout, key)
    entries = body.get("models") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        return None
    wanted = {model} if ":" in model else {model, f"{model}:latest"}
    for entry in entries:
        if isinstance(entry, dict) and (entry.get("name") in wanted or entry.get("model") in wanted):
            return _tokens(entry.get("context_length"))
    return None


def _lm_studio(base: str, model: str, timeout: float, key: str | None) -> int | None:
    # LM Studio: GET /api/v0/models/{model} answers `loaded_context_length` (present when the model is
    # loaded) and `max_context_length` (lmstudio.ai/docs, "LM Studio REST API (beta)", v0). Only the
    # loaded one is the window: `max_context_length` is the model's maximum, not what it was loaded
    # with, so it is never used.
    body = _get(f"{base}/api/v0/models/{quote(model, safe='')}", timeout, key)
    return _tokens(body.get("loaded_context_length")) if isinstance(body, dict) else None


# In order: the first that answers wins.
_ENDPOINTS = (
    ("llama.cpp /props", _llama_cpp),
    ("Ollama /api/ps", _ollama),
    ("LM Studio /api/v0/models", _lm_studio),
)


KEEP_ANSWER_SECONDS = 300.0  # a window the server reported is asked again after this long (a restart)
RETRY_SILENT_SECONDS = 30.0  # a server that did not say (Ollama before the model is loaded): sooner
_seen: dict[tuple[str, str, str], tuple[Probed | None, float]] = {}
_seen_lock = threading.Lock()


def window_of(base_url: str, model: str, *, now: float, timeout: float = 1.0,
              api_key: str | None = None) -> Probed | None:
    """`probe`, remembered for this process by (base URL, model): every provider object the app makes
    (the Context viewer makes one per refresh) shares one answer instead of asking at each keystroke.
    `now` is the caller's clock (seconds, monotonic)."""
    key = (base_url, model, hashlib.sha256((api_key or "").encode()).hexdigest())
    with _seen_lock:  # one probe at a time; a second caller waits for the first one's answer
        last = _seen.get(key)
        if last is not None:
            answer, at = last
            if now - at < (KEEP_ANSWER_SECONDS if answer is not None else RETRY_SILENT_SECONDS):
                return answer
        answer = probe(base_url, model, timeout, api_key)
        _seen[key] = (answer, now)
        return answer


def probe(base_url: str, model: str, timeout: float = 1.0, api_key: str | None = None) -> Probed | None:
    """The window the server at `base_url` (an OpenAI-compatible base URL, `/v1` or not) runs `model`
    with, from its native endpoints, or None when none of them says. Never raises."""
    try:
        base = root(base_url)
    except Exception:
        return None
    for source, ask in _ENDPOINTS:
        try:
            answer = ask(base, model, timeout, api_key)
        except Exception:  # a shape no one expected: this endpoint did not answer
            answer = None
        if isinstance(answer, tuple):
            return Probed(answer[0], source, answer[1])
        if answer is not None:
            return Probed(answer, source)
    return None
