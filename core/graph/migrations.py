"""Numbered schema migrations; `PRAGMA user_version` holds the number applied. Append, never edit."""

from __future__ import annotations

from core.graph.provenance import BACKFILL_SQL

# The FTS tokenizer: Porter stemming over unicode61 (diacritics folded). prefix='2 3' keeps short
# prefix queries (`gr*`) off the slow path of a full term scan.
FTS_OPTIONS = "tokenize='porter unicode61 remove_diacritics 2', prefix='2 3'"
# Dimension of the default embedder (all-MiniLM-L6-v2). A different embedder recreates the vec tables.
DEFAULT_DIMENSIONS = 384


def vec_tables(dimensions: int) -> list[str]:
    return [
        f"CREATE VIRTUAL TABLE vec_nodes USING vec0(embedding float[{dimensions}] distance_metric=cosine)",
        # node_id is a vec0 metadata column: a KNN query may filter on it exactly, inside the scan.
        f"CREATE VIRTUAL TABLE vec_chunks USING vec0(node_id integer, embedding float[{dimensions}] distance_metric=cosine)",
    ]


_V1 = [
    """CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """INSERT INTO meta(key, value) VALUES ('vec_generation', '0')""",
    """CREATE TABLE nodes (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        title         TEXT NOT NULL,
        description   TEXT NOT NULL DEFAULT '',
        source        TEXT NOT NULL DEFAULT '',
        link          TEXT,
        event_date    TEXT,
        type          TEXT NOT NULL DEFAULT 'note',
        metadata      TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
        chunk_status  TEXT NOT NULL DEFAULT 'pending' CHECK (chunk_status IN ('pending', 'indexed', 'error')),
        content_hash  TEXT,
        index_error   TEXT,
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL
    )""",
    "CREATE INDEX nodes_updated ON nodes(updated_at DESC, id DESC)",
    "CREATE INDEX nodes_status ON nodes(chunk_status) WHERE chunk_status != 'indexed'",
    "CREATE INDEX nodes_type ON nodes(type)",
    # Derived from metadata.dimensions by triggers, so filtering by dimension uses an index.
    """CREATE TABLE node_dimensions (
        dimension TEXT NOT NULL COLLATE NOCASE,
        node_id   INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
        PRIMARY KEY (dimension, node_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX node_dimensions_node ON node_dimensions(node_id)",
    """CREATE TRIGGER nodes_dimensions_ai AFTER INSERT ON nodes BEGIN
        INSERT OR IGNORE INTO node_dimensions(dimension, node_id)
            SELECT value, new.id FROM json_each(new.metadata, '$.dimensions') WHERE type = 'text';
    END""",
    """CREATE TRIGGER nodes_dimensions_au AFTER UPDATE OF metadata ON nodes BEGIN
        DELETE FROM node_dimensions WHERE node_id = new.id;
        INSERT OR IGNORE INTO node_dimensions(dimension, node_id)
            SELECT value, new.id FROM json_each(new.metadata, '$.dimensions') WHERE type = 'text';
    END""",
    """CREATE TABLE edges (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        from_node_id  INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
        to_node_id    INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
        explanation   TEXT NOT NULL DEFAULT '',
        context       TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(context)),
        source        TEXT NOT NULL DEFAULT 'user',
        created_at    TEXT NOT NULL,
        CHECK (from_node_id != to_node_id),
        UNIQUE (from_node_id, to_node_id)
    )""",
    "CREATE INDEX edges_to ON edges(to_node_id)",
    """CREATE TABLE chunks (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        node_id         INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
        chunk_idx       INTEGER NOT NULL,
        text            TEXT NOT NULL,
        start_char      INTEGER NOT NULL,
        end_char        INTEGER NOT NULL,
        heading_path    TEXT NOT NULL DEFAULT '[]',
        content_hash    TEXT NOT NULL,
        embedding_type  TEXT NOT NULL,
        created_at      TEXT NOT NULL,
        UNIQUE (node_id, chunk_idx)
    )""",
    f"CREATE VIRTUAL TABLE nodes_fts USING fts5(title, description, source, content='nodes', content_rowid='id', {FTS_OPTIONS})",
    """CREATE TRIGGER nodes_fts_ai AFTER INSERT ON nodes BEGIN
        INSERT INTO nodes_fts(rowid, title, description, source) VALUES (new.id, new.title, new.description, new.source);
    END""",
    """CREATE TRIGGER nodes_fts_ad AFTER DELETE ON nodes BEGIN
        INSERT INTO nodes_fts(nodes_fts, rowid, title, description, source)
            VALUES ('delete', old.id, old.title, old.description, old.source);
        DELETE FROM vec_nodes WHERE rowid = old.id;
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vec_generation';
    END""",
    """CREATE TRIGGER nodes_fts_au AFTER UPDATE OF title, description, source ON nodes BEGIN
        INSERT INTO nodes_fts(nodes_fts, rowid, title, description, source)
            VALUES ('delete', old.id, old.title, old.description, old.source);
        INSERT INTO nodes_fts(rowid, title, description, source) VALUES (new.id, new.title, new.description, new.source);
    END""",
    f"CREATE VIRTUAL TABLE chunks_fts USING fts5(text, content='chunks', content_rowid='id', {FTS_OPTIONS})",
    """CREATE TRIGGER chunks_fts_ai AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
    END""",
    """CREATE TRIGGER chunks_fts_ad AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
        DELETE FROM vec_chunks WHERE rowid = old.id;
        UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'vec_generation';
    END""",
    """CREATE TRIGGER chunks_fts_au AFTER UPDATE OF text ON chunks BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
        INSERT INTO chunks_fts(rowid, text) VALUES (new.id, new.text);
    END""",
    *vec_tables(DEFAULT_DIMENSIONS),
    """CREATE TABLE trash (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        node_id     INTEGER NOT NULL,
        payload     TEXT NOT NULL CHECK (json_valid(payload)),
        deleted_at  TEXT NOT NULL
    )""",
    """CREATE TABLE chats (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        title       TEXT NOT NULL DEFAULT '',
        agent       TEXT,
        provider    TEXT,
        model       TEXT,
        metadata    TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metadata)),
        created_at  TEXT NOT NULL,
        updated_at  TEXT NOT NULL
    )""",
    """CREATE TABLE messages (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        chat_id     INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
        role        TEXT NOT NULL,
        content     TEXT NOT NULL,
        sent        TEXT CHECK (sent IS NULL OR json_valid(sent)),
        usage       TEXT CHECK (usage IS NULL OR json_valid(usage)),
        citations   TEXT CHECK (citations IS NULL OR json_valid(citations)),
        status      TEXT NOT NULL DEFAULT 'complete',
        created_at  TEXT NOT NULL
    )""",
    "CREATE INDEX messages_chat ON messages(chat_id, id)",
    """CREATE TABLE sent_log (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        chat_id     INTEGER REFERENCES chats(id) ON DELETE CASCADE,
        message_id  INTEGER REFERENCES messages(id) ON DELETE CASCADE,
        provider    TEXT NOT NULL,
        model       TEXT,
        node_ids    TEXT NOT NULL CHECK (json_valid(node_ids)),
        created_at  TEXT NOT NULL
    )""",
]

# 2: how often and how recently each auto-written memory node (type='memory') was used: put into a
# request's retrieved passages or returned by a read tool (core.graph.memory). A side table rather than
# columns on `nodes`: recording a use never rewrites the node's row, so nodes.updated_at (which
# orders the Nodes pane and breaks hub ties) keeps meaning "last edited", and no node trigger runs.
# Deleting the node removes its row; the trash keeps a copy in the node's payload and restoring puts it
# back (core.graph.store.delete_node / restore_node; before that copy, a restored memory came back unused).
_V2 = [
    """CREATE TABLE memory_access (
        node_id           INTEGER PRIMARY KEY REFERENCES nodes(id) ON DELETE CASCADE,
        access_count      INTEGER NOT NULL DEFAULT 0,
        last_accessed_at  TEXT
    )""",
]

# 3: the tokens of model requests that are not chat replies (core.chat.usage_log): the rolling summary,
# the citation judge, distil, integrate's drafts. Each already has (or now writes) a sent_log row;
# `purpose` says which kind it was and `usage` holds its normalised usage (core.providers.base.Usage).
# A chat turn's rows keep both NULL: its usage is on its assistant message (messages.usage).
_V3 = [
    "ALTER TABLE sent_log ADD COLUMN usage TEXT CHECK (usage IS NULL OR json_valid(usage))",
    "ALTER TABLE sent_log ADD COLUMN purpose TEXT",
]

# 4: the page of a paged document (a PDF captured by core.capture.files) each chunk comes from, so a
# citation can say "p. 4". NULL for every chunk of a note without pages (and for chunks indexed before).
# The indexer maps a chunk to its page from the node's metadata.capture.page_starts (core.index.chunker).
_V4 = [
    "ALTER TABLE chunks ADD COLUMN page INTEGER",
]

# 5: the history of every write to a node or an edge (core.graph.history): the fields a change touched
# before and after, who made it and when. No foreign keys: a change outlives the node it was made to
# (the node in the trash can be restored, and its history with it). `other_id` is an edge's to end, so
# a node's history lists the edge changes at either end through an index. `operation` groups the
# changes of one user action (a merge, a revert) under the id of its first change: undone together.
_V5 = [
    """CREATE TABLE history (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        node_id     INTEGER NOT NULL,
        other_id    INTEGER,
        edge_id     INTEGER,
        action      TEXT NOT NULL CHECK (action IN ('create', 'update', 'delete', 'restore')),
        before      TEXT CHECK (before IS NULL OR json_valid(before)),
        after       TEXT CHECK (after IS NULL OR json_valid(after)),
        actor       TEXT NOT NULL,
        operation   INTEGER,
        created_at  TEXT NOT NULL
    )""",
    "CREATE INDEX history_node ON history(node_id, id)",
    "CREATE INDEX history_operation ON history(operation) WHERE operation IS NOT NULL",
    "CREATE INDEX history_other ON history(other_id, id) WHERE other_id IS NOT NULL",
]

# 6: chats to manage (core.chat.manage): a chat deleted goes to the trash (`deleted_at` set; restoring
# clears it), and a full-text index over the text of every message, kept by triggers, for searching
# across chats. Only the text blocks are indexed (not tool calls or their results). A message replaced by
# "send again" is kept with status 'superseded' (its tokens were spent), and not searched.
_MESSAGE_TEXT = ("(SELECT group_concat(json_extract(value, '$.text'), char(10)) FROM json_each({0}.content)"
                 " WHERE json_extract(value, '$.type') = 'text')")
_V6 = [
    "ALTER TABLE chats ADD COLUMN deleted_at TEXT",
    f"CREATE VIRTUAL TABLE messages_fts USING fts5(text, {FTS_OPTIONS})",
    f"""CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, text) VALUES (new.id, {_MESSAGE_TEXT.format('new')});
    END""",
    """CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
        DELETE FROM messages_fts WHERE rowid = old.id;
    END""",
    f"""CREATE TRIGGER messages_fts_au AFTER UPDATE OF content ON messages BEGIN
        DELETE FROM messages_fts WHERE rowid = old.id;
        INSERT INTO messages_fts(rowid, text) VALUES (new.id, {_MESSAGE_TEXT.format('new')});
    END""",
    f"INSERT INTO messages_fts(rowid, text) SELECT m.id, {_MESSAGE_TEXT.format('m')} FROM messages m",
]

# 7: where each node's text came from (core.graph.provenance): typed by the user, a captured page or
# document, a vault or RA-H import, an MCP client, the model. Text from outside is fenced as quoted
# material in what the model reads (core.chat.fence). Older nodes are given theirs from their metadata
# and from who wrote their text (the history). And indexes that make the spending caps a lookup, not a
# scan of every chat and message (core.chat.cost): usage by time, a chat's delegated sub-chats, the
# side requests of a chat.
_V7 = [
    "ALTER TABLE nodes ADD COLUMN origin TEXT NOT NULL DEFAULT 'user'",
    *BACKFILL_SQL,
    "CREATE INDEX messages_spent ON messages(created_at) WHERE usage IS NOT NULL",
    "CREATE INDEX sent_log_spent ON sent_log(created_at) WHERE usage IS NOT NULL",
    "CREATE INDEX sent_log_chat ON sent_log(chat_id)",
    "CREATE INDEX chats_parent ON chats(json_extract(metadata, '$.parent_chat_id'))"
    " WHERE json_extract(metadata, '$.parent_chat_id') IS NOT NULL",
]

# 8: a markdown folder kept in step both ways (core.vault.twoway): for each of its notes the version both
# sides last agreed on (the file's text, a fingerprint of the node's fields), and the conflicts a round
# kept for the user to resolve. In the database only: the files carry nothing of a device's sync state.
_V8 = [
    """CREATE TABLE vault_notes (
        node_id  INTEGER PRIMARY KEY,
        root     TEXT NOT NULL,
        rel      TEXT NOT NULL,
        base     TEXT NOT NULL,
        node_fp  TEXT NOT NULL,
        node_updated TEXT,
        trashed  TEXT,
        pending     TEXT,
        pending_fp  TEXT
    )""",
    "CREATE INDEX vault_notes_root ON vault_notes(root, rel)",
    """CREATE TABLE vault_conflicts (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        root          TEXT NOT NULL,
        rel           TEXT NOT NULL,
        conflict_rel  TEXT NOT NULL,
        created_at    TEXT NOT NULL,
        resolved_at   TEXT
    )""",
]

# 9: captured PDFs and text files were chunked as markdown, so any line starting with `#` (a shell
# prompt, a comment, a parameter) became a chunk heading (core.index.chunker has_headings): the ones
# that got such a heading are indexed again (their unchanged chunks' vectors are reused by hash).
_V9 = [
    """UPDATE nodes SET chunk_status = 'pending' WHERE json_extract(metadata, '$.capture.kind') IN ('pdf', 'text')
       AND EXISTS (SELECT 1 FROM chunks c WHERE c.node_id = nodes.id AND c.heading_path != '[]')""",
]

MIGRATIONS: list[list[str]] = [_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8, _V9]
