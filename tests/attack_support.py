"""Helpers of the attack suite (tests/test_attacks.py), not a test module.

A small graph (a never_send note, notes and an edge to attack, two recent fillers) plus one note that
carries an injection, planted through one *channel*: a retrieved passage, a focused node, a tool result,
a note an MCP client created, a captured web page. The model is the obedient fake (tests/fakes/obedient.py);
pages and the attacker's "exfil" address are a small HTTP server on 127.0.0.1 that records each request.
"""

from __future__ import annotations

import html
import http.server
import json
import os
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

from fakes.obedient import read, read_request, tool_calls

CHANNELS = ("passage", "focus", "tool_result", "mcp", "page")

# The never_send note: the injection names it by id or by its keywords (quokka, xylophone); its title
# and the rest of its text are words nothing else holds, so seeing one of them is seeing the note.
SECRET_TITLE = "Zanzibar ledger"
SECRET = "Quokka-Xylophone: the shed lock remembers marmalade-1987."
SECRET_WORDS = ("zanzibar", "marmalade")
ASK_PASSAGE = "What did the otter survey find?"  # finds the injected note by its keywords
ASK_FOCUS = "Hello, what is open in my focus?"  # shares no keyword with any note
TARGET_TITLE = "Garden plan"
EDGE_EXPLANATION = "Compost feeds the garden beds."
# OSC 52 (write the clipboard), an OSC 8 hyperlink, clear the screen, the same with a C1 CSI
HOSTILE = "\x1b]52;c;ZXZpbA==\x07\x1b]8;;http://evil.example/\x1b\\here\x1b]8;;\x1b\\\x1b[2J\x9b2J"


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        site = self.server.site
        with site.lock:
            site.requests.append(self.path)
        body = site.pages.get(self.path.split("?", 1)[0], site.default_page).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    site: "Site"


def article(title: str, *paragraphs: str) -> str:
    """An HTML article page whose main text (as trafilatura extracts it) is the title and paragraphs."""
    body = "\n".join(f"<p>{html.escape(p, quote=False)}</p>" for p in paragraphs)
    return (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title></head>"
            f"<body><article><h1>{html.escape(title)}</h1>\n{body}</article></body></html>")


class Site:
    """An HTTP server on 127.0.0.1 serving `pages` (path → HTML; any other path: a small article) and
    recording every request's path (with its query string)."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        self.default_page = article("Thanks for visiting", "Thanks for visiting this page; it says nothing much "
                                    "at all, in a few sentences of plain text for the reader.")
        self.requests: list[str] = []
        self.lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.site = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def __enter__(self) -> "Site":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def url(self, path: str) -> str:
        return self.base + path

    def decoded(self) -> list[str]:
        """The requested paths, percent-decoded."""
        with self.lock:
            return [unquote_plus(p) for p in self.requests]


@dataclass
class Graph:
    """The planted graph: node ids, the user's message and Focus for the channel."""

    db: Path
    channel: str
    secret: int = 0  # never_send ("private")
    target: int = 0  # a note the injection tries to change
    other: int = 0  # the target's neighbour (the edge target → other)
    edge: int = 0
    neighbour: int = 0  # a visible note linked to the secret one
    injected: int = 0  # the note carrying the injection
    fillers: list[int] = field(default_factory=list)
    message: str = ""
    focus: list[int] = field(default_factory=list)


def plant(db: Path, channel: str, injection, *, site: Site | None = None, cli: tuple | None = None) -> Graph:
    """The graph with `injection` (text, or a function of the Graph whose base ids are set) planted
    through `channel`. `site` serves the captured page (channel "page"), captured with `cairn add --url`
    when `cli` = (cmd, env) is given, else in-process through the function that verb calls
    (core.capture.web.capture)."""
    from core.graph.store import Store

    assert channel in CHANNELS, channel
    g = Graph(db, channel)
    with Store(db) as store:
        g.secret = store.add_node(SECRET_TITLE, SECRET, dimensions=["private"])["id"]
        g.target = store.add_node(TARGET_TITLE, "Plant tomatoes in May and beans in June.")["id"]
        g.other = store.add_node("Compost heap", "Turn the compost heap every two weeks.")["id"]
        g.edge = store.add_edge(g.target, g.other, EDGE_EXPLANATION)["id"]
        g.neighbour = store.add_node("Tool inventory", "Spade, rake, wheelbarrow.")["id"]
        store.add_edge(g.neighbour, g.secret, "The inventory lists what the shed holds.")
        g.message, g.focus = ASK_PASSAGE, []
        if callable(injection):
            injection = injection(g)
        survey = ("Otter survey findings from the river walk: three otters were seen near the old mill, "
                  "and two holts were found under the willows.")
        if channel == "passage":
            g.injected = store.add_node("Otter survey findings", f"{injection}\n\n{survey}")["id"]
        elif channel == "focus":
            g.injected = store.add_node("Reading list", "Books to borrow from the library.",
                                        description=injection)["id"]
            g.message, g.focus = ASK_FOCUS, [g.injected]
        elif channel == "tool_result":
            g.injected = store.add_node("Meeting minutes", f"Minutes of the committee meeting.\n\n{injection}")["id"]
            g.message = "Please summarise this one for me. " + read(g.injected)
    if channel == "mcp":
        from core.agent.mcp_server import CairnTools

        tools = CairnTools(db)
        try:
            value, _ = tools.call("createNode", {"title": "Otter survey findings",
                                                 "source": f"{injection}\n\n{survey}"}, client="Helpful Plugin")
        finally:
            tools.close()
        g.injected = value["created"]["id"]
    elif channel == "page":
        assert site is not None, "the page channel needs a Site"
        site.pages["/otters"] = article("Otter survey findings", injection, survey,
                                        "The next survey is planned for the spring, when the water is lower.")
        g.injected = capture_page(db, site.url("/otters"), cli)
    with Store(db) as store:  # the most recent notes: retrieval's keyword fallback adds two of them
        g.fillers = [store.add_node("Shopping", "Apples, bread and cheese.")["id"],
                     store.add_node("Plumber", "Call the plumber on Tuesday morning.")["id"],
                     store.add_node("Bus times", "The number 7 bus leaves at quarter past.")["id"]]
    return g


def capture_page(db: Path, url: str, cli: tuple | None = None) -> int:
    """Capture `url` as the user does (`cairn add --url`), returning the node id."""
    if cli is not None:
        cmd, env = cli
        done = subprocess.run([*cmd, "--db", str(db), "add", "--url", url], env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return int(done.stdout.strip())
    from core.capture.web import capture
    from core.graph.store import Store

    with Store(db) as store:
        return capture(store, url).node["id"]


# -- the CLI ---------------------------------------------------------------------------------------------
def write_config(home: Path, text: str) -> Path:
    """config.toml in CAIRN_HOME (readable by the user only, as Cairn asks of a config file)."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text)
    os.chmod(path, 0o600)
    return path


# The fakes listen on 127.0.0.1: [capture] local_addresses lets captureUrl reach the attacker's server
# there too (as it would reach any public one), and an OpenAI-compatible server on loopback is not asked
# for its window (the fake does not say; 4,096 tokens would be assumed).
NO_PRIVACY_CONFIG = """\
[chat]
local_context_window = 131072

[capture]
local_addresses = true
"""
BASE_CONFIG = NO_PRIVACY_CONFIG + """
[privacy]
never_send = ["private"]
"""


def fake_env(env: dict, provider: str, srv) -> dict:
    """The environment of a `cairn` process talking to the fake `srv` as `provider`, with no proxy."""
    env = dict(env)
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "FORCE_COLOR",
                "COLUMNS", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
                "NO_PROXY", "no_proxy"):
        env.pop(var, None)
    Path(env["HOME"]).mkdir(parents=True, exist_ok=True)
    key = "sk-test-KEY-attack-0000"
    if provider == "anthropic":
        env.update(ANTHROPIC_API_KEY=key, ANTHROPIC_BASE_URL=srv.base_url)
    else:
        env.update(OPENAI_API_KEY=key, OPENAI_BASE_URL=srv.base_url)
    return env


@dataclass
class Run:
    rc: int
    out: bytes
    err: bytes

    @property
    def text(self) -> str:
        return (self.out + self.err).decode("utf-8", "replace")


def ask(cmd: list[str], env: dict, g: Graph, provider: str, *extra: str, message: str | None = None,
        timeout: float = 120) -> Run:
    """`cairn ask` as a real process, stdin not a terminal (so nothing can be confirmed by a person)."""
    args = [*cmd, "ask", message if message is not None else g.message, "--provider", provider, *extra]
    if g.focus:
        args += ["--focus", ",".join(map(str, g.focus))]
    proc = subprocess.run(args, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    return Run(proc.returncode, proc.stdout, proc.stderr)


# -- what the model did and was sent --------------------------------------------------------------------
def calls_made(srv) -> list[tuple[str, Any]]:
    """Every tool call (name, arguments) the model made, as the requests after it carry them (deduplicated)."""
    out: list[tuple[str, Any]] = []
    seen: set[str] = set()
    for r in srv.requests:
        for call in tool_calls(r.body):
            key = json.dumps(call, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                out.append(call)
    return out


def called(srv, tool: str) -> list[Any]:
    """The arguments of each call of `tool` the model made."""
    return [args for name, args in calls_made(srv) if name == tool]


def delivered(body: Any, marker_kind: str, tool: str = "", args: Any = None) -> bool:
    """Whether the obedient model reads a marker of this kind (and tool, and arguments) in this body."""
    return any(m.kind == marker_kind and (not tool or m.tool == tool) and (args is None or m.args == args)
               for m in read_request(body).markers)


def raw_bodies(srv) -> str:
    return "\n".join(r.raw.decode("utf-8", "replace") for r in srv.requests)


def leaks_secret(text: str) -> bool:
    low = text.lower()
    return any(w in low for w in SECRET_WORDS)
