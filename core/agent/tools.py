"""The tools the model can call (and the MCP server and CLI share): schemas plus implementations.

Schemas are provider-neutral `{name, description, input_schema}`; providers translate them. Every
tool returns JSON-able data or raises ToolError, whose message goes back to the model as the result.
Writes other than createNode and captureUrl need the user's confirmation (a callback the chat gives);
captureUrl fetches only what the egress rule allows (core/agent/egress.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable

from core.agent.egress import Egress
from core.errors import CairnError
from core.graph import history, provenance
from core.graph.privacy import SendPolicy
from core.graph.store import Store

MAX_LIMIT = 50
MAX_SOURCE_CHARS = 20_000  # per node returned to the model
MAX_SQL_ROWS = 200
# What an edge's `source` says of who wrote its explanation, for the fence (core.graph.provenance);
# the sources not named here (user, getting_started, journal) are the user's or Cairn's own.
EDGE_ORIGINS = {"model": provenance.MODEL, "mcp": provenance.MCP, "vault": provenance.VAULT,
                "raha": provenance.RAHA}
SQL_ROWS = "raw database rows (any note's text)"


class ToolError(CairnError):
    """A tool failed; the message is returned to the model as the tool result."""


def _obj(properties: dict, required: list[str] | None = None) -> dict:
    return {"type": "object", "properties": properties, "required": required or [], "additionalProperties": False}


_INT_LIST = {"type": "array", "items": {"type": "integer"}}
_STR_LIST = {"type": "array", "items": {"type": "string"}}

SCHEMAS: dict[str, dict] = {
    "queryNodes": {
        "description": "List nodes, newest or most connected first, optionally by dimension or a title/text filter.",
        "input_schema": _obj({
            "filter": {"type": "string", "description": "keywords to match in titles and text"},
            "dimension": {"type": "string"},
            "sort": {"type": "string", "enum": ["updated", "edges"]},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
        }),
    },
    "getNodesById": {
        "description": "Fetch whole nodes (title, description, source text, dimensions, link) by id.",
        "input_schema": _obj({"ids": _INT_LIST}, ["ids"]),
    },
    "searchContent": {
        "description": "Hybrid keyword + meaning search over note text; returns passages with node ids. "
                       "Give node_id to search inside one node.",
        "input_schema": _obj({
            "query": {"type": "string"},
            "node_id": {"type": "integer"},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
        }, ["query"]),
    },
    "queryEdges": {
        "description": "The edges of a node (in, out or both) with their explanations.",
        "input_schema": _obj({"node_id": {"type": "integer"},
                              "direction": {"type": "string", "enum": ["in", "out", "both"]}}, ["node_id"]),
    },
    "createNode": {
        "description": "Create a node (a note). Shown to the user as an action they can undo.",
        "input_schema": _obj({
            "title": {"type": "string"}, "source": {"type": "string"}, "description": {"type": "string"},
            "link": {"type": "string"}, "dimensions": _STR_LIST, "event_date": {"type": "string"},
        }, ["title"]),
    },
    "updateNode": {
        "description": "Change a node's fields. Needs the user's confirmation.",
        "input_schema": _obj({
            "id": {"type": "integer"}, "title": {"type": "string"}, "source": {"type": "string"},
            "description": {"type": "string"}, "link": {"type": "string"}, "dimensions": _STR_LIST,
            "event_date": {"type": "string"},
        }, ["id"]),
    },
    "createEdge": {
        "description": "Join two nodes with an explained edge (a sentence saying why). Needs the user's confirmation.",
        "input_schema": _obj({"from_id": {"type": "integer"}, "to_id": {"type": "integer"},
                              "explanation": {"type": "string"}}, ["from_id", "to_id", "explanation"]),
    },
    "updateEdge": {
        "description": "Change an edge's explanation. Needs the user's confirmation.",
        "input_schema": _obj({"id": {"type": "integer"}, "explanation": {"type": "string"}}, ["id", "explanation"]),
    },
    "sqliteQuery": {
        "description": "Run one read-only SQL SELECT on the database (tables: nodes, edges, chunks). "
                       f"At most {MAX_SQL_ROWS} rows and 1 MB; stopped after 5 s.",
        "input_schema": _obj({"sql": {"type": "string"}}, ["sql"]),
    },
    "delegate": {
        "description": "Hand a self-contained task to another agent (worker or planner) and get its answer.",
        "input_schema": _obj({"agent": {"type": "string"}, "task": {"type": "string"}}, ["agent", "task"]),
    },
    # Issue 8 calls it activate_skill(name); tool names are camelCase (DESIGN.md, "Records").
    "activateSkill": {
        "description": "Load a skill's full instructions (by its name in the Skills list) into the "
                       "conversation, then follow them.",
        "input_schema": _obj({"name": {"type": "string"}}, ["name"]),
    },
    "captureUrl": {
        "description": "Fetch a web page the user named and save its main text as a new node (title, author, "
                       "date and site from the page; the URL as its link). An address captured before is not "
                       "saved twice: the result names that node (again: true captures it anew).",
        "input_schema": _obj({
            "url": {"type": "string", "description": "the page's http(s) address"},
            "dimensions": _STR_LIST,
            "again": {"type": "boolean", "description": "capture even if a node already links to this address"},
        }, ["url"]),
    },
}

def schemas(names: tuple[str, ...]) -> list[dict]:
    """Tool schemas in a fixed order (the order is part of the cached prefix)."""
    return [{"name": n, **SCHEMAS[n]} for n in names]


def _compact(node: dict) -> dict:
    return {k: node[k] for k in ("id", "title", "description", "dimensions", "link", "event_date", "updated_at")}


@dataclass
class ToolContext:
    store: Store
    searcher: Any
    policy: SendPolicy = field(default_factory=SendPolicy)  # what may be sent to the model or MCP client
    # The agent's tool_scope (core/agent/profiles.py): dimensions the node-reading tools (queryNodes,
    # getNodesById, searchContent, queryEdges) may reach; empty: all. Separate from read_scope.
    tool_scope: tuple[str, ...] = ()
    confirm: Callable[[str, dict], bool] | None = None  # asks the user; None: refuse
    delegate: Callable[[str, str], str] | None = None
    activate_skill: Callable[[str], str] | None = None  # the chat loads a skill and records it
    created: list[int] = field(default_factory=list)  # node ids created this turn (undoable)
    touched: set[int] = field(default_factory=set)  # node ids whose content was sent to the model
    read: set[int] = field(default_factory=set)  # nodes getNodesById / searchContent returned (memory use, core.graph.memory)
    origin: str = "model"  # who writes: a created node's metadata.created_via, an edge's source ("mcp" there)
    # Who the history records for the writes of these tools (core.graph.history): "the model in chat 12",
    # "MCP client Claude Desktop"; empty: whoever the process writes as.
    actor: str = ""
    local_addresses: bool = False  # captureUrl may fetch from this machine and its network ([capture])
    # Whether captureUrl may fetch an address (core/agent/egress.py); the default asks nobody: it fetches
    # nothing the user did not write, and with no user text, nothing.
    egress: Egress = field(default_factory=Egress)
    # The never_send dimensions of the notes the model has seen this turn (core/chat/conversation.py):
    # a note the model writes inherits them, so their text cannot leave through a copy.
    private_seen: Callable[[], list[str]] = field(default=lambda: [])
    # Where the text of the last call's result came from (core.graph.provenance origins, or words such as
    # SQL_ROWS): a caller fences a result holding any that is not the user's (core/chat/fence.py).
    origins: set[str] = field(default_factory=set)


class ToolRunner:
    def __init__(self, ctx: ToolContext, allowed: tuple[str, ...]):
        self.ctx = ctx
        self.allowed = allowed

    def run(self, name: str, args: Any) -> Any:
        if name not in self.allowed:
            raise ToolError(f"The tool {name!r} is not available to this agent.")
        if not isinstance(args, dict):
            raise ToolError("Tool input must be a JSON object.")
        method = getattr(self, "_" + name, None)
        if method is None:
            raise ToolError(f"Unknown tool {name!r}.")
        self.ctx.origins = set()
        try:
            if self.ctx.actor:
                with history.acting_as(self.ctx.actor):
                    return method(**args)
            return method(**args)
        except ToolError:
            raise
        except CairnError as exc:
            raise ToolError(str(exc)) from None
        except (TypeError, ValueError, OverflowError) as exc:
            # The model's arguments have the wrong names or types ("ids": ["one"], "limit": "lots",
            # an id too large for SQLite): tell the model, never end the user's turn with a traceback.
            raise ToolError(f"Bad arguments for {name}: {exc}.") from None

    # -- privacy ---------------------------------------------------------------------------------
    def _reachable(self, node: dict) -> bool:
        """Not private to this provider and inside the agent's tool scope."""
        if not self.ctx.policy.allows(node):
            return False
        scope = {d.lower() for d in self.ctx.tool_scope}
        return not scope or bool({d.lower() for d in node.get("dimensions") or ()} & scope)

    def _sent(self, nodes: list[dict]) -> list[dict]:
        out = [n for n in nodes if self._reachable(n)]
        self.ctx.touched.update(n["id"] for n in out)
        self.ctx.origins.update(self.ctx.store.origins(n["id"] for n in out).values())
        return out

    # -- reads -----------------------------------------------------------------------------------
    def _queryNodes(self, filter: str = "", dimension: str | None = None, sort: str = "updated", limit: int = 20):
        limit = max(1, min(int(limit), MAX_LIMIT))
        if filter.strip():
            nodes = self.ctx.searcher.search(filter, mode="fts", limit=limit, dimension=dimension)
        elif sort == "edges":
            nodes = self.ctx.store.hubs(limit)
        else:
            nodes = self.ctx.store.recent(limit, dimension=dimension)
        return [_compact(n) | ({"edge_count": n["edge_count"]} if "edge_count" in n else {}) for n in self._sent(nodes)]

    def _getNodesById(self, ids: list[int]):
        if not isinstance(ids, list) or not ids:
            raise ToolError("ids must be a non-empty list of node ids.")
        nodes = self._sent(self.ctx.store.get_nodes(ids[:MAX_LIMIT]))
        self.ctx.read.update(n["id"] for n in nodes)
        out = []
        for n in nodes:
            n = dict(n)
            if len(n["source"]) > MAX_SOURCE_CHARS:
                n["source"] = n["source"][:MAX_SOURCE_CHARS] + f"\n[… truncated; {len(n['source']):,} characters in all]"
            out.append(n)
        missing = sorted(set(ids[:MAX_LIMIT]) - {n["id"] for n in out})
        return {"nodes": out, "not_found_or_private": missing} if missing else {"nodes": out}

    def _searchContent(self, query: str, node_id: int | None = None, limit: int = 8):
        limit = max(1, min(int(limit), MAX_LIMIT))
        hits = self._sent(self.ctx.searcher.search(query, mode="hybrid", limit=limit, node_id=node_id))
        self.ctx.read.update(h["id"] for h in hits)
        return [{"node_id": h["id"], "title": h["title"], "score": h["score"],
                 "heading_path": h["chunk"]["heading_path"] if h["chunk"] else [],
                 "text": h["chunk"]["text"] if h["chunk"] else h["description"]} for h in hits]

    def _queryEdges(self, node_id: int, direction: str = "both"):
        node = self.ctx.store.get_node(node_id)
        if not self._reachable(node):
            raise ToolError(f"There is no node {node_id}.")
        edges = self.ctx.store.edges(node_id, direction)
        hidden = {n["id"] for n in self.ctx.store.get_nodes(
            {e["from_node_id"] for e in edges} | {e["to_node_id"] for e in edges}) if not self._reachable(n)}
        out = [e for e in edges if e["from_node_id"] not in hidden and e["to_node_id"] not in hidden]
        self.ctx.origins.update(EDGE_ORIGINS.get(e.get("source"), provenance.USER) for e in out)
        return out

    def _sqliteQuery(self, sql: str):
        from core.agent.readonly_sql import run_readonly

        if self.ctx.policy.restricts:
            raise ToolError("sqliteQuery is off while privacy.never_send hides dimensions from this provider "
                            "(raw SQL could read hidden nodes); use queryNodes or searchContent.")
        if self.ctx.tool_scope:
            raise ToolError(f"sqliteQuery is off for this agent: its tools reach only {', '.join(self.ctx.tool_scope)} "
                            "(raw SQL could read the rest); use queryNodes or searchContent.")
        self.ctx.origins.add(SQL_ROWS)
        return run_readonly(self.ctx.store.path, sql, MAX_SQL_ROWS)

    # -- writes ----------------------------------------------------------------------------------
    def _createNode(self, title: str, source: str = "", description: str = "", link: str | None = None,
                    dimensions: list[str] | None = None, event_date: str | None = None):
        if not isinstance(dimensions, (list, type(None))):
            raise ToolError("dimensions must be a list of dimension names (strings).")
        dimensions = [*(dimensions or []), *self.ctx.private_seen()]
        node = self.ctx.store.add_node(title, source, description=description, link=link, dimensions=dimensions,
                                       event_date=event_date, metadata={"created_via": self.ctx.origin})
        self.ctx.created.append(node["id"])
        return {"created": _compact(node)}

    def _confirmed(self, action: str, detail: dict) -> None:
        if self.ctx.confirm is None or not self.ctx.confirm(action, detail):
            raise ToolError(f"The user did not confirm: {action}. Nothing was changed.")

    def _updateNode(self, id: int, **changes):
        node = self.ctx.store.get_node(id)
        if not self.ctx.policy.allows(node):
            raise ToolError(f"There is no node {id}.")
        private = self.ctx.private_seen()
        if private and any(k in changes for k in ("title", "description", "source", "link")):
            # what the model writes after seeing a never_send note may hold its text: it stays as private
            have = changes.get("dimensions", node["dimensions"])
            changes["dimensions"] = [*have, *(d for d in private if d.lower() not in {h.lower() for h in have})]
        self._confirmed(f"update node {id} ({node['title']!r})", changes)
        return {"updated": _compact(self.ctx.store.update_node(id, **changes))}

    def _createEdge(self, from_id: int, to_id: int, explanation: str):
        self._confirmed(f"link {from_id} → {to_id}", {"explanation": explanation})
        return {"created": self.ctx.store.add_edge(from_id, to_id, explanation, source=self.ctx.origin)}

    def _updateEdge(self, id: int, explanation: str):
        self._confirmed(f"change edge {id}", {"explanation": explanation})
        return {"updated": self.ctx.store.update_edge(id, explanation=explanation)}

    def _delegate(self, agent: str, task: str):
        if self.ctx.delegate is None:
            raise ToolError("Delegation is not available here.")
        answer = self.ctx.delegate(agent, task)
        self.ctx.origins.add(provenance.MODEL)  # another model's words, which may quote what it read
        return {"answer": answer}

    def _captureUrl(self, url: str, dimensions: list[str] | None = None, again: bool = False):
        from core.capture.web import capture  # the fetch and extraction (trafilatura) load on first use

        if not isinstance(url, str):
            raise ToolError("url must be a web address (a string).")
        if dimensions is not None and (not isinstance(dimensions, list) or not all(isinstance(d, str) for d in dimensions)):
            raise ToolError("dimensions must be a list of dimension names (strings).")
        if again is not True:  # a page captured before is not fetched again: nothing to ask about
            known = _captured_before(self.ctx.store, url)
            if known is not None:
                return self._already_captured(known)
        self.ctx.egress.check(url)  # the egress rule: nothing is fetched unless it allows (core/agent/egress.py)
        self.ctx.origins.add(provenance.WEB)
        result = capture(self.ctx.store, url, again=again is True, dimensions=dimensions, origin=self.ctx.origin,
                         public_only=not self.ctx.local_addresses)
        node = result.node
        if result.existing:  # where the redirects ended: an address captured before
            return self._already_captured(node)
        self.ctx.created.append(node["id"])
        capture = result.capture
        return {"created": _compact(node) | {"chars": len(node["source"])},
                "capture": {k: capture.get(k) for k in ("final_url", "author", "site", "date", "fetched_at")}}

    def _already_captured(self, node: dict) -> dict:
        if not self._reachable(node):  # a node this agent may not see: its id, nothing of its content
            return {"already_captured": {"id": node["id"]},
                    "note": "This address was captured before; pass again: true to capture it anew."}
        self._sent([node])  # its title and description go to the model: counted as sent, and fenced
        self.ctx.read.add(node["id"])
        return {"already_captured": _compact(node),
                "note": f"This address was captured before as node {node['id']}; nothing new was saved "
                        "(pass again: true to capture it anew)."}

    def _activateSkill(self, name: str):
        if self.ctx.activate_skill is None:
            raise ToolError("Skills are not available here.")
        if not isinstance(name, str):
            raise ToolError("name must be a skill name (a string) from the Skills list.")
        return self.ctx.activate_skill(name)


def _captured_before(store: Store, url: str) -> dict | None:
    from core.capture.web import CaptureError, captured_before, normalise_url

    try:
        return captured_before(store, normalise_url(url))
    except CaptureError:
        return None  # not an address: capture() says why


def result_text(value: Any) -> str:
    """A tool result as the model reads it: JSON, except text (a skill's markdown) goes as it is."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)
