"""Where a node's text came from (`nodes.origin`): typed by the user, or brought in from elsewhere.

Text the user did not write can carry instructions meant for the model (a prompt injection in a
captured page, a PDF, an imported note, a note an MCP client created). The context engine and the
chat fence such text as quoted material (core/chat/fence.py); this module is the one place that says
what each origin is called and which are the user's own.

The origin is set by the store on every write of a node's text: a capture or an import names its
own ("web", "file", "vault", "raha"); otherwise it follows who writes (core/graph/history.py's actor):
the model, an MCP client, a distil, Cairn's guide, else the user. A node's text written by someone
other than the user takes that writer's origin; the user editing a node keeps its origin (the text
they edited is still mostly what came in), so a captured page never becomes "typed by you" by a fix
of a typo.
"""

from __future__ import annotations

from core.graph import history

USER = "user"
GUIDE = "cairn"
WEB = "web"
FILE = "file"
VAULT = "vault"
RAHA = "raha"
MCP = "mcp"
MODEL = "model"

# What each origin is called where the model or the user reads it ("text from a captured web page").
LABELS: dict[str, str] = {
    USER: "typed by the user",
    GUIDE: "Cairn's built-in guide",
    WEB: "a captured web page",
    FILE: "a captured document (PDF, text or HTML file)",
    VAULT: "a markdown vault import",
    RAHA: "an RA-H OS import",
    MCP: "an MCP client program",
    MODEL: "a language model",
}
ORIGINS = tuple(LABELS)
TRUSTED = frozenset({USER, GUIDE})


def trusted(origin: str | None) -> bool:
    """Whether text of this origin is the user's own (or Cairn's): not fenced as quoted material."""
    return (origin or USER) in TRUSTED


def label(origin: str | None) -> str:
    return LABELS.get(origin or USER, origin or USER)


def of_actor(actor: str | None = None) -> str:
    """The origin of text written by `actor` (default: whoever writes on this thread now)."""
    actor = actor if actor is not None else history.current_actor()
    if actor.startswith("the model"):
        return MODEL
    if actor.startswith(("MCP client", "an MCP client")):
        return MCP
    if actor.startswith("distil of"):
        return MODEL
    if actor.startswith("import of"):
        return VAULT
    if actor == history.GETTING_STARTED:
        return GUIDE
    return USER


def after_write(current: str | None, writer: str) -> str:
    """A node's origin once `writer` has written its text: an outsider's text makes it theirs; the
    user's edit leaves an outsider's origin in place."""
    if writer not in ORIGINS:
        raise ValueError(f"unknown origin {writer!r}")
    if current is None:  # a new node: its text is its writer's
        return writer
    return writer if not trusted(writer) else current


def least_trusted(*origins: str | None) -> str:
    """Of several texts joined into one (a merge), the origin to keep: any outsider's wins."""
    for o in origins:
        if not trusted(o):
            return o
    return (origins[0] if origins else None) or USER


def from_metadata(metadata: dict, type: str = "note") -> str:
    """The origin a node's metadata implies (a node trashed before origins were kept, restored): the
    same rules as the migration's backfill, without the history."""
    capture = metadata.get("capture")
    if isinstance(capture, dict):
        return WEB if capture.get("url") else FILE
    if "vault" in metadata:
        return VAULT
    if "raha" in metadata:
        return RAHA
    via = metadata.get("created_via")
    if via == "mcp":
        return MCP
    if type == "memory" or via in ("model", "distil", "chat export"):
        return MODEL
    return USER


# The migration's backfill for nodes written before origins were kept: from what their metadata says
# of how they came in, and from who last wrote their text (core/graph/migrations.py, 7).
BACKFILL_SQL = [
    "UPDATE nodes SET origin = 'web' WHERE json_extract(metadata, '$.capture.url') IS NOT NULL",
    "UPDATE nodes SET origin = 'file' WHERE origin = 'user' AND json_type(metadata, '$.capture') IS NOT NULL",
    "UPDATE nodes SET origin = 'vault' WHERE origin = 'user' AND json_type(metadata, '$.vault') IS NOT NULL",
    "UPDATE nodes SET origin = 'raha' WHERE origin = 'user' AND json_type(metadata, '$.raha') IS NOT NULL",
    "UPDATE nodes SET origin = 'mcp' WHERE origin = 'user' AND json_extract(metadata, '$.created_via') = 'mcp'",
    "UPDATE nodes SET origin = 'model' WHERE origin = 'user' AND (type = 'memory'"
    " OR json_extract(metadata, '$.created_via') IN ('model', 'distil', 'chat export'))",
    "UPDATE nodes SET origin = 'cairn' WHERE origin = 'user' AND EXISTS (SELECT 1 FROM history h"
    " WHERE h.node_id = nodes.id AND h.action = 'create' AND h.edge_id IS NULL AND h.actor = 'Getting started')",
    # Text an outsider wrote into a node the user made: the model or an MCP client through a tool.
    "UPDATE nodes SET origin = 'model' WHERE origin = 'user' AND EXISTS (SELECT 1 FROM history h"
    " WHERE h.node_id = nodes.id AND h.edge_id IS NULL AND h.actor LIKE 'the model%'"
    " AND (json_type(h.after, '$.source') IS NOT NULL OR json_type(h.after, '$.title') IS NOT NULL"
    "  OR json_type(h.after, '$.description') IS NOT NULL OR h.action = 'create'))",
    "UPDATE nodes SET origin = 'mcp' WHERE origin = 'user' AND EXISTS (SELECT 1 FROM history h"
    " WHERE h.node_id = nodes.id AND h.edge_id IS NULL AND (h.actor LIKE 'MCP client%' OR h.actor LIKE 'an MCP client%')"
    " AND (json_type(h.after, '$.source') IS NOT NULL OR json_type(h.after, '$.title') IS NOT NULL"
    "  OR json_type(h.after, '$.description') IS NOT NULL OR h.action = 'create'))",
]
