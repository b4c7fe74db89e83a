"""A web capture's overall deadline (core/capture/web.py, TOTAL_TIMEOUT): a server that trickles its page
a byte at a time, or sends headers and then nothing, is abandoned when the deadline runs out, not only
between reads. Real servers on 127.0.0.1 in threads, a real SQLite file, `cairn add --url` in a
subprocess and the model's captureUrl tool; the deadline is shortened to 2 s and each capture must
return well within 20 s (a bound that proves it returns, not a timing)."""

from __future__ import annotations

import socket
import socketserver
import subprocess
import sys
import threading

import pytest

from core.agent import profiles
from core.agent.tools import ToolContext, ToolError, ToolRunner
from core.capture import web
from core.capture.web import CaptureError
from core.graph.store import Store

DEADLINE = 2.0
BOUND = 20.0  # seconds a 2 s deadline may take to return, however loaded the machine is
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nConnection: close\r\n\r\n"
PAGE = b"<html><head><title>Slow</title></head><body><article><p>" + b"word " * 400 + b"</p></article></body></html>"


class Trickle(socketserver.BaseRequestHandler):
    """/trickle: headers, then the page one byte every 0.5 s; /stall: headers, then nothing;
    /slow-headers: the headers themselves one byte every 0.5 s. Each stops when the test ends."""

    stop = threading.Event()

    def handle(self) -> None:
        request = b""
        while b"\r\n\r\n" not in request:
            data = self.request.recv(4096)
            if not data:
                return
            request += data
        path = request.split(b" ", 2)[1].decode()
        try:
            if path == "/stall":
                self.request.sendall(HEAD)
                self.stop.wait(60)
                return
            data = HEAD  # /slow-headers
            if path == "/trickle":
                self.request.sendall(HEAD)
                data = PAGE
            for i in range(len(data)):
                if self.stop.wait(0.5):
                    return
                self.request.sendall(data[i:i + 1])
        except (BrokenPipeError, ConnectionResetError):
            pass  # Cairn gave up on the page, as it should


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False


@pytest.fixture(scope="module")
def slow_site():
    Trickle.stop.clear()
    server = Server(("127.0.0.1", 0), Trickle)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    Trickle.stop.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def short_deadline(monkeypatch):
    monkeypatch.setattr(web, "TOTAL_TIMEOUT", DEADLINE)


def within_bound(db_path, work):
    """Run `work(store)` in a thread with its own Store on `db_path` (a connection belongs to its
    thread); (returned?, its exception or result). A thread that does not return is left to end on
    its own (the server stops trickling at the module's end)."""
    outcome: dict = {}

    def run() -> None:
        try:
            with Store(db_path) as store:
                outcome["result"] = work(store)
        except BaseException as exc:  # handed to the test, which asserts on it
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND)
    return not thread.is_alive(), outcome


def nodes(db_path) -> int:
    with Store(db_path, readonly=True) as check:
        return check.counts()["nodes"]


def user_wrote(url: str) -> dict:
    """ToolContext arguments saying the user wrote `url` in the chat, so the egress rule lets the model
    fetch it (core/agent/egress.py; a tree from before that rule fetches it anyway)."""
    try:
        from core.agent.egress import Egress
    except ModuleNotFoundError:
        return {}
    return {"egress": Egress(user_texts=[f"Keep {url}"])}


def sentence(site: str) -> str:
    return (f"The page at {site.removeprefix('http://')} took longer than 2 s to arrive and was abandoned; "
            "nothing was saved.")


@pytest.mark.parametrize("path", ["/trickle", "/stall", "/slow-headers"])
def test_a_trickling_or_stalled_server_is_abandoned_at_the_deadline(slow_site, db_path, short_deadline, path):
    returned, outcome = within_bound(db_path, lambda store: web.capture(store, slow_site + path))
    assert returned, f"the capture of {path} was still running after {BOUND:g} s with a {DEADLINE:g} s deadline"
    error = outcome.get("error")
    assert isinstance(error, CaptureError), outcome
    assert (error.kind, str(error)) == ("timeout", sentence(slow_site))
    assert nodes(db_path) == 0


def test_the_deadline_can_be_given_per_call(slow_site, db_path):
    returned, outcome = within_bound(db_path, lambda store: web.capture(store, slow_site + "/trickle",
                                                                        total_timeout=DEADLINE))
    assert returned and isinstance(outcome.get("error"), CaptureError)
    assert str(outcome["error"]) == sentence(slow_site)


def test_the_models_capture_url_tool_has_the_same_deadline(slow_site, db_path, short_deadline):
    url = slow_site + "/trickle"

    def tool(store):
        runner = ToolRunner(ToolContext(store, searcher=None, local_addresses=True, **user_wrote(url)),
                            profiles.ALL_TOOLS)
        return runner.run("captureUrl", {"url": url})

    returned, outcome = within_bound(db_path, tool)
    assert returned
    assert isinstance(outcome.get("error"), ToolError) and str(outcome["error"]) == sentence(slow_site)
    assert nodes(db_path) == 0


def test_cairn_add_url_gives_up_on_a_trickling_server(slow_site, tmp_path, cli_env):
    db = tmp_path / "cli.db"
    env = dict(cli_env)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env.pop(var, None)
    program = (f"import sys, core.capture.web as web; web.TOTAL_TIMEOUT = {DEADLINE}; "
               "from tui.cli.main import main; sys.exit(main(sys.argv[1:]))")
    try:
        done = subprocess.run([sys.executable, "-c", program, "--db", str(db), "add", "--url", slow_site + "/trickle"],
                              capture_output=True, text=True, env=env, timeout=BOUND + 10)  # (+ the CLI's start)
    except subprocess.TimeoutExpired:
        pytest.fail(f"cairn add --url was still running after {BOUND + 10:g} s with a {DEADLINE:g} s deadline")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == f"cairn: {sentence(slow_site)}\n"
    with Store(db, readonly=True) as check:
        assert check.counts()["nodes"] == 0


def test_a_page_that_arrives_in_time_is_still_captured(store, short_deadline):
    """The watchdog does not cut a fetch that finishes: a page served at once is kept whole."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            while b"\r\n\r\n" not in conn.recv(4096):
                pass
            conn.sendall(HEAD + PAGE)

    threading.Thread(target=serve, daemon=True).start()
    try:
        result = web.capture(store, f"http://127.0.0.1:{listener.getsockname()[1]}/fast")
    finally:
        listener.close()
    assert result.node["source"].count("word") == 400
