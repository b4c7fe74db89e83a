"""The built-in "Getting started" graph: a dozen nodes about Cairn itself, joined by explained edges,
so a new user has something real to search, open, link and chat about.

`load(store)` adds it in one transaction and returns the new node ids; it is idempotent: every node
carries metadata {"getting_started": true}, and if any such node exists nothing is added ([]).
"""

from __future__ import annotations

from core.graph import history
from core.graph.store import Store

MARK = "getting_started"
DIMENSION = "cairn-guide"

# key -> (title, description, dimensions, text). The key only names the node for the edges below.
NODES: dict[str, tuple[str, str, list[str], str]] = {
    "welcome": (
        "Welcome to Cairn",
        "Start here: what Cairn is and how this guide is laid out.",
        ["basics"],
        """# Welcome to Cairn

Cairn keeps what you know as a **graph**: notes (nodes) joined by edges that say, in a sentence, why
two things connect. Everything is indexed on your machine for search by words and by meaning, and a
chat pane can talk about your notes with an LLM, or offline with no model at all.

This guide is itself a small graph. Each note explains one idea and links to the ones it leans on:
open a node (enter), read its edges, follow them. Search with `/`, capture a thought with `ctrl+n`.

When you no longer need the guide, delete its nodes: they all have the dimension `cairn-guide`
(type `#cairn-guide` in the search box to list them).
""",
    ),
    "nodes": (
        "Nodes: one idea per note",
        "A node is a note: title, text, description, link, event date and dimensions.",
        ["basics"],
        """# Nodes

A node is anything worth remembering: an idea, a paper, a person, a project, a quote.

- **Title**: what the list shows. Left empty, it comes from the first line of the text.
- **Text** (the source): the long form, in markdown. It is split into chunks and embedded, so
  search can find a single passage inside a long note.
- **Description**, **link**, **event date** (`YYYY-MM-DD`) and **dimensions** (tags).

Capture one from anywhere with `ctrl+n` (save with `ctrl+s`), or from the shell with `cairn add`.
A new or edited node is marked *pending* until it has been indexed; that happens in the background.
Deleted nodes go to a trash you can restore from (`cairn trash`, `cairn restore ID`).
""",
    ),
    "edges": (
        "Edges: connections that say why",
        "An edge joins two nodes and carries an explanation: a sentence saying why they connect.",
        ["basics"],
        """# Edges

An edge goes from one node to another and carries an **explanation**, a plain sentence such as
"Luhmann invented the Zettelkasten method". The explanation is what makes the graph useful later:
you (and the chat) can see not just *that* two notes are related but *why*.

Each node's edges, in and out, are listed with their explanations in its Focus tab. From the shell:
`cairn link FROM TO --explanation "..."` and `cairn unlink EDGE`.

A model in the chat may propose edges, but creating or changing one always needs your confirmation.
""",
    ),
    "dimensions": (
        "Dimensions: tags that cut across the graph",
        "Dimensions are a node's tags (research, people, private …); filter and protect by them.",
        ["basics"],
        """# Dimensions

Dimensions are tags: `research`, `people`, `ai`, `private`. A node can have several. They let you

- **filter**: type `#research` in the Nodes search box (`#"two words"` for a dimension with a space;
  `#res` already means the most used dimension starting with "res"), or press `d` in the list to
  cycle through them;
- **protect**: dimensions listed in `privacy.never_send` never leave your machine.

From the shell: `cairn add -d research -d ai`, `cairn list -d research`, `cairn search -d research`.
""",
    ),
    "search": (
        "Search: words, meaning, and the syntax",
        "Hybrid search fuses full-text (BM25) and semantic (embedding) rankings; the query syntax.",
        ["search"],
        """# Search

The Nodes pane searches as you type. Results come from **hybrid** search: full-text ranking (BM25
over titles, descriptions and text) fused with **semantic** ranking (embeddings made on your machine),
so "who kept paper notes for decades" can find a note that never uses those words.

Syntax:

- `words` find notes with all the words (the last one may be unfinished);
- `"a phrase"` finds the words together; `word*` is a prefix (two letters at least);
- `-word` excludes; `#dimension` filters by a dimension.

Anything else is searched as plain text: `c++`, `a:b` or a URL never cause an error.

In the list: `enter` opens a node, `s` sorts by best match, recently updated or most connected.
From the shell: `cairn search QUERY [--mode hybrid|fts|vector] [--node ID]`.
""",
    ),
    "focus": (
        "Focus tabs: what you are working on",
        "Open nodes sit in Focus tabs; the active tab is the primary node the chat looks at first.",
        ["panes"],
        """# Focus tabs

Pressing `enter` on a node opens it in a **Focus tab** (or switches to its tab). A tab shows the node's
title, text, description, link and dimensions, which you can edit, and its edges in and out with
their explanations.

The tabs are also how you tell the chat what you are working on: the **active tab is the primary
node**, the other open tabs are "also open", and all of them are sent with your next chat message.
Switching tabs changes only that part of the request, so the cached part stays cached.
""",
    ),
    "chat": (
        "The chat pane",
        "Ask questions about your notes; replies stream in and cite the notes they used.",
        ["chat"],
        """# The chat

`ctrl+l` jumps to the chat. Ask anything; the reply streams in as markdown and cites what it used:
`[1]`, `[2]` for passages retrieved for your message, `[NODE:id]` for hubs and focused nodes.
A citation opens the node it points to. Each reply shows its token usage and cache hits.

The chat can use tools over your graph (search, read nodes, follow edges). It may create notes on
its own (you see them, and can undo); editing a node or any edge change waits for your yes.
""",
    ),
    "context": (
        "What the chat sees: its context",
        "Each request: a cached prefix (instructions, hubs, history) and a volatile suffix (focus, passages, date).",
        ["chat"],
        """# The context of a chat message

Every request is assembled in a fixed order so that everything stable is a byte-identical
**prefix** the provider can cache, and everything that changes sits at the very end:

1. tools and instructions, the skill catalog, your always-on core notes;
2. **background**: the top-10 hub nodes (snapshotted when the chat starts);
3. the history, exactly as it was sent;
4. then the volatile **suffix**: the nodes open in Focus tabs, the passages retrieved for this
   message (numbered `[N]`), and the current date and time.

`F2` toggles the **Context viewer**: the live blocks of the next request, which are cached, and
token estimates. `cairn context "message"` prints the same from the shell, with no key needed.
""",
    ),
    "hubs": (
        "Hubs: your most connected nodes",
        "A hub is a node with many edges; the top 10 give the chat a standing picture of your graph.",
        ["chat"],
        """# Hubs

A hub is a node with many edges (counted in both directions). The ten most connected nodes form
the chat's **background context**: a standing picture of what your graph is about, sent in the
cached prefix so it costs little. Memory nodes written by the model never count as hubs.

See yours with `cairn hubs`, or sort the Nodes list by *most connected* (`s` in the list).
Linking notes well is how you shape what the chat knows by default.
""",
    ),
    "providers": (
        "Providers and offline mode",
        "Claude, OpenAI, any OpenAI-compatible local server, or offline with no model and no key.",
        ["chat", "settings"],
        """# Providers and offline mode

The chat talks to **Anthropic** (Claude), **OpenAI**, or any **OpenAI-compatible server** (Ollama,
llama.cpp, LM Studio) through its base URL. With no provider configured it runs **offline**: it
answers with the most relevant notes and their citations, and the Context viewer still shows
exactly what would have been sent.

Settings live in `config.toml` (`cairn config` shows where and what):

```toml
[chat]
provider = "anthropic"    # offline | anthropic | openai
base_url = ""             # e.g. http://127.0.0.1:11434/v1 for Ollama
```

Keys come from `ANTHROPIC_API_KEY` / `OPENAI_API_KEY` (they win) or the config file, which Cairn
creates readable only by you. Keys are never stored in the database or shown on screen.
""",
    ),
    "privacy": (
        "Privacy: never_send",
        "Nodes with a dimension listed in privacy.never_send never leave your machine, by any path.",
        ["privacy", "settings"],
        """# Privacy

Your notes live in one SQLite file on your machine, and embeddings are computed locally.
What goes to a remote model is only what a chat request carries.

To keep some notes home no matter what, give them a dimension and list it in the config:

```toml
[privacy]
never_send = ["private", "health"]
```

Such nodes are left out of every request: not in the hubs, not in Focus, not in retrieved
passages, not through any tool, and never sent to a remote embedder. Only providers on
loopback (127.0.0.1) count as local. Cairn records which nodes left the machine in each request.
""",
    ),
    "keys": (
        "Keys",
        "The keyboard map: every pane works without a mouse, at 80×24 and over SSH.",
        ["basics"],
        """# Keys

Everywhere:

| key | does |
|---|---|
| `/` | search nodes |
| `ctrl+n` | quick capture (`ctrl+s` saves, `esc` closes) |
| `ctrl+l` | chat |
| `F2` | chat ⇄ Context viewer |
| `F3` | next pane (a narrow terminal shows one pane at a time) |
| `F1` | the keys of the pane you are in |
| `ctrl+p` | command palette |
| `ctrl+q` | quit |

In the Nodes list: `enter` open · `s` sort · `d` next dimension filter · `/` back to the search box.
In the search box: `down` into the list · `enter` open the top hit · `esc` clear.

Keys can be remapped in `config.toml` under `[keymap]`, by binding id (F1 shows the ids), e.g.
`quick_capture = "ctrl+k"`.
""",
    ),
    "cli": (
        "The command line",
        "The same graph from the shell: add, show, edit, link, search, ask, backup, with --json.",
        ["tools"],
        """# The command line

`cairn` alone opens this app; with a verb it works from the shell, on the same database:

- `cairn add "text" -d dim` (or `echo text | cairn add -`), `cairn show ID`, `cairn edit ID`
  (no options: edit in `$EDITOR`), `cairn rm ID`, `cairn trash`, `cairn restore ID`;
- `cairn link FROM TO --explanation "..."`, `cairn unlink EDGE`;
- `cairn search QUERY`, `cairn list`, `cairn hubs`;
- `cairn ask "question"`, `cairn context "question"`, `cairn chats`;
- `cairn index`, `cairn doctor`, `cairn backup`, `cairn config`.

Read verbs take `--json` for scripts. Notes added from the shell appear in the app on their own.
""",
    ),
    "doctor": (
        "cairn doctor: checking the index",
        "Checks the database and every index surface; --repair fixes what it finds.",
        ["tools"],
        """# cairn doctor

`cairn doctor` checks that the database and its indexes agree: SQLite's integrity check, chunks or
vectors whose node is gone, nodes missing their vectors or embedded from older text, the full-text
index, and nodes stuck as pending or failed.

It only reports. `cairn doctor --repair` fixes what it found (and re-indexes what needs it): a
repair is something you run, never something that happens silently. Before anything risky,
`cairn backup` makes a consistent copy of the database, even while the app is running.
""",
    ),
}

# (from, to, explanation)
EDGES: list[tuple[str, str, str]] = [
    ("welcome", "nodes", "Nodes are what a Cairn graph is made of: the first thing to learn"),
    ("welcome", "keys", "Cairn is driven from the keyboard; these keys get you around"),
    ("edges", "nodes", "An edge joins two nodes and says in a sentence why they connect"),
    ("dimensions", "nodes", "Dimensions are tags on nodes, for filtering and for privacy"),
    ("search", "nodes", "Search finds nodes by their words and by their meaning"),
    ("search", "dimensions", "Typing #dimension in the search box filters the results by a dimension"),
    ("focus", "nodes", "Enter on a node in the Nodes pane opens it in a Focus tab"),
    ("focus", "edges", "A Focus tab lists the node's edges in and out with their explanations"),
    ("chat", "context", "Every chat message is sent with a context assembled from the graph"),
    ("context", "focus", "The nodes open in Focus tabs ride in the suffix of the next message"),
    ("context", "hubs", "The top-10 hubs form the cached background context"),
    ("hubs", "edges", "A hub is ranked by its number of edges"),
    ("chat", "providers", "The chat answers through a provider, or offline without one"),
    ("privacy", "dimensions", "privacy.never_send lists dimensions whose nodes never leave the machine"),
    ("privacy", "providers", "never_send holds for every remote provider and embedder"),
    ("cli", "nodes", "cairn add, show, edit and link work on the same nodes from the shell"),
    ("doctor", "cli", "cairn doctor is one of the command-line verbs"),
    ("doctor", "search", "doctor checks what search relies on: chunks, vectors and the full-text index"),
    ("keys", "search", "/ jumps to the search box from anywhere"),
]


def is_loaded(store: Store) -> bool:
    row = store.db.execute(
        f"SELECT 1 FROM nodes WHERE json_extract(metadata, '$.{MARK}') = 1 LIMIT 1"
    ).fetchone()
    return row is not None


def load(store: Store) -> list[int]:
    """Add the guide (nodes and edges, one transaction); the new ids, welcome first. [] if present."""
    with history.acting_as(history.GETTING_STARTED), store.db.transaction():
        if is_loaded(store):
            return []
        ids: dict[str, int] = {}
        # Added in reverse so that, sorted by recently updated, the list reads welcome first.
        for key in reversed(list(NODES)):
            title, description, dims, text = NODES[key]
            node = store.add_node(title, text, description=description, dimensions=[*dims, DIMENSION],
                                  metadata={MARK: True})
            ids[key] = node["id"]
        for a, b, why in EDGES:
            store.add_edge(ids[a], ids[b], why, source="getting_started")
    return [ids[key] for key in NODES]
