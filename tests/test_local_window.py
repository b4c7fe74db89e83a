"""A local model's context window comes from the server it runs on (core/providers/local_window.py,
OpenAIProvider.facts): chat.local_context_window when set, else what llama.cpp, Ollama or LM Studio
report on their native endpoints, else models.LOCAL_CONTEXT_WINDOW, assumed and said so.

Real OpenAIProvider objects against tiny fake servers on 127.0.0.1 (http.server in a thread, port 0)
that answer as each server does; every shape names its source."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.providers import local_window, models
from core.providers.local_window import KEEP_ANSWER_SECONDS, RETRY_SILENT_SECONDS as PROBE_RETRY_SECONDS
from core.providers.openai_provider import OpenAIProvider

MODEL = "llama3.2"

# llama.cpp `llama-server` GET /props (tools/server/README.md, "GET /props"; "A tour of llama.cpp's
# llama-server HTTP endpoints", mvysny.github.io: "n_ctx: .default_generation_settings.n_ctx"),
# trimmed to the fields around the one read. Started with `-c 8192`.
LLAMA_CPP_PROPS = {
    "default_generation_settings": {"n_ctx": 8192, "n_predict": -1, "model": "/models/llama-3.2-3b.gguf",
                                    "temperature": 0.8, "top_k": 40},
    "total_slots": 1,
    "model_path": "/models/llama-3.2-3b.gguf",
    "chat_template": "...",
}


def ollama_ps(*loaded: tuple[str, int]) -> dict:
    """Ollama GET /api/ps (docs.ollama.com/api/ps): the running models, each with `name`, `model` and
    `context_length` ("the context actually allocated at run time, not the model's maximum")."""
    return {"models": [{
        "name": name, "model": name, "size": 5137025024,
        "digest": "a80c4f17acd55265feec403c7aef86be0c25983ab279d83f3bcd3abbcb5b8b72",
        "details": {"parent_model": "", "format": "gguf", "family": "llama", "families": ["llama"],
                    "parameter_size": "3.2B", "quantization_level": "Q4_K_M"},
        "expires_at": "2026-06-04T14:38:31.83753-07:00", "size_vram": 5137025024,
        "context_length": window,
    } for name, window in loaded]}


def lm_studio_model(model_id: str, loaded: int | None, maximum: int = 32768) -> dict:
    """LM Studio GET /api/v0/models/{id} (lmstudio.ai/docs, REST API v0): `max_context_length` is the
    model's maximum; `loaded_context_length` (only while loaded) is what it runs with."""
    body = {"id": model_id, "object": "model", "type": "llm", "publisher": "lmstudio-community",
            "arch": "qwen2", "compatibility_type": "gguf", "quantization": "Q4_K_M",
            "state": "loaded" if loaded else "not-loaded", "max_context_length": maximum}
    if loaded:
        body["loaded_context_length"] = loaded
    return body


class FakeNative:
    """A server on 127.0.0.1 answering GET paths from `routes` ({path: (status, body)}, a body that is
    not bytes is sent as JSON; any other path: 404 as the servers do), counting every request."""

    def __init__(self, routes: dict | None = None, delay: dict | None = None):
        self.routes = dict(routes or {})
        self.delay = dict(delay or {})  # path: seconds to wait before answering
        self.paths: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                fake.paths.append(self.path)
                time.sleep(fake.delay.get(self.path, 0))
                status, body = fake.routes.get(self.path, (404, {"error": "not found"}))
                raw = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:  # the prober gave up waiting
                    pass

            do_POST = do_GET

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> "FakeNative":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def window_paths(self) -> list[str]:
        """The requests for the window; the others a provider sends a local server (its model list,
        Ollama's /api/show, llama.cpp's /tokenize: core/providers/local_server.py) left out."""
        return [p for p in self.paths if p not in ("/v1/models", "/api/show", "/tokenize")]

    @property
    def base_url(self) -> str:  # what chat.base_url holds for a local server
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def provider(srv_or_url, model: str = MODEL, **options) -> OpenAIProvider:
    url = srv_or_url if isinstance(srv_or_url, str) else srv_or_url.base_url
    return OpenAIProvider("local", model, base_url=url, **options)


def closed_port_url() -> str:
    """A loopback base URL nothing listens on (the server is down)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


# -- each server ----------------------------------------------------------------------------------


def test_llama_cpp_reports_its_window_on_props():
    with FakeNative({"/props": (200, LLAMA_CPP_PROPS)}) as srv:
        facts = provider(srv).facts
    assert facts.provider == "local" and facts.context_window == 8192
    assert facts.window_source == "server (llama.cpp /props)" and facts.assumed == ""
    assert srv.window_paths == ["/props"]  # the first that answers wins


def test_ollama_reports_a_loaded_models_window_on_api_ps():
    ps = ollama_ps(("qwen2.5:7b", 32768), ("llama3.2:latest", 16384))
    with FakeNative({"/api/ps": (200, ps)}) as srv:
        facts = provider(srv).facts  # "llama3.2" is listed as "llama3.2:latest"
        tagged = provider(srv, "qwen2.5:7b").facts
    assert facts.context_window == 16384 and facts.window_source == "server (Ollama /api/ps)"
    assert tagged.context_window == 32768
    assert srv.window_paths[:2] == ["/props", "/api/ps"]  # llama.cpp's endpoint 404s first


def test_lm_studio_reports_the_loaded_window_never_the_maximum():
    model_id = "qwen2.5-7b-instruct"
    with FakeNative({f"/api/v0/models/{model_id}": (200, lm_studio_model(model_id, loaded=12000, maximum=32768))}) as srv:
        facts = provider(srv, model_id).facts
    assert facts.context_window == 12000  # loaded_context_length, not max_context_length
    assert facts.window_source == "server (LM Studio /api/v0/models)" and facts.assumed == ""
    assert srv.window_paths == ["/props", "/api/ps", f"/api/v0/models/{model_id}"]


def test_lm_studio_model_not_loaded_has_no_window_and_its_id_is_quoted():
    model_id = "lmstudio-community/qwen 2.5"
    quoted = "/api/v0/models/lmstudio-community%2Fqwen%202.5"
    with FakeNative({quoted: (200, lm_studio_model(model_id, loaded=None, maximum=32768))}) as srv:
        facts = provider(srv, model_id).facts
    assert srv.window_paths[-1] == quoted
    assert facts.context_window == models.LOCAL_CONTEXT_WINDOW and facts.window_source == models.WINDOW_ASSUMED


# -- the order of what wins -----------------------------------------------------------------------


def test_the_config_beats_the_server_and_nothing_is_asked():
    with FakeNative({"/props": (200, LLAMA_CPP_PROPS)}) as srv:
        facts = provider(srv, local_window=32768).facts
    assert facts.context_window == 32768 and facts.window_source == "config (chat.local_context_window)"
    assert facts.assumed == "" and srv.window_paths == []


def test_a_server_that_is_down_leaves_the_assumed_window_and_says_so():
    p = provider(closed_port_url())
    facts = p.facts
    assert facts.provider == "local" and facts.context_window == 4096 and facts.input is None
    assert facts.window_source == "assumed"
    assert facts.assumed == ("local model: assumed a 4,096-token window (Ollama's default); the server did not "
                             "report its window: set chat.local_context_window")


def test_bad_json_and_404_move_on_to_the_next_endpoint():
    model_id = "phi-4"
    routes = {"/props": (200, b"<html>not json</html>"),  # something else on the port
              "/api/ps": (404, b"404 page not found"),
              f"/api/v0/models/{model_id}": (200, lm_studio_model(model_id, loaded=6144))}
    with FakeNative(routes) as srv:
        facts = provider(srv, model_id).facts
    assert facts.context_window == 6144 and srv.window_paths == ["/props", "/api/ps", f"/api/v0/models/{model_id}"]


@pytest.mark.parametrize("n_ctx", [0, -1, "8192", 8192.0, True, None])
def test_only_a_positive_int_is_a_window(n_ctx):
    props = {"default_generation_settings": {"n_ctx": n_ctx}}
    with FakeNative({"/props": (200, props), "/api/ps": (200, ollama_ps((f"{MODEL}:latest", 2048)))}) as srv:
        probed = local_window.probe(srv.base_url, MODEL)
    assert probed == local_window.Probed(2048, "Ollama /api/ps")


def test_a_status_other_than_200_is_no_answer():
    with FakeNative({"/props": (503, {"error": {"message": "Loading model"}}),  # llama.cpp while loading
                     "/api/ps": (204, b"")}) as srv:
        assert local_window.probe(srv.base_url, MODEL) is None
    assert srv.window_paths == ["/props", "/api/ps", f"/api/v0/models/{MODEL}"]


def test_a_silent_endpoint_is_given_up_after_the_timeout():
    with FakeNative({"/props": (200, LLAMA_CPP_PROPS), "/api/ps": (200, ollama_ps((MODEL, 3000)))},
                    delay={"/props": 2.0}) as srv:
        started = time.monotonic()
        probed = local_window.probe(srv.base_url, MODEL, timeout=0.2)
        assert time.monotonic() - started < 1.5
    assert probed == local_window.Probed(3000, "Ollama /api/ps")


def test_the_root_drops_v1_and_the_trailing_slash():
    assert local_window.root("http://127.0.0.1:11434/v1") == "http://127.0.0.1:11434"
    assert local_window.root("http://127.0.0.1:11434/v1/") == "http://127.0.0.1:11434"
    assert local_window.root("http://127.0.0.1:8080/") == "http://127.0.0.1:8080"
    assert local_window.root("http://127.0.0.1:8080") == "http://127.0.0.1:8080"
    assert local_window.probe("not a url", MODEL) is None and local_window.probe("", MODEL) is None


# -- when it is asked -----------------------------------------------------------------------------


def test_many_facts_reads_ask_the_server_once():
    with FakeNative({"/props": (200, LLAMA_CPP_PROPS)}) as srv:
        p = provider(srv)
        assert all(p.facts.context_window == 8192 for _ in range(50))
    assert srv.window_paths == ["/props"]


def test_a_server_that_does_not_say_is_asked_again_only_after_30_seconds():
    clock = Clock()
    with FakeNative({"/api/ps": (200, ollama_ps())}) as srv:  # Ollama up, the model not loaded yet
        p = provider(srv, clock=clock)
        assert p.facts.window_source == "assumed" and p.facts.context_window == 4096
        assert [p.facts for _ in range(20)] and len(srv.window_paths) == 3  # one round of three endpoints
        # the first request loads the model; Ollama lists it with the window it allocated
        srv.routes["/api/ps"] = (200, ollama_ps((f"{MODEL}:latest", 8192)))
        clock.now += PROBE_RETRY_SECONDS - 1
        assert p.facts.context_window == 4096 and len(srv.window_paths) == 3  # not yet
        clock.now += 2
        facts = p.facts
        assert facts.context_window == 8192 and facts.window_source == "server (Ollama /api/ps)"
        assert facts.assumed == ""
        clock.now += KEEP_ANSWER_SECONDS - 1
        assert p.facts.context_window == 8192  # a positive answer is kept …
        assert srv.window_paths == ["/props", "/api/ps", f"/api/v0/models/{MODEL}", "/props", "/api/ps"]
        clock.now += 2
        assert p.facts.context_window == 8192  # … and asked again after KEEP_ANSWER_SECONDS (a restart)
    assert srv.window_paths[5:] == ["/props", "/api/ps"]


def test_every_provider_object_shares_one_answer():
    """The Context viewer makes a provider per refresh: they share the process's answer."""
    with FakeNative({"/props": (200, LLAMA_CPP_PROPS)}) as srv:
        assert all(provider(srv).facts.context_window == 8192 for _ in range(20))
    assert srv.window_paths == ["/props"]


def test_a_copy_on_another_model_asks_for_its_own_window():
    ps = ollama_ps((f"{MODEL}:latest", 8192), ("qwen2.5:7b", 32768))
    with FakeNative({"/api/ps": (200, ps)}) as srv:
        p = provider(srv)
        assert p.facts.context_window == 8192
        other = p.with_model("qwen2.5:7b")
        assert other.facts.context_window == 32768 and p.facts.context_window == 8192


def test_a_remote_server_is_never_probed(monkeypatch):
    def no_probe(*args, **kwargs):
        raise AssertionError("a remote server was probed")

    monkeypatch.setattr(local_window, "probe", no_probe)
    # another machine's OpenAI-compatible server (TEST-NET-1): the table's facts, as before
    remote = provider("http://192.0.2.10:11434/v1")
    assert remote.compatible and remote.remote
    assert remote.facts.provider == "openai" and not remote.facts.known
    assert remote.facts == models.facts(MODEL, "openai")
    # OpenAI itself
    assert OpenAIProvider("k", "gpt-4.1-mini").facts.context_window == 1_047_576


def test_a_loopback_server_marked_remote_is_not_probed():
    with FakeNative({"/props": (200, LLAMA_CPP_PROPS)}) as srv:
        p = provider(srv)
        p.remote = True  # as tests/chat_support.py does for a fake that plays a remote server
        assert p.facts.provider == "openai"
    assert srv.window_paths == []


# -- the model table's part -----------------------------------------------------------------------


def test_existing_callers_of_models_facts_keep_working():
    # no source: a window given is the config's; none is not said (no sentence), as before
    assert models.facts(MODEL, "openai", local=True).assumed == ""
    configured = models.facts(MODEL, "openai", local=True, window=32768)
    assert configured.context_window == 32768 and configured.window_source == models.WINDOW_FROM_CONFIG
    assumed = models.facts(MODEL, "openai", local=True, source=models.WINDOW_ASSUMED)
    assert assumed.assumed.startswith("local model: assumed a 4,096-token window")
    served = models.facts(MODEL, "openai", local=True, window=8192, source=models.window_from_server("llama.cpp /props"))
    assert served.window_source == "server (llama.cpp /props)" and served.assumed == ""
    # a model of the table says nothing of a local window
    assert models.facts("gpt-4.1-mini").window_source == "" and models.facts("gpt-4.1-mini").assumed == ""
