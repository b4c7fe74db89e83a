"""Chats to manage: rename, delete to the trash and restore, search across every chat's messages, and
export a chat as markdown or as a node. (Sending again — regenerate, edit and resend — is a turn:
core.chat.conversation `Chat.send(again=True)`.)

A deleted chat keeps its rows with `chats.deleted_at` set: left out of the lists and the search, and
refused by `Chat` until restored; its tokens still count in `cairn stats`. Search runs FTS5 over the
text of the messages (migration 6 keeps `messages_fts` by triggers) with the query syntax of the Nodes
search (core.search.fts_query), best hit per chat first.
"""

from __future__ import annotations

import json
from typing import Any

from core import clock
from core.chat.repository import ChatRepository
from core.errors import InvalidInput, NotFound
from core.graph import provenance
from core.safe_text import printable
from core.search import fts_query

MAX_TITLE = 200
# Around a search hit: the markers the caller turns into highlighting (never in stored text: both are
# C0 controls, which printable() would show as escapes).
HIT_START, HIT_END = "\x02", "\x03"


def _chat_row(repo: ChatRepository, chat_id: int, *, deleted: bool | None = False) -> dict:
    row = repo.load_chat(chat_id)
    if row is None:
        raise NotFound(f"There is no chat {chat_id}.")
    if deleted is False and row.get("deleted_at"):
        raise InvalidInput(f"Chat {chat_id} is in the trash (cairn chats restore {chat_id}).")
    if deleted is True and not row.get("deleted_at"):
        raise InvalidInput(f"Chat {chat_id} is not in the trash.")
    return row


def rename(store, chat_id: int, title: str) -> dict:
    if "\x00" in (title or ""):
        raise InvalidInput("A chat's title cannot contain a NUL byte.")
    title = " ".join((title or "").split())
    if not title:
        raise InvalidInput("A chat's title must not be empty.")
    if len(title) > MAX_TITLE:
        raise InvalidInput(f"A chat's title is at most {MAX_TITLE} characters; this one has {len(title)}.")
    repo = ChatRepository(store)
    _chat_row(repo, chat_id)
    repo.set_title(int(chat_id), title)
    return repo.load_chat(chat_id)


def delete(store, chat_id: int) -> dict:
    """Move a chat to the trash (its messages stay, out of sight)."""
    repo = ChatRepository(store)
    row = _chat_row(repo, chat_id)
    with store.db.transaction() as conn:
        conn.execute("UPDATE chats SET deleted_at = ? WHERE id = ?", (clock.now(), int(chat_id)))
    return row


def restore(store, chat_id: int) -> dict:
    repo = ChatRepository(store)
    _chat_row(repo, chat_id, deleted=True)
    with store.db.transaction() as conn:
        conn.execute("UPDATE chats SET deleted_at = NULL WHERE id = ?", (int(chat_id),))
    return repo.load_chat(chat_id)


def trash(store) -> list[dict]:
    rows = store.db.execute(
        "SELECT id, title, deleted_at, (SELECT COUNT(*) FROM messages m WHERE m.chat_id = c.id"
        " AND m.status != 'superseded') AS messages"
        " FROM chats c WHERE deleted_at IS NOT NULL ORDER BY deleted_at DESC").fetchall()
    return [dict(r) for r in rows]


def search(store, query: str, limit: int = 20) -> list[dict]:
    """Chats whose messages (or title) match, best first: one hit per chat, with a snippet of the
    message around the match (HIT_START/HIT_END around the matched words)."""
    expr = fts_query.build(query)
    if expr is None:
        raise InvalidInput("Nothing to search for: give a word (a query of only -words or stopwords finds nothing).")
    rows = store.db.execute(
        f"""SELECT m.chat_id, m.id AS message_id, m.role, c.title, c.updated_at,
                   snippet(messages_fts, 0, '{HIT_START}', '{HIT_END}', '…', 16) AS snippet,
                   bm25(messages_fts) AS rank
            FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid JOIN chats c ON c.id = m.chat_id
            WHERE messages_fts MATCH ? AND c.deleted_at IS NULL AND m.status != 'superseded'
              AND json_extract(c.metadata, '$.parent_chat_id') IS NULL
            ORDER BY rank LIMIT 500""", (expr,)).fetchall()
    best: dict[int, dict] = {}
    for r in rows:
        if r["chat_id"] not in best:
            best[r["chat_id"]] = {"chat_id": r["chat_id"], "title": r["title"], "message_id": r["message_id"],
                                  "role": r["role"], "snippet": r["snippet"], "updated_at": r["updated_at"]}
    words = [w.lower() for t in fts_query.parse(query) if not t.negative for w in t.words]
    for r in store.db.execute("SELECT id, title, updated_at FROM chats WHERE deleted_at IS NULL AND title != ''"
                              " AND json_extract(metadata, '$.parent_chat_id') IS NULL ORDER BY updated_at DESC"):
        if r["id"] not in best and words and all(w in r["title"].lower() for w in words):
            best[r["id"]] = {"chat_id": r["id"], "title": r["title"], "message_id": None, "role": None,
                             "snippet": "", "updated_at": r["updated_at"]}
    return list(best.values())[:limit]


def _message_text(content: list[dict]) -> str:
    return "\n\n".join(b["text"] for b in content if b.get("type") == "text" and b.get("text"))


def markdown(store, chat_id: int) -> str:
    """The chat as a markdown document: a heading per message, tool calls as one line each."""
    repo = ChatRepository(store)
    chat = _chat_row(repo, chat_id, deleted=None)
    title = printable(chat["title"] or f"Chat {chat_id}")
    lines = [f"# {title}", "",
             f"*Chat {chat_id} · {chat['agent']} · {chat['provider']}/{chat['model']} · "
             f"started {chat['created_at'][:16].replace('T', ' ')}*", ""]
    for m in repo.messages(int(chat_id)):
        content = m["content"]
        calls = [b for b in content if b.get("type") == "tool_use"]
        text = _message_text(content)
        if m["role"] == "user" and not text:
            continue  # a tool loop's results: the calls above say what ran
        who = "You" if m["role"] == "user" else "Assistant"
        lines += [f"## {who}", ""]
        if text:
            lines += [text, ""]
        for call in calls:
            lines += [f"> called `{call.get('name')}` {json.dumps(call.get('input'), ensure_ascii=False)[:200]}", ""]
        if m.get("status") not in (None, "complete"):
            lines += [f"*({m['status']})*", ""]
    return "\n".join(lines).rstrip() + "\n"


def export_node(store, chat_id: int) -> tuple[dict[str, Any], bool]:
    """The chat's markdown as a node (dimension `chat`, metadata.chat_id), to link and find later:
    (the node, whether it is new). A chat saved before is saved again into the same node (its text
    brought up to date; a title you gave it kept), never as a second copy."""
    repo = ChatRepository(store)
    chat = _chat_row(repo, chat_id, deleted=None)
    text = markdown(store, chat_id)
    row = store.db.execute("SELECT id FROM nodes WHERE json_extract(metadata, '$.chat_id') = ?"
                           " AND json_extract(metadata, '$.created_via') = 'chat export' ORDER BY id LIMIT 1",
                           (int(chat_id),)).fetchone()
    if row is not None:
        return store.update_node(row["id"], source=text, origin=provenance.MODEL), False
    title = f"Chat: {chat['title'] or chat_id}"[:200]
    return store.add_node(title, text, dimensions=["chat"], origin=provenance.MODEL,
                          metadata={"chat_id": int(chat_id), "created_via": "chat export"}), True
