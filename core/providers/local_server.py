"""What a local OpenAI-compatible server says about itself, asked on its own endpoints with the user's key.

Beside its window (core/providers/local_window.py) a local server tells:
- the model it serves: `GET /v1/models` (every OpenAI-compatible server); llama.cpp serves the one model
  it was started with whatever a request names, so the name a user sees is the server's, not the
  configured one (a llama.cpp serving SmolLM2 is not "gpt-4.1-mini");
- whether it uses tools: Ollama's `POST /api/show` lists `capabilities` ("tools" among them:
  docs.ollama.com/api/show); llama.cpp says so in its `GET /props` (read with its window, by
  core/providers/local_window.py). A server whose template has no tools drops them from the prompt, so
  they are neither sent nor counted;
- the prompt's real size: llama.cpp's `POST /tokenize` (`{"content": text}` → `{"tokens": [...]}`,
  tools/server/README.md) counts with the model's own tokenizer, where Cairn's estimate (4 characters a
  token) can be far off for a small window.
A server started with an API key (llama.cpp `--api-key`, LM Studio) refuses these endpoints without it
(401): the key the user gave goes in `Authorization: Bearer`, as on the chat requests. Every call is
GET or POST with a short timeout, never raises, and answers None when the server does not say.
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.request
from dataclasses import dataclass
from typing import Any

# No proxy: only a server on this machine is asked, and an HTTP_PROXY set for the internet must not
# carry a request for 127.0.0.1 away (nor the local model's name, or a prompt being counted, to it).
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
KEEP_ANSWER_SECONDS = 300.0  # what a server said is asked again after this long (a restart, another model)


def root(base_url: str) -> str:
    """The server's root: the base URL without its trailing slash and `/v1`."""
    url = base_url.rstrip("/")
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
    return url.rstrip("/")


def _headers(api_key: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json"}
    if api_key and api_key != "local":  # "local": the placeholder Cairn sends a server that needs no key
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def get_json(url: str, api_key: str | None, timeout: float) -> Any:
    """The JSON body of a 200 answer to GET `url`, or None (any error, other status or bad JSON)."""
    return _ask(urllib.request.Request(url, method="GET", headers=_headers(api_key)), timeout)


def post_json(url: str, body: dict, api_key: str | None, timeout: float) -> Any:
    """The JSON body of a 200 answer to POST `url` with `body`, or None."""
    data = json.dumps(body).encode("utf-8")
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={**_headers(api_key), "Content-Type": "application/json"})
    return _ask(request, timeout)


def _ask(request: urllib.request.Request, timeout: float) -> Any:
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            if response.status != 200:
                return None
            return json.loads(response.read().decode("utf-8"))
    except Exception:  # HTTPError (4xx/5xx), URLError, timeout, reset, bad JSON, bad URL: no answer
        return None


@dataclass(frozen=True)
class ServerFacts:
    served: tuple[str, ...]  # the model ids `/v1/models` lists (empty: it did not say)
    tools: bool | None  # whether the model's chat template takes tools (None: the server did not say)
    can_tokenize: bool  # whether POST /tokenize counts tokens (llama.cpp)

    def shown_model(self, configured: str) -> str:
        """The name to show for the model: the configured one when the server serves it, else the one
        model the server serves, else the configured one."""
        if configured in self.served or len(self.served) != 1:
            return configured
        return self.served[0]


def _served(base: str, api_key: str | None, timeout: float) -> tuple[str, ...]:
    body = get_json(f"{base}/v1/models", api_key, timeout)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):
        return ()
    return tuple(str(m["id"]) for m in data if isinstance(m, dict) and isinstance(m.get("id"), str))


def _tools(base: str, model: str, api_key: str | None, timeout: float) -> bool | None:
    shown = post_json(f"{base}/api/show", {"model": model}, api_key, timeout)
    capabilities = shown.get("capabilities") if isinstance(shown, dict) else None
    if isinstance(capabilities, list):
        return "tools" in capabilities
    return None


def _tokenizes(base: str, api_key: str | None, timeout: float) -> bool:
    answer = post_json(f"{base}/tokenize", {"content": "a"}, api_key, timeout)
    return isinstance(answer, dict) and isinstance(answer.get("tokens"), list)


def ask(base_url: str, model: str, api_key: str | None, timeout: float = 1.0) -> ServerFacts:
    """What the server at `base_url` says about itself (see the module). Never raises."""
    try:
        base = root(base_url)
        return ServerFacts(_served(base, api_key, timeout), _tools(base, model, api_key, timeout),
                           _tokenizes(base, api_key, timeout))
    except Exception:
        return ServerFacts((), None, False)


_seen: dict[tuple[str, str, str], tuple[ServerFacts, float]] = {}
_seen_lock = threading.Lock()


def facts_of(base_url: str, model: str, api_key: str | None, *, now: float, timeout: float = 1.0) -> ServerFacts:
    """`ask`, remembered for this process for KEEP_ANSWER_SECONDS (every provider object shares it)."""
    key = (base_url, model, hashlib.sha256((api_key or "").encode()).hexdigest())
    with _seen_lock:
        last = _seen.get(key)
        if last is not None and now - last[1] < KEEP_ANSWER_SECONDS:
            return last[0]
        answer = ask(base_url, model, api_key, timeout)
        _seen[key] = (answer, now)
        return answer


_counted: dict[str, int] = {}
_COUNTED_MAX = 256


def count_tokens(base_url: str, text: str, api_key: str | None, timeout: float = 2.0) -> int | None:
    """The tokens of `text` by the server's own tokenizer (llama.cpp POST /tokenize), or None. A text
    counted before is not sent again (the window policy sizes one request several times)."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    if digest in _counted:
        return _counted[digest]
    answer = post_json(f"{root(base_url)}/tokenize", {"content": text}, api_key, timeout)
    tokens = answer.get("tokens") if isinstance(answer, dict) else None
    if not isinstance(tokens, list):
        return None
    if len(_counted) >= _COUNTED_MAX:
        _counted.clear()
    _counted[digest] = len(tokens)
    return len(tokens)
