"""`cairn mcp`: a stdio MCP server over the model's own tools (core.agent.tools), for Claude Desktop,
Claude Code and any other MCP client.

The tools are the chat model's tools — same schemas (core.agent.tools.SCHEMAS), same ToolRunner, same
record shapes — plus `getContext` (counts, recent nodes, hubs). The MCP layer adds only:

- limits, checked against each tool's input schema before anything runs, with one-sentence errors
  (a longer title, a source over MAX_SOURCE_CHARS, a `limit` over 50 ... is refused, not clamped);
- `confirmed_by_user` on the tools that change existing data (updateNode, createEdge, updateEdge):
  they run only when the user has set `mcp.allow_edits = true` in the config (a flag the client
  cannot send) *and* the call says `confirmed_by_user: true`. createNode and captureUrl (which
  fetches the page the client names, through core/capture/web.py) need neither;
- privacy: `privacy.never_send` applies as it does for a remote chat provider (an MCP client
  normally sends what it reads to a remote model);
- semantic search degrades to keyword search, saying so, when the embedder cannot be loaded.

Writes never embed: a created or edited node is `pending`, and the running app or `cairn index`
chunks and embeds it (keyword search finds it at once through the FTS triggers). The embedder is
loaded lazily, by the first searchContent call.

Threads: the SDK serves requests concurrently on an event loop; every tool call runs on one worker
thread that owns the SQLite connection (connections are never shared across threads), so calls are
serialised — except sqliteQuery, which is checked there but runs on a thread of its own with a
read-only connection of its own and a deadline (core.agent.readonly_sql), so a slow query never holds
up the next call. When the client closes stdin the SDK cancels the calls in flight (a query among them
is interrupted) and `cairn mcp` exits. The database is opened in WAL mode with a busy timeout, writes
take BEGIN IMMEDIATE with retries (core.graph.db), and a call that still meets a locked database is
retried here, so other Cairn processes (the app, `cairn add`, an import) can write at the same time.

stdout is the protocol: logging goes to stderr, and while serving the SDK points fd 1 at stderr so
a stray print cannot corrupt the stream.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from core.graph import history
from core.graph.db import is_locked
from core.errors import CairnError, DatabaseError
from core.graph.privacy import SendPolicy
from core.graph.store import MAX_DESCRIPTION, MAX_TITLE
from core.agent.egress import Egress
from core.agent.readonly_sql import stop_when
from core.agent.tools import MAX_LIMIT, SCHEMAS, ToolContext, ToolError, ToolRunner, _obj, result_text
from core.agent.tools import MAX_SOURCE_CHARS as SOURCE_CHARS_RETURNED

log = logging.getLogger("cairn.mcp")

SERVER_NAME = "cairn"
TOOLS = ("getContext", "queryNodes", "getNodesById", "searchContent", "queryEdges", "createNode", "updateNode",
         "createEdge", "updateEdge", "sqliteQuery", "captureUrl")
OPEN_WORLD = ("captureUrl",)  # reaches beyond Cairn (fetches the page the client names)
READ_ONLY = ("getContext", "queryNodes", "getNodesById", "searchContent", "queryEdges", "sqliteQuery")
CONFIRMABLE = ("updateNode", "createEdge", "updateEdge")

# Limits of the MCP layer (the store's own are wider: 10 M characters of source).
MAX_SOURCE_CHARS = 1_000_000  # a note's text, in characters
MAX_QUERY_CHARS = 2_000  # searchContent query, queryNodes filter
MAX_SQL_CHARS = 20_000
MAX_LINK_CHARS = 4_000
MAX_DIMENSIONS = 100  # per node
PENDING_SNIPPET_CHARS = 600  # the text shown for a search hit on a node that has no indexed passage yet
LOCK_ATTEMPTS = 4  # calls that meet a locked database (after core.graph.db's own 30 s of retries)
SQL_THREADS = 4  # sqliteQuery calls running at once (each stops at its deadline); more wait their turn

_PROPERTY_LIMITS: dict[str, dict] = {
    "title": {"maxLength": MAX_TITLE},
    "description": {"maxLength": MAX_DESCRIPTION},
    "explanation": {"maxLength": MAX_DESCRIPTION},
    "source": {"maxLength": MAX_SOURCE_CHARS},
    "link": {"maxLength": MAX_LINK_CHARS},
    "url": {"maxLength": MAX_LINK_CHARS},
    "dimensions": {"maxItems": MAX_DIMENSIONS},
    "ids": {"minItems": 1, "maxItems": MAX_LIMIT},
    "query": {"maxLength": MAX_QUERY_CHARS},
    "filter": {"maxLength": MAX_QUERY_CHARS},
    "sql": {"maxLength": MAX_SQL_CHARS},
}

_CONFIRM_NOTE = (" Refused unless the user has set `mcp.allow_edits = true` in Cairn's config and this call "
                 "sends confirmed_by_user: true — send it only after the user approved this exact change.")
_DESCRIPTIONS = {
    "getContext": "Start here: how many nodes and edges there are (and how many wait to be indexed), the most "
                  "recently updated nodes and the most-connected hub nodes.",
    "createNode": "Create a node (a note). It is saved at once and found by keyword search at once; Cairn indexes "
                  f"it for meaning search later. Text (source) up to {MAX_SOURCE_CHARS:,} characters, "
                  f"title up to {MAX_TITLE} characters.",
    "getNodesById": SCHEMAS["getNodesById"]["description"] + f" At most {MAX_LIMIT} ids per call; a text longer than "
                    f"{SOURCE_CHARS_RETURNED:,} characters is cut there (the result says so).",
    "searchContent": SCHEMAS["searchContent"]["description"] + f" limit: at most {MAX_LIMIT} (default 8).",
    "queryNodes": SCHEMAS["queryNodes"]["description"] + f" limit: at most {MAX_LIMIT} (default 20).",
    "captureUrl": SCHEMAS["captureUrl"]["description"] + " Only http(s) HTML pages up to 10 MB; the call waits "
                  "for the page (10 s without an answer fails). Like createNode it needs no mcp.allow_edits.",
}

INSTRUCTIONS = (
    "Cairn is the user's personal knowledge graph: nodes (notes) joined by edges whose explanation says why "
    "two nodes connect. Call getContext first. searchContent finds passages by keyword and meaning; "
    "queryNodes lists nodes; getNodesById reads them whole. createNode saves a note; captureUrl saves a web "
    "page the user names. updateNode, createEdge and updateEdge change existing data: ask the user first and "
    "send confirmed_by_user: true only after they agreed. Cite nodes by id."
)


# -- schemas --------------------------------------------------------------------------------------
def input_schema(name: str) -> dict:
    """The tool's input schema as MCP clients see it: core.agent.tools.SCHEMAS plus the MCP limits."""
    if name == "getContext":
        schema = _obj({"limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                                 "description": "how many recent nodes and hubs (default 10)"}})
    else:
        schema = copy.deepcopy(SCHEMAS[name]["input_schema"])
    for prop, extra in _PROPERTY_LIMITS.items():
        if prop in schema["properties"]:
            schema["properties"][prop].update(extra)
    if name in CONFIRMABLE:
        schema["properties"]["confirmed_by_user"] = {
            "type": "boolean",
            "description": "true only after the user approved this change; otherwise nothing is changed",
        }
    return schema


def description(name: str) -> str:
    text = _DESCRIPTIONS.get(name) or SCHEMAS[name]["description"]
    if name in CONFIRMABLE:
        text = text.replace(" Needs the user's confirmation.", "") + _CONFIRM_NOTE
    return text


def tool_definitions() -> list[dict]:
    """`{name, description, input_schema, read_only}` for every MCP tool, in a fixed order."""
    return [{"name": n, "description": description(n), "input_schema": input_schema(n), "read_only": n in READ_ONLY}
            for n in TOOLS]


_VALIDATORS: dict[str, Any] = {}


def _validator(name: str):
    if name not in _VALIDATORS:
        from jsonschema import Draft202012Validator

        _VALIDATORS[name] = Draft202012Validator(input_schema(name))
    return _VALIDATORS[name]


_TYPE_WORDS = {"integer": "a whole number", "string": "text", "boolean": "true or false", "array": "a list",
               "object": "an object", "number": "a number"}


def _schema_message(tool: str, error) -> str:
    """One sentence for a schema violation (never echoes a long value back)."""
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
    where = where or "the arguments"
    kind, limit, value = error.validator, error.validator_value, error.instance
    if kind == "maxLength":
        return f"{where} is {len(value):,} characters; the limit is {limit:,}. Nothing was done."
    if kind == "maxItems":
        return f"{where} has {len(value):,} items; at most {limit:,} are allowed per call. Nothing was done."
    if kind == "minItems":
        return f"{where} must have at least {limit} item{'s' if limit != 1 else ''}."
    if kind == "maximum":
        return f"{where} is {value}; the maximum is {limit}."
    if kind == "minimum":
        return f"{where} is {value}; the minimum is {limit}."
    if kind == "type":
        return f"{where} must be {_TYPE_WORDS.get(limit, limit)}."
    if kind == "enum":
        return f"{where} must be one of {', '.join(map(str, limit))}."
    if kind == "required":
        return f"{tool} needs {error.message.split(' ')[0]}."
    if kind == "additionalProperties":
        allowed = ", ".join(input_schema(tool)["properties"])
        unknown = sorted(set(value) - set(input_schema(tool)["properties"]))
        return f"{tool} does not take {', '.join(unknown)}; its arguments are: {allowed}."
    message = error.message if len(error.message) <= 200 else error.message[:200] + "…"
    return f"{where}: {message}."


def check_arguments(name: str, args: Any) -> dict:
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolError("Tool arguments must be a JSON object.")
    from jsonschema.exceptions import best_match

    error = best_match(_validator(name).iter_errors(args))
    if error is not None:
        raise ToolError(f"Bad arguments for {name}: {_schema_message(name, error)}")
    return dict(args)


# -- the tools ------------------------------------------------------------------------------------
class _Config:
    """Cairn's config, read again when the file changes (so `mcp.allow_edits` needs no restart)."""

    def __init__(self, path: Path | None = None):
        from core.paths import config_path

        self.path = Path(path) if path else config_path()
        self._key: tuple | None = None
        self._value = None

    def get(self):
        from core import config

        try:
            st = self.path.stat()
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            key = None
        if self._value is None or key != self._key:
            self._value = config.load(self.path)
            self._key = key
        return self._value


class _DegradingSearcher:
    """A Searcher whose meaning search falls back to keywords when the embedder cannot load."""

    def __init__(self, searcher):
        self.searcher = searcher
        self.store = searcher.store
        self.embedder_error: str | None = None
        self.notes: list[str] = []

    def _semantic_ok(self, query: str) -> bool:
        if self.embedder_error is None and query.strip():
            try:
                self.searcher.query_vector(query)  # loads the model once; the vector is cached for the search
            except Exception as exc:  # EmbedderError, a missing onnxruntime, a broken model file ...
                self.embedder_error = str(exc) or type(exc).__name__
                log.warning("semantic search unavailable, using keyword search only: %s", self.embedder_error)
        return self.embedder_error is None

    def search(self, query: str, mode: str = "hybrid", **kwargs):
        if mode in ("hybrid", "vector") and not self._semantic_ok(query):
            self.notes.append(f"Note: meaning (semantic) search is unavailable ({self.embedder_error}); "
                              "these are keyword (fts) results only.")
            mode = "fts"
        return self.searcher.search(query, mode=mode, **kwargs)


def _locked(exc: BaseException) -> bool:
    """A lock error anywhere in the chain (ToolRunner re-raises CairnErrors `from None`)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if is_locked(exc) or (isinstance(exc, DatabaseError) and "locked" in str(exc)):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class CairnTools:
    """The MCP tools over one database. Not thread-safe: create and use it on one thread."""

    def __init__(self, db_path: str | os.PathLike, *, embedder=None, config_path: Path | None = None,
                 after_write: Callable[[Any, Any], None] | None = None):
        """`after_write(store, config)`: run after each tool call that can change notes (the command line
        passes core/vault/write_back.py's, which writes them to the bound folder; core/agent sits below
        core/vault, so it is handed in)."""
        from core.search.searcher import Searcher
        from core.graph.store import Store

        self.store = _retry_locked(lambda: Store(db_path))  # WAL, busy timeout, migrations (core.graph.db)
        self.searcher = _DegradingSearcher(Searcher(self.store, embedder))
        self.config = _Config(config_path)
        self.after_write = after_write
        try:
            keep = self.config.get().history.keep_versions
        except CairnError:
            keep = 0  # a config that does not load: every tool call says why; nothing is pruned meanwhile
        _retry_locked(lambda: history.prune(self.store.db, keep))  # the history's bound, once per start

    def close(self) -> None:
        self.store.close()

    def call(self, name: str, args: Any, client: str | None = None) -> tuple[Any, list[str]]:
        """Run one tool: (JSON-able result, notes for the client). Raises ToolError with one sentence.
        `client`: the name the client gave when it connected (clientInfo.name), for the history."""
        args, runner, refused, policy = self._runner(name, args, client)
        self.searcher.notes = []
        written: list[str] = []
        try:
            if name == "getContext":
                value = self._retry(lambda: self._context(runner, args.get("limit", 10), policy))
            else:
                value = self._retry(lambda: runner.run(name, args))
            if name == "searchContent":
                value = self._fill_pending_text(value)
            if name not in READ_ONLY:
                written = self._write_back()
        except ToolError:
            if refused:
                raise ToolError(f"Refused: {name} would {refused[0]}, and it needs confirmed_by_user: true, sent "
                                "only after the user approved this change. Nothing was changed.") from None
            raise
        return value, list(dict.fromkeys(self.searcher.notes + written))

    def _write_back(self) -> list[str]:
        """After a tool that can change notes: `after_write` (their files in the bound folder follow). The
        change is saved either way; a failure becomes a note for the client."""
        if self.after_write is None:
            return []
        try:
            self.after_write(self.store, self.config.get())
        except CairnError as exc:
            log.warning("writing back to the bound folder: %s", exc)
            return [f"Saved in Cairn, but not yet in the bound folder's files: {exc}"]
        return []

    def sql_job(self, args: Any, client: str | None = None) -> Callable[[threading.Event], tuple[Any, list[str]]]:
        """sqliteQuery checked here (arguments, config, privacy) and run by the function returned, on any
        thread: the query opens a read-only connection of its own (core.agent.readonly_sql), so the server
        runs it beside the other calls; setting the event it is given stops the query."""
        args, runner, _, _ = self._runner("sqliteQuery", args, client)

        def job(stop: threading.Event) -> tuple[Any, list[str]]:
            with stop_when(stop):
                return runner.run("sqliteQuery", args), []

        return job

    def _runner(self, name: str, args: Any, client: str | None):
        """(checked arguments, a ToolRunner for this one call, the changes refused for want of
        confirmed_by_user, the privacy policy), with the config read again."""
        if name not in TOOLS:
            raise ToolError(f"There is no tool {name!r}; the tools are: {', '.join(TOOLS)}.")
        args = check_arguments(name, args)
        try:
            cfg = self.config.get()
        except CairnError as exc:
            raise ToolError(str(exc)) from None
        confirmed = args.pop("confirmed_by_user", False) is True
        refused: list[str] = []

        def confirm(action: str, detail: dict) -> bool:
            if not confirmed:
                refused.append(action)
            return confirmed

        if name in CONFIRMABLE and not cfg.mcp.allow_edits:
            raise ToolError(f"{name} is turned off: changing existing notes and edges over MCP needs "
                            "`mcp.allow_edits = true` in Cairn's config, which only the user can set "
                            "(cairn config set mcp.allow_edits true). Nothing was changed.")
        policy = SendPolicy.for_mcp(cfg.privacy.never_send)
        # captureUrl: the client asks its user before an open-world tool runs (core/agent/egress.py)
        ctx = ToolContext(self.store, self.searcher, policy=policy, confirm=confirm, origin="mcp",
                          local_addresses=cfg.capture.local_addresses, actor=history.mcp_client(client),
                          egress=Egress.for_mcp())
        return args, ToolRunner(ctx, TOOLS), refused, policy

    def _retry(self, fn):
        """Run fn again when it met a locked database and wrote nothing (total_changes unchanged)."""
        for attempt in range(LOCK_ATTEMPTS):
            before = self.store.db.conn.total_changes
            try:
                return fn()
            except (ToolError, CairnError) as exc:
                if not _locked(exc):
                    raise
                if self.store.db.conn.total_changes != before or attempt == LOCK_ATTEMPTS - 1:
                    raise ToolError("The database stayed busy: another Cairn process held its write lock for too "
                                    "long. Try again in a moment.") from None
                log.warning("database locked; retrying (%d)", attempt + 1)
                time.sleep(0.25 * (attempt + 1))

    def _fill_pending_text(self, hits: list[dict]) -> list[dict]:
        """A hit on a node not indexed yet has no passage: show the start of its text instead."""
        empty = [h["node_id"] for h in hits if not h["text"]]
        if empty:
            nodes = {n["id"]: n for n in self.store.get_nodes(empty)}
            for h in hits:
                node = nodes.get(h["node_id"])
                if not h["text"] and node is not None:
                    text = node["source"]
                    h["text"] = text if len(text) <= PENDING_SNIPPET_CHARS else text[:PENDING_SNIPPET_CHARS] + "…"
                    h["chunk_status"] = node["chunk_status"]
        return hits

    def _context(self, runner: ToolRunner, limit: int, policy: SendPolicy) -> dict:
        counts = self.store.counts()
        return {
            "counts": {"nodes": counts["nodes"], "edges": counts["edges"], "pending": counts["pending"],
                       "index_errors": counts["errors"]},
            "recent": runner.run("queryNodes", {"sort": "updated", "limit": limit}),
            "hubs": runner.run("queryNodes", {"sort": "edges", "limit": limit}),
            "dimensions": [d for d in self.store.dimensions() if policy.allows_dimension(d["dimension"])][:50],
            "limits": {"results_per_call": MAX_LIMIT, "title_chars": MAX_TITLE,
                       "description_chars": MAX_DESCRIPTION, "source_chars": MAX_SOURCE_CHARS,
                       "source_chars_returned_per_node": SOURCE_CHARS_RETURNED},
            "note": "pending nodes are found by keyword search now and by meaning once Cairn has indexed them "
                    "(the app, or `cairn index`).",
        }


def _retry_locked(fn, attempts: int = LOCK_ATTEMPTS):
    for attempt in range(attempts):
        try:
            return fn()
        except CairnError as exc:
            if not _locked(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.25 * (attempt + 1))


# -- the server -----------------------------------------------------------------------------------
class _Worker:
    """One thread that owns the CairnTools (and so the SQLite connection) for the server's life."""

    def __init__(self):
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="cairn-mcp")
        self.tools: CairnTools | None = None
        self.sql_slots = None  # an anyio.CapacityLimiter, made on the event loop by the first sqliteQuery

    def open(self, db_path, **kwargs) -> None:
        def _open():
            self.tools = CairnTools(db_path, **kwargs)

        self.pool.submit(_open).result()

    async def call(self, name: str, args: Any, client: str | None = None):
        if name == "sqliteQuery":
            return await self._sql(args, client)
        return await asyncio.wrap_future(self.pool.submit(self.tools.call, name, args, client))

    async def _sql(self, args: Any, client: str | None):
        """sqliteQuery, checked on the worker and run on a thread of its own, so a slow query never holds
        up the next call. Its deadline (core.agent.readonly_sql) ends it; a call the client cancels, or
        leaves behind when it goes, is stopped at once."""
        import anyio

        job = await asyncio.wrap_future(self.pool.submit(self.tools.sql_job, args, client))
        if self.sql_slots is None:
            self.sql_slots = anyio.CapacityLimiter(SQL_THREADS)
        stop = threading.Event()
        try:
            return await anyio.to_thread.run_sync(job, stop, abandon_on_cancel=True, limiter=self.sql_slots)
        finally:
            stop.set()  # a no-op when the query is over; else (cancelled) it is interrupted now

    def close(self) -> None:
        if self.tools is not None:
            self.pool.submit(self.tools.close).result()
        self.pool.shutdown(wait=False, cancel_futures=True)


def _client_name(ctx) -> str | None:
    """The name the client gave in `initialize` (clientInfo.name, e.g. "claude-ai"), if it gave one: on
    protocol 2026-07-28 client info is optional (mcp.server.connection: "client info is optional")."""
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    info = getattr(params, "client_info", None)
    return getattr(info, "name", None) or None


def build_server(worker: _Worker):
    """The low-level SDK server: tools/list from tool_definitions(), tools/call through the worker."""
    import mcp.types as types
    from mcp.server.lowlevel import Server

    tools = [
        types.Tool(name=d["name"], description=d["description"], input_schema=d["input_schema"],
                   annotations=types.ToolAnnotations(read_only_hint=d["read_only"],
                                                     destructive_hint=False if d["read_only"] or d["name"] in ("createNode", "captureUrl") else None,
                                                     open_world_hint=d["name"] in OPEN_WORLD))
        for d in tool_definitions()
    ]

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    def error(text: str) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)

    async def call_tool(ctx, params) -> types.CallToolResult:
        try:
            value, notes = await worker.call(params.name, params.arguments, _client_name(ctx))
        except ToolError as exc:
            return error(str(exc))
        except CairnError as exc:
            return error(str(exc))
        except Exception as exc:  # a bug: the client gets a sentence, the log gets the traceback
            log.exception("tool %s failed", params.name)
            return error(f"Cairn hit an unexpected error in {params.name} ({type(exc).__name__}: {exc}); "
                         "nothing more was changed. The details are in the server's log (stderr).")
        content = [types.TextContent(text=result_text(value))]
        content += [types.TextContent(text=note) for note in notes]
        return types.CallToolResult(content=content)

    from importlib.metadata import PackageNotFoundError, version

    try:
        cairn_version = version("cairn")
    except PackageNotFoundError:
        cairn_version = "0+unknown"
    return Server(SERVER_NAME, version=cairn_version, title="Cairn", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


def serve(db_path: str | os.PathLike, *, config_path: Path | None = None,
          after_write: Callable[[Any, Any], None] | None = None) -> int:
    """Serve MCP on stdin/stdout until the client closes stdin. Raises CairnError if the database
    cannot be opened (before any protocol traffic)."""
    import anyio
    from mcp.server.stdio import stdio_server

    _log_to_stderr()
    worker = _Worker()
    try:
        worker.open(db_path, config_path=config_path, after_write=after_write)
        server = build_server(worker)
        log.info("cairn mcp serving %s", worker.tools.store.path)

        async def main() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(main)
    finally:
        worker.close()
    return 0


def _log_to_stderr() -> None:
    level = logging.DEBUG if os.environ.get("CAIRN_DEBUG") else logging.WARNING
    root = logging.getLogger()
    for handler in list(root.handlers):  # never stdout: it carries the protocol
        if getattr(handler, "stream", None) is sys.stdout:
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("cairn mcp: %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(level)


def client_config(db_path: str | os.PathLike) -> dict:
    """The `mcpServers` snippet for Claude Desktop (claude_desktop_config.json) or Claude Code (.mcp.json)."""
    db = str(Path(db_path).expanduser().resolve())
    command, prefix = _cairn_command()
    return {"mcpServers": {"cairn": {"command": command, "args": [*prefix, "mcp", "--db", db]}}}


def _cairn_command() -> tuple[str, list[str]]:
    """The absolute path of the `cairn` script running now, else the one beside this Python."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "cairn" and argv0.exists():
        return str(argv0.absolute()), []
    beside = Path(sys.executable).parent / "cairn"
    if beside.exists():
        return str(beside.absolute()), []
    import shutil

    found = shutil.which("cairn")
    if found:
        return str(Path(found).absolute()), []
    return str(Path(sys.executable).absolute()), ["-m", "cairn"]  # cairn/__main__.py, installed or in a checkout
