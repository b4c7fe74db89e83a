"""The database layer of chats: the rows of `chats` and `messages`, read and written over a Store.

core/chat/conversation.py (class Chat) holds the turn logic and calls this for every row it reads or
writes; a turn's `sent_log` rows are written by core/chat/usage_log.py, with the side requests' ones.
Each write is one transaction, unless the caller already holds one (core.graph.db: nested, the outer
transaction commits): a chat row and its snapshot are created in one (`create_chat`).
"""

from __future__ import annotations

import json
from typing import Callable, Iterable

from core import clock
from core.graph.store import Store
from core.providers.base import Usage

# `tree(id)`: the chat given as the one parameter, the chat at the top of its delegations (it may be a
# sub-chat's id) and every sub-chat under that top, at any depth. Each step is an indexed lookup (the
# chats_parent index, migration 7), so the cost follows the size of this tree, not of the database.
CHAT_TREE = (
    "WITH RECURSIVE up(id) AS (SELECT ? UNION SELECT json_extract(c.metadata, '$.parent_chat_id') "
    " FROM chats c JOIN up ON c.id = up.id WHERE json_extract(c.metadata, '$.parent_chat_id') IS NOT NULL),"
    " root(id) AS (SELECT id FROM up WHERE id NOT IN (SELECT c.id FROM chats c JOIN up ON c.id = up.id"
    "  WHERE json_extract(c.metadata, '$.parent_chat_id') IS NOT NULL)),"
    " tree(id) AS (SELECT id FROM root UNION SELECT c.id FROM chats c JOIN tree"
    "  ON json_extract(c.metadata, '$.parent_chat_id') = tree.id) ")


class ChatRepository:
    def __init__(self, store: Store):
        self.db = store.db

    # -- chats ---------------------------------------------------------------------------------------
    def create_chat(self, *, agent: str, provider: str, model: str | None,
                    metadata: Callable[[int], dict]) -> tuple[int, dict]:
        """A new chat row and its metadata, `metadata(chat id)` (the snapshot is rendered there), in one
        transaction: a process killed here leaves no chat row without its snapshot (such a chat could not
        be reopened), and a `metadata` that raises (InvalidInput) rolls the row back."""
        stamp = clock.now()
        with self.db.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO chats(title, agent, provider, model, metadata, created_at, updated_at)"
                " VALUES ('', ?, ?, ?, '{}', ?, ?)", (agent, provider, model, stamp, stamp))
            chat_id = cur.lastrowid
            data = metadata(chat_id)
            self.save_metadata(chat_id, data)
        return chat_id, data

    def load_chat(self, chat_id: int) -> dict | None:
        """The chat's row (id, title, agent, provider, model, metadata decoded, created_at, updated_at),
        None if there is none."""
        row = self.db.execute("SELECT * FROM chats WHERE id = ?", (int(chat_id),)).fetchone()
        if row is None:
            return None
        return {**dict(row), "metadata": json.loads(row["metadata"])}

    def save_metadata(self, chat_id: int, metadata: dict) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE chats SET metadata = ?, updated_at = ? WHERE id = ?",
                         (json.dumps(metadata, ensure_ascii=False), clock.now(), chat_id))

    def drop_if_unused(self, chat_id: int) -> bool:
        """Delete a chat that never held a message nor sent a request (a first message refused before
        anything was sent: too long, over a cap); True when it was deleted."""
        with self.db.transaction() as conn:
            gone = conn.execute(
                "DELETE FROM chats WHERE id = ? AND NOT EXISTS (SELECT 1 FROM messages WHERE chat_id = ?)"
                " AND NOT EXISTS (SELECT 1 FROM sent_log WHERE chat_id = ?)"
                " AND NOT EXISTS (SELECT 1 FROM chats c WHERE json_extract(c.metadata, '$.parent_chat_id') = ?)",
                (chat_id, chat_id, chat_id, chat_id)).rowcount
        return bool(gone)

    def set_title(self, chat_id: int, title: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE chats SET title = ? WHERE id = ?", (title, chat_id))

    def list_chats(self, limit: int = 50) -> list[dict]:
        """The latest top-level chats (delegated chats left out), each with its reply count and the
        tokens of its replies summed."""
        rows = self.db.execute(
            "SELECT c.id, c.title, c.agent, c.provider, c.model, c.created_at, c.updated_at,"
            " json_extract(c.metadata, '$.parent_chat_id') AS parent,"
            " (SELECT COUNT(*) FROM messages m WHERE m.chat_id = c.id AND m.role = 'assistant'"
            "   AND m.usage IS NOT NULL AND m.status != 'superseded') AS replies,"
            " (SELECT json_group_array(m.usage) FROM messages m WHERE m.chat_id = c.id AND m.usage IS NOT NULL) AS usages"
            " FROM chats c WHERE c.deleted_at IS NULL ORDER BY c.updated_at DESC LIMIT ?", (int(limit),)).fetchall()
        out = []
        for r in rows:
            if r["parent"] is not None:
                continue
            total = Usage()
            for u in json.loads(r["usages"] or "[]"):
                u = json.loads(u) if isinstance(u, str) else u
                total = total + Usage.from_dict(u)
            out.append({"id": r["id"], "title": r["title"], "agent": r["agent"], "provider": r["provider"],
                        "model": r["model"], "replies": r["replies"], "usage": total.as_dict(),
                        "created_at": r["created_at"], "updated_at": r["updated_at"]})
        return out

    # -- messages ------------------------------------------------------------------------------------
    def insert_message(self, chat_id: int, role: str, content: list[dict], *, sent: dict | None = None,
                       usage: dict | None = None, citations: dict | None = None, status: str = "complete") -> int:
        """Store one message and touch its chat's updated_at, in one transaction; returns its id."""
        with self.db.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO messages(chat_id, role, content, sent, usage, citations, status, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (chat_id, role, json.dumps(content, ensure_ascii=False),
                 json.dumps(sent, ensure_ascii=False) if sent is not None else None,
                 json.dumps(usage) if usage is not None else None,
                 json.dumps(citations) if citations is not None else None, status, clock.now()))
            conn.execute("UPDATE chats SET updated_at = ? WHERE id = ?", (clock.now(), chat_id))
            return cur.lastrowid

    def insert_step(self, chat_id: int, calls: list[dict], results: list[dict], *, read: Iterable[int] = (),
                    raw_sql: bool = False) -> tuple[int, int]:
        """Store one tool-loop step, the assistant's `tool_use` message and the user's `tool_result`
        message, and touch the chat's updated_at, in ONE transaction: a kill, a full disk or a lock
        timeout between the two leaves neither, never a `tool_use` without its answer (which the APIs
        refuse on every later turn). Returns both ids. `read`: the nodes whose text the results hold,
        `raw_sql`: whether a raw SQL query's rows are among them (any node's text): kept with the results,
        since every later request of the chat sends them (`sent_node_ids`)."""
        sent = {k: v for k, v in (("read", sorted(set(read))), ("raw_sql", raw_sql)) if v} or None
        with self.db.transaction():
            return (self.insert_message(chat_id, "assistant", calls),
                    self.insert_message(chat_id, "user", results, sent=sent))

    def repair_messages(self, chat_id: int, updates: dict[int, list[dict]], appended: list[list[dict]]) -> None:
        """Write a history repair (core.chat.conversation `pair_tool_calls`) in one transaction: rows whose
        content is rewritten (a `tool_result` answering an interrupted call put at the head of the next user
        message), and user messages appended at the end (the answers to calls the chat ends with)."""
        if not updates and not appended:
            return
        with self.db.transaction() as conn:
            for message_id, content in updates.items():
                conn.execute("UPDATE messages SET content = ? WHERE id = ? AND chat_id = ?",
                             (json.dumps(content, ensure_ascii=False), message_id, chat_id))
            for content in appended:
                self.insert_message(chat_id, "user", content)

    def user_texts(self, chat_id: int) -> list[str]:
        """What the user wrote in this chat (every message of theirs still in it, also those folded into
        the rolling summary): the text of user messages that are not tool results."""
        out = []
        for r in self.rows(chat_id):
            if r["role"] != "user":
                continue
            blocks = json.loads(r["content"])
            if any(b.get("type") == "tool_result" for b in blocks):
                continue
            out += [b.get("text") or "" for b in blocks if b.get("type") == "text"]
        return out

    def sent_node_ids(self, chat_id: int) -> tuple[set[int], bool]:
        """Every node whose text this chat's tree (it and its delegates) has sent to a model or holds in its
        stored tool results (a turn may end before they are sent: they go with the next request), and
        whether a raw SQL query's rows are among them."""
        rows = self.db.execute(
            CHAT_TREE + "SELECT DISTINCT j.value FROM sent_log s, json_each(s.node_ids) j WHERE s.chat_id IN tree"
            " UNION SELECT j.value FROM messages m, json_each(m.sent, '$.read') j"
            "  WHERE m.chat_id IN tree AND m.role = 'user' AND json_type(m.sent, '$.read') = 'array'",
            (int(chat_id),)).fetchall()
        raw = self.db.execute(
            CHAT_TREE + "SELECT 1 FROM messages m WHERE m.chat_id IN tree AND m.role = 'user'"
            " AND json_extract(m.sent, '$.raw_sql') = 1 LIMIT 1", (int(chat_id),)).fetchone()
        return {int(r[0]) for r in rows}, raw is not None

    def rows(self, chat_id: int) -> list:
        """The chat's messages as stored (id, role, content as JSON text), oldest first; those replaced by
        "send again" (status 'superseded', core.chat.conversation) are no longer part of it."""
        return self.db.execute(
            "SELECT id, role, content FROM messages WHERE chat_id = ? AND status != 'superseded' ORDER BY id",
            (chat_id,)).fetchall()

    def request_times(self, chat_id: int) -> list[tuple[str, bool]]:
        """When each request of the chat left, as near as the rows say, oldest first: (created_at,
        whether it opens a turn) of each user-side message (the user's text opens a turn; a tool step's
        results are stored just before the loop's next request), for the cache policy's pace
        (core/chat/cache_policy.py pace_of)."""
        rows = self.db.execute(
            "SELECT created_at, NOT EXISTS (SELECT 1 FROM json_each(m.content) j"
            "  WHERE json_extract(j.value, '$.type') = 'tool_result') AS opens"
            " FROM messages m WHERE m.chat_id = ? AND m.role = 'user' AND m.status != 'superseded' ORDER BY m.id",
            (chat_id,)).fetchall()
        return [(r["created_at"], bool(r["opens"])) for r in rows]

    def supersede_from(self, chat_id: int, message_id: int) -> int:
        """Take message `message_id` and every later one out of the conversation (kept, as 'superseded':
        their tokens were spent and stay counted); how many."""
        with self.db.transaction() as conn:
            return conn.execute("UPDATE messages SET status = 'superseded' WHERE chat_id = ? AND id >= ?"
                                " AND status != 'superseded'", (chat_id, message_id)).rowcount

    def messages(self, chat_id: int) -> list[dict]:
        """The chat's messages for display: each one's content and text, status, error, usage, citations
        (the `[N]` → node id map of a reply) and, apart, its citation check."""
        out = []
        for row in self.db.execute(
                "SELECT id, role, content, sent, usage, citations, status, created_at FROM messages"
                " WHERE chat_id = ? AND status != 'superseded' ORDER BY id", (chat_id,)).fetchall():
            content = json.loads(row["content"])
            out.append({"id": row["id"], "role": row["role"], "content": content,
                        "text": "".join(b.get("text", "") for b in content if b.get("type") == "text"),
                        "status": row["status"],
                        "error": (json.loads(row["sent"]) or {}).get("error") if row["role"] == "assistant" and row["sent"] else None,
                        "usage": json.loads(row["usage"]) if row["usage"] else None,
                        **_citations_and_check(row["citations"]),
                        "created_at": row["created_at"]})
        return out

    def last_message_id(self, chat_id: int) -> int:
        """The id of the chat's latest message, 0 if it has none."""
        return self.db.execute("SELECT MAX(id) FROM messages WHERE chat_id = ?", (chat_id,)).fetchone()[0] or 0

    def sent(self, message_id: int) -> dict:
        """What was stored as sent with a message (`messages.sent`: a user message's suffix and passages)."""
        row = self.db.execute("SELECT sent FROM messages WHERE id = ?", (message_id,)).fetchone()
        return json.loads(row["sent"])

    def set_citations(self, message_id: int, citations: dict) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE messages SET citations = ? WHERE id = ?", (json.dumps(citations), message_id))


def _citations_and_check(raw: str | None) -> dict:
    """A stored reply's citations (`[N]` map and cited nodes) and, apart, its citation check."""
    stored = json.loads(raw) if raw else None
    check = stored.pop("check", None) if isinstance(stored, dict) else None
    return {"citations": stored, "citation_check": check}
