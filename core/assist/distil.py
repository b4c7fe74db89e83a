"""Distil a chat into notes: the model proposes, the user reviews, only what is accepted is written.

`propose()` sends one request: the conversation (user and assistant text with their message ids,
tool calls summarised, bounded to the last `MAX_TRANSCRIPT_CHARS`) and the existing nodes the chat
touched or cited (citations, `sent_log`, tool inputs) plus hybrid-search candidates. The model must
answer with strict JSON; every item is validated (an unknown or unsent node id, a missing source
message id, a message not in this chat, an empty title ... drops that item with a warning); a reply
that is not the JSON asked for is an error and nothing is proposed. Nothing is written to the graph.

`apply()` writes the accepted proposals in one transaction (every change lands or none does):

- addition: a new node with `metadata.provenance = {chat_id, message_id, via: "distil"}` and
  `metadata.created_via = "distil"`.
- update: the changed fields, and an entry appended to `metadata.provenance_log`
  (`{kind: "update", chat_id, message_id, via, at, fields, previous}`; `previous` holds the old
  values, so an update can be undone by hand, unless they exceed `MAX_PREVIOUS_CHARS`).
- retirement: the node is NOT deleted. It gets the dimension `retired` and
  `metadata.retired = {reason, chat_id, message_id, via, at}`. A dimension keeps it findable
  (the Nodes browser's dimension filter, `cairn list -d retired`), visible in every view, and its
  edges intact; `unretire()` takes both off again and keeps the record in `provenance_log`. A node
  is retired exactly when it carries the dimension (metadata.retired is the record of why), so
  removing the dimension by hand (`cairn edit ID --remove-dimension retired`, the Focus panel) also
  brings it back.

An update or retirement whose node changed after the proposal was made (its `updated_at` or the
proposed-against text differs) refuses the whole apply with a clear message: nothing is written,
and the proposals stay as they were for the caller to show again.

Privacy: for a remote provider, nodes with a `never_send` dimension are not sent and cannot be
targets; replies the model wrote after it saw such a node (a turn whose `sent_log` names one, e.g.
a chat held with a local model) are left out of the transcript, with a warning.
"""

from __future__ import annotations

import difflib
import json
import threading
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Iterable

from core import clock
from core.chat import model_reply
from core.chat import usage_log
from core.graph import history, shown_lists
from core.graph.privacy import SendPolicy
from core.graph.retirement import RETIRED
from core.errors import CairnError, InvalidInput, NotFound
from core.graph.store import MAX_DESCRIPTION, MAX_TITLE, Store, clean_dimensions

MAX_TRANSCRIPT_CHARS = 40_000  # the newest messages that fit are sent; older ones are named in a warning
MAX_NODES = 30  # existing nodes sent as possible targets
MAX_NODE_TEXT_CHARS = 4_000  # a longer node text is cut; its text then cannot be replaced by distil
SEARCH_CANDIDATES = 8
SEARCH_QUERY_CHARS = 1_000
TOOL_SUMMARY_CHARS = 200
MAX_REPLY_TOKENS = 8_192
MAX_PREVIOUS_CHARS = 50_000  # old values kept in provenance_log up to this size in all
EXCERPT_CHARS = 300
KINDS = ("addition", "update", "retirement")
TEXT_FIELDS = ("title", "description", "source")

NEEDS_MODEL = ("Distilling a chat needs a model provider; Cairn is offline. Set one with "
               "`cairn config set chat.provider anthropic` (or openai) and $ANTHROPIC_API_KEY / $OPENAI_API_KEY, "
               "or pass --provider to `cairn distil`.")

SYSTEM_PROMPT = """\
You turn a conversation into durable notes for the user's knowledge graph (Cairn). Nothing is written \
until the user accepts it, so propose only what the conversation clearly establishes.

Propose three kinds of change, each tied to the message it comes from:
- "addition": a new note for a fact, decision or idea the conversation established that no existing node holds.
- "update": a change to an existing node (new title, description or text) because the conversation corrected or extended it. Give the full new value of each field you change.
- "retirement": an existing node the conversation superseded (no longer true or no longer wanted). Say what superseded it in "reason".

You may update or retire ONLY the nodes listed under <existing_nodes>, by their id. A node whose text was truncated may not get a new "source". Use the message ids shown in <message id="..."> as "source_message_id".

Answer with exactly one JSON object and nothing else (no prose, no code fence):
{"proposals": [
  {"kind": "addition", "title": "...", "description": "one line", "source": "the note's text (markdown)", "dimensions": ["tag"], "source_message_id": 12},
  {"kind": "update", "node_id": 4, "source": "the full new text", "reason": "why", "source_message_id": 14},
  {"kind": "retirement", "node_id": 7, "reason": "what superseded it", "source_message_id": 14}
]}
An update carries at least one of "title", "description", "source". If nothing is worth keeping, answer {"proposals": []}."""


class DistilError(CairnError):
    """Distilling could not propose or apply; the message says why and what to do."""


class StaleProposal(DistilError):
    """A proposal's node changed after the proposal was made."""


@dataclass
class Proposal:
    """One proposed change. `title` is the new node's title (addition) or the target's current title
    (update, retirement: for display). `changes`/`old` hold an update's new and proposed-against values."""

    kind: str
    source_message_id: int
    title: str = ""
    description: str = ""
    source: str = ""
    dimensions: list[str] = field(default_factory=list)
    node_id: int | None = None
    changes: dict[str, str] = field(default_factory=dict)
    old: dict[str, str] = field(default_factory=dict)
    reason: str = ""
    diff: str = ""
    base_updated_at: str | None = None
    excerpt: str = ""

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.kind == "addition":
            for key in ("node_id", "changes", "old", "diff", "base_updated_at"):
                out.pop(key)
        else:
            for key in ("description", "source", "dimensions"):
                out.pop(key)
            if self.kind == "retirement":
                for key in ("changes", "old", "diff"):
                    out.pop(key)
        return out

    @property
    def edit_field(self) -> str:
        """The field a person edits when they edit this proposal: the text of an addition, the most
        substantial changed field of an update."""
        if self.kind == "addition":
            return "source"
        for name in ("source", "description", "title"):
            if name in self.changes:
                return name
        return "source"

    def edited(self, *, title: str | None = None, text: str | None = None) -> "Proposal":
        """A copy with a new title and/or text (an addition's title/source, an update's edit_field);
        an update's diff is made again. Bad values are refused with InvalidInput."""
        if self.kind == "retirement":
            raise InvalidInput("A retirement has no text to edit; reject it instead.")
        if self.kind == "addition":
            new_title = self.title if title is None else title.strip()
            if not new_title:
                raise InvalidInput("The new note's title must not be empty.")
            if len(new_title) > MAX_TITLE:
                raise InvalidInput(f"The title is {len(new_title):,} characters; the limit is {MAX_TITLE:,}.")
            return replace(self, title=new_title, source=self.source if text is None else text)
        changes = dict(self.changes)
        if title is not None:
            if not title.strip():
                raise InvalidInput("The node's title must not be empty.")
            changes["title"] = title.strip()
        if text is not None:
            field_name = self.edit_field
            if field_name == "title" and not text.strip():
                raise InvalidInput("The node's title must not be empty.")
            changes[field_name] = text.strip() if field_name == "title" else text
        changes = {k: v for k, v in changes.items() if v != self.old.get(k)}
        if not changes:
            raise InvalidInput("The edit leaves the node as it is; reject the update instead.")
        return replace(self, changes=changes, diff=make_diff(self.node_id, self.old, changes))


@dataclass
class DistilResult:
    proposals: list[Proposal]
    warnings: list[str]
    chat_id: int = 0
    sent_node_ids: list[int] = field(default_factory=list)
    usage: dict = field(default_factory=dict)  # the distil request's tokens, as the provider reported them


@dataclass
class Applied:
    created: list[int] = field(default_factory=list)
    updated: list[int] = field(default_factory=list)
    retired: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, list[int]]:
        return asdict(self)

    def summary(self) -> str:
        parts = []
        for count, word in ((len(self.created), "added"), (len(self.updated), "updated"), (len(self.retired), "retired")):
            if count:
                parts.append(f"{count} {word}")
        return ", ".join(parts) if parts else "nothing written"


def make_diff(node_id: int | None, old: dict[str, str], new: dict[str, str]) -> str:
    """A unified diff per changed field, old → new, as plain text."""
    out: list[str] = []
    for name in TEXT_FIELDS:
        if name not in new:
            continue
        before, after = old.get(name, ""), new[name]
        lines = difflib.unified_diff(before.splitlines(), after.splitlines(), fromfile=f"node {node_id} {name} (now)",
                                     tofile=f"node {node_id} {name} (proposed)", lineterm="")
        out.extend(lines)
    return "\n".join(out)


# -- the conversation ------------------------------------------------------------------------------
@dataclass
class _Entry:
    message_id: int
    role: str
    text: str


def _excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _chat_rows(store: Store, chat_id: int) -> list:
    if store.db.execute("SELECT 1 FROM chats WHERE id = ?", (int(chat_id),)).fetchone() is None:
        raise NotFound(f"There is no chat {chat_id}.")
    return store.db.execute("SELECT id, role, content, sent, citations FROM messages WHERE chat_id = ? ORDER BY id",
                            (int(chat_id),)).fetchall()


def _render(row) -> str:
    """A message's text with its tool calls summarised; tool results are left out (they are the graph's
    own content, sent separately as existing nodes)."""
    parts = []
    for block in json.loads(row["content"]):
        if block.get("type") == "text" and (block.get("text") or "").strip():
            parts.append(block["text"])
        elif block.get("type") == "tool_use":
            args = json.dumps(block.get("input"), ensure_ascii=False)
            if len(args) > TOOL_SUMMARY_CHARS:
                args = args[: TOOL_SUMMARY_CHARS - 1] + "…"
            parts.append(f"[called {block.get('name')} {args}]")
    return "\n".join(parts)


def _tainted_turns(store: Store, chat_id: int, policy: SendPolicy) -> set[int]:
    """User message ids of turns whose requests sent a node that is now hidden (never_send)."""
    if not policy.restricts:
        return set()
    by_message: dict[int, set[int]] = {}
    for row in store.db.execute("SELECT message_id, node_ids FROM sent_log WHERE chat_id = ? AND message_id IS NOT NULL",
                                (int(chat_id),)):
        by_message.setdefault(row["message_id"], set()).update(int(i) for i in json.loads(row["node_ids"]))
    ids = set().union(*by_message.values()) if by_message else set()
    hidden = {n["id"] for n in store.get_nodes(ids) if not policy.allows(n)}
    return {m for m, nodes in by_message.items() if nodes & hidden}


def _transcript(rows, tainted: set[int]) -> tuple[list[_Entry], list[str]]:
    """The entries to send, oldest first, bounded to the newest MAX_TRANSCRIPT_CHARS, and warnings."""
    warnings: list[str] = []
    entries: list[_Entry] = []
    turn = None
    dropped_private = 0
    for row in rows:
        content = json.loads(row["content"])
        if row["role"] == "user" and any(b.get("type") == "text" for b in content):
            turn = row["id"]
        text = _render(row)
        if not text.strip():
            continue
        if row["role"] == "assistant" and turn in tainted:
            dropped_private += 1
            continue
        entries.append(_Entry(row["id"], row["role"], text))
    if dropped_private:
        warnings.append(f"{dropped_private} assistant message{'s were' if dropped_private != 1 else ' was'} left out: "
                        "the model wrote them after seeing private notes (privacy.never_send).")
    kept: list[_Entry] = []
    size = 0
    for entry in reversed(entries):
        if size + len(entry.text) > MAX_TRANSCRIPT_CHARS:
            if not kept:  # the newest message alone is longer than the budget: keep its end
                cut = len(entry.text) - MAX_TRANSCRIPT_CHARS
                kept.append(_Entry(entry.message_id, entry.role, "[… start left out]\n" + entry.text[-MAX_TRANSCRIPT_CHARS:]))
                warnings.append(f"Message {entry.message_id} was cut: its first {cut:,} characters were left out "
                                f"(the transcript is bounded to {MAX_TRANSCRIPT_CHARS:,} characters).")
                size = MAX_TRANSCRIPT_CHARS
            break
        kept.append(entry)
        size += len(entry.text)
    left_out = entries[: len(entries) - len(kept)]
    if left_out:
        chars = sum(len(e.text) for e in left_out)
        many = len(left_out) != 1
        warnings.append(f"The {len(left_out)} oldest message{'s' if many else ''} "
                        f"({chars:,} characters, messages {left_out[0].message_id}–{left_out[-1].message_id}) "
                        f"{'were' if many else 'was'} left out: the transcript is bounded to the last "
                        f"{MAX_TRANSCRIPT_CHARS:,} characters.")
    kept.reverse()
    return kept, warnings


def _ids_in(value: Any) -> list[int]:
    out = []
    if isinstance(value, bool):
        return out
    if isinstance(value, int):
        out.append(value)
    elif isinstance(value, list):
        out += [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    return out


def _touched(rows, store: Store, chat_id: int) -> list[int]:
    """Node ids the chat cited, read, created or changed, most direct first."""
    cited: list[int] = []
    tools: list[int] = []
    for row in rows:
        if row["citations"]:
            c = json.loads(row["citations"]) or {}
            cited += [int(n) for n in c.get("nodes") or []]
            cited += [int(n) for n in (c.get("passages") or {}).values()]
        for block in json.loads(row["content"]):
            if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                for key in ("id", "ids", "node_id", "from_id", "to_id"):
                    tools += _ids_in(block["input"].get(key))
            elif block.get("type") == "tool_result" and not block.get("is_error"):
                try:
                    result = json.loads(block.get("content") or "")
                except (TypeError, ValueError):
                    continue  # a plain-text result (most tools' errors, search passages): no id to take
                if isinstance(result, dict):
                    for key in ("created", "updated"):
                        if isinstance(result.get(key), dict):
                            tools += _ids_in(result[key].get("id"))
    logged: list[int] = []
    for row in store.db.execute("SELECT node_ids FROM sent_log WHERE chat_id = ? ORDER BY id", (int(chat_id),)):
        logged += [int(i) for i in json.loads(row["node_ids"])]
    return list(dict.fromkeys(cited + tools + logged))


def _node_block(node: dict) -> tuple[str, bool]:
    text = node["source"]
    truncated = len(text) > MAX_NODE_TEXT_CHARS
    if truncated:
        text = (text[:MAX_NODE_TEXT_CHARS] + f"\n[… truncated: {len(node['source']):,} characters in all; "
                "do not propose a new source for this node]")
    dims = ", ".join(node["dimensions"])
    head = f'<node id="{node["id"]}" dimensions="{dims}"' + (' retired="yes"' if RETIRED in
                                                             [d.lower() for d in node["dimensions"]] else "") + ">"
    body = [head, f"title: {node['title']}"]
    if node["description"]:
        body.append(f"description: {node['description']}")
    body += ["text:", text, "</node>"]
    return "\n".join(body), truncated


# -- propose ---------------------------------------------------------------------------------------
def propose(store: Store, chat_id: int, provider, *, never_send: Iterable[str], searcher=None,
            cancel: threading.Event | None = None, guard=None) -> DistilResult:
    """Ask the model for additions, updates and retirements drawn from this chat; write nothing.

    `never_send` is the config's privacy.never_send (applied when the provider is remote); it has no
    default so that no caller can forget it."""
    rows = _chat_rows(store, chat_id)  # an unknown chat is reported first, whatever the provider
    if getattr(provider, "name", "") == "offline":
        raise DistilError(NEEDS_MODEL)
    policy = SendPolicy.for_provider(never_send, provider)
    chat_messages = {r["id"] for r in rows}
    entries, warnings = _transcript(rows, _tainted_turns(store, chat_id, policy))
    if not entries:
        raise DistilError(f"Chat {chat_id} has no messages to distil.")

    candidates = _touched(rows, store, chat_id)
    if searcher is None:
        from core.search.searcher import Searcher

        searcher = Searcher(store)
    query = " ".join(e.text for e in entries if e.role == "user")[-SEARCH_QUERY_CHARS:]
    try:
        if query.strip():
            candidates += [h["id"] for h in searcher.search(query, mode="hybrid", limit=SEARCH_CANDIDATES)]
    except CairnError as exc:  # an embedder that cannot load: go on with the nodes the chat touched
        warnings.append(f"The search for related notes failed ({exc}); only the notes the chat touched were sent.")
    nodes: list[dict] = []
    hidden_count = 0
    for node in store.get_nodes(list(dict.fromkeys(candidates))):
        if node["type"] == "memory":
            continue
        if not policy.allows(node):
            hidden_count += 1
            continue
        nodes.append(node)
    if hidden_count:
        warnings.append(f"{hidden_count} private note{'s were' if hidden_count != 1 else ' was'} not sent "
                        "(privacy.never_send) and cannot be changed by distilling.")
    if len(nodes) > MAX_NODES:
        warnings.append(f"Only {MAX_NODES} of {len(nodes)} related notes were sent as possible targets "
                        "(those the chat cited first).")
        nodes = nodes[:MAX_NODES]

    node_parts, truncated = [], set()
    for node in nodes:
        block, cut = _node_block(node)
        node_parts.append(block)
        if cut:
            truncated.add(node["id"])
    conversation = "\n\n".join(f'<message id="{e.message_id}" role="{e.role}">\n{e.text}\n</message>' for e in entries)
    user_text = (f"<conversation chat_id=\"{chat_id}\">\n{conversation}\n</conversation>\n\n"
                 f"<existing_nodes>\n{chr(10).join(node_parts) if node_parts else '(none)'}\n</existing_nodes>")

    sent_ids = [n["id"] for n in nodes]
    log_id = usage_log.log_request(store, purpose="distil", provider=provider.name, model=provider.model,
                                   node_ids=sent_ids, chat_id=int(chat_id))
    try:
        reply = model_reply.complete(provider, SYSTEM_PROMPT, user_text, chat_key=f"cairn-distil-{chat_id}",
                                     max_tokens=MAX_REPLY_TOKENS, cancel=cancel, guard=guard)
    except model_reply.ReplyFailed as exc:
        usage_log.record_usage(store, log_id, exc.usage)  # the tokens counted before it failed
        raise DistilError(f"The model could not distil chat {chat_id}: {exc}") from exc.__cause__
    usage_log.record_usage(store, log_id, reply.usage)
    if reply.stop == "cancelled":
        raise DistilError("Distilling was cancelled; nothing was proposed.")
    if reply.stop == "max_tokens":
        raise DistilError(f"The model's reply was cut at its token limit ({MAX_REPLY_TOKENS:,}) before the JSON ended; "
                          "nothing was proposed. Distil a shorter chat, or use a model with a larger output limit.")
    shown = {e.message_id: e.text for e in entries}
    proposals, more = parse_reply(reply.text, messages=shown, chat_messages=chat_messages,
                                  nodes={n["id"]: n for n in nodes}, truncated=truncated)
    return DistilResult(proposals, warnings + more, int(chat_id), sent_ids, reply.usage.as_dict())


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_reply(text: str, *, messages: dict[int, str], chat_messages: set[int], nodes: dict[int, dict],
                truncated: set[int] = frozenset()) -> tuple[list[Proposal], list[str]]:
    """Validate the model's JSON strictly: a reply that is not `{"proposals": [...]}` raises DistilError;
    each bad item is dropped with a warning that says why."""
    try:
        data = model_reply.json_payload(text)  # a markdown code fence around the JSON is allowed
    except model_reply.NotJSON as exc:
        if exc.empty:
            raise DistilError("The model's reply was empty; nothing was proposed. Try again.") from None
        raise DistilError(f"The model's reply is not valid JSON ({exc.reason}); nothing was proposed. "
                          f"It began: {_excerpt(exc.body, 120)!r}") from None
    if not isinstance(data, dict) or not isinstance(data.get("proposals"), list):
        raise DistilError('The model\'s reply is JSON but not {"proposals": [...]}; nothing was proposed.')

    proposals: list[Proposal] = []
    warnings: list[str] = []
    updated: set[int] = set()
    retired: set[int] = set()
    for i, item in enumerate(data["proposals"], 1):
        kind = item.get("kind") if isinstance(item, dict) else None
        label = f"Item {i} of the model's reply" + (f" ({kind})" if isinstance(kind, str) else "")
        try:
            if not isinstance(item, dict):
                raise InvalidInput("it is not a JSON object")
            if kind not in KINDS:
                raise InvalidInput(f"its kind {kind!r} is not one of {', '.join(KINDS)}")
            mid = _int(item.get("source_message_id"))
            if mid is None:
                raise InvalidInput("it has no source_message_id (a message id number)")
            if mid not in chat_messages:
                raise InvalidInput(f"message {mid} is not in this chat")
            if mid not in messages:
                raise InvalidInput(f"message {mid} was not part of the conversation sent")
            excerpt = _excerpt(messages[mid])
            reason = item.get("reason") if isinstance(item.get("reason"), str) else ""
            if kind == "addition":
                title = item.get("title")
                if not isinstance(title, str) or not title.strip():
                    raise InvalidInput("its title is empty")
                title = " ".join(title.split())
                if len(title) > MAX_TITLE:
                    raise InvalidInput(f"its title is {len(title):,} characters (limit {MAX_TITLE:,})")
                description = item.get("description") or ""
                source = item.get("source") or ""
                if not isinstance(description, str) or not isinstance(source, str):
                    raise InvalidInput("its description and source must be text")
                if len(description) > MAX_DESCRIPTION:
                    raise InvalidInput(f"its description is {len(description):,} characters (limit {MAX_DESCRIPTION:,})")
                dims = item.get("dimensions") or []
                if not isinstance(dims, list):
                    raise InvalidInput("its dimensions must be a list of text")
                proposals.append(Proposal("addition", mid, title=title, description=description, source=source,
                                          dimensions=clean_dimensions(dims), reason=reason, excerpt=excerpt))
                continue
            node_id = _int(item.get("node_id"))
            if node_id is None:
                raise InvalidInput("it has no node_id (a node id number)")
            node = nodes.get(node_id)
            if node is None:
                raise InvalidInput(f"node {node_id} was not among the notes sent (unknown, private or unrelated)")
            if kind == "update":
                if node_id in updated:
                    raise InvalidInput(f"node {node_id} already has an update proposed")
                changes: dict[str, str] = {}
                for name in TEXT_FIELDS:
                    if name in item and item[name] is not None:
                        if not isinstance(item[name], str):
                            raise InvalidInput(f"its {name} must be text")
                        value = " ".join(item[name].split()) if name == "title" else item[name]
                        if value != node[name]:
                            changes[name] = value
                if "title" in changes and not changes["title"]:
                    raise InvalidInput("its new title is empty")
                if "description" in changes and len(changes["description"]) > MAX_DESCRIPTION:
                    raise InvalidInput(f"its description is longer than {MAX_DESCRIPTION:,} characters")
                if "source" in changes and node_id in truncated:
                    raise InvalidInput(f"node {node_id}'s text was too long to send whole, so a new text for it "
                                       "would lose what the model did not see; edit that node yourself")
                if not changes:
                    raise InvalidInput(f"it changes nothing in node {node_id}")
                old = {k: node[k] for k in changes}
                updated.add(node_id)
                proposals.append(Proposal("update", mid, title=node["title"], node_id=node_id, changes=changes,
                                          old=old, reason=reason, diff=make_diff(node_id, old, changes),
                                          base_updated_at=node["updated_at"], excerpt=excerpt))
            else:
                if not reason.strip():
                    raise InvalidInput("it does not say what superseded the node (reason)")
                if RETIRED in [d.lower() for d in node["dimensions"]]:
                    raise InvalidInput(f"node {node_id} is already retired")
                if node_id in retired:
                    raise InvalidInput(f"node {node_id} is already proposed for retirement")
                retired.add(node_id)
                proposals.append(Proposal("retirement", mid, title=node["title"], node_id=node_id,
                                          reason=reason.strip(), base_updated_at=node["updated_at"], excerpt=excerpt))
        except InvalidInput as exc:
            warnings.append(f"{label} was dropped: {str(exc).rstrip('.')}.")
    proposals.sort(key=lambda p: KINDS.index(p.kind))  # numbered in review order: additions, updates, retirements
    return proposals, warnings


# -- proposals kept between `cairn distil` and `cairn distil --accept` ------------------------------
def _pending_key(chat_id: int) -> str:
    return f"distil.pending.{int(chat_id)}"


def save_pending(store: Store, result: DistilResult) -> None:
    """Keep the proposals just shown, so `--accept N` picks from exactly those (not a new model reply)."""
    shown_lists.save(store, _pending_key(result.chat_id), [asdict(p) for p in result.proposals], result.warnings,
                 owner=("chat", result.chat_id))


def load_pending(store: Store, chat_id: int) -> DistilResult | None:
    """The proposals kept for the chat, or None; shown_lists.OwnerDeleted (the list discarded) when the chat
    was deleted since they were listed."""
    kept = shown_lists.load(store, _pending_key(chat_id), owner=("chat", chat_id))
    if kept is None:
        return None
    proposals, warnings, _at = kept
    return DistilResult([Proposal(**p) for p in proposals], warnings, int(chat_id))


def clear_pending(store: Store, chat_id: int) -> None:
    shown_lists.clear(store, _pending_key(chat_id))


# -- apply -----------------------------------------------------------------------------------------
def _check_current(node: dict, p: Proposal) -> None:
    what = "update" if p.kind == "update" else "retirement"
    if node["updated_at"] != p.base_updated_at or any(node[k] != v for k, v in p.old.items()):
        raise StaleProposal(f"Node {p.node_id} ({node['title']!r}) changed after the {what} was proposed "
                            f"(at {node['updated_at']}); nothing was written. Distil again to see it against "
                            "the current text.")


def apply(store: Store, chat_id: int, accepted: list[Proposal]) -> Applied:
    """Write the accepted proposals in one transaction: every change lands, or (on any error) none."""
    chat_id = int(chat_id)
    rows = _chat_rows(store, chat_id)
    in_chat = {r["id"] for r in rows}
    for p in accepted:
        if p.kind not in KINDS:
            raise InvalidInput(f"Unknown proposal kind {p.kind!r}; nothing was written.")
        if p.source_message_id not in in_chat:
            raise InvalidInput(f"Message {p.source_message_id} is not in chat {chat_id}; nothing was written.")
    done = Applied()
    stamp = clock.now()
    with history.acting_as(history.distil_of(chat_id)), store.db.transaction():
        # Check every target first: a later check must not see an earlier proposal's own write.
        current: dict[int, dict] = {}
        for p in accepted:
            if p.kind == "addition":
                continue
            try:
                node = current.get(p.node_id) or store.get_node(p.node_id)
            except NotFound:
                raise NotFound(f"Node {p.node_id} no longer exists; nothing was written.") from None
            _check_current(node, p)
            current[p.node_id] = node
        for p in sorted(accepted, key=lambda p: KINDS.index(p.kind)):  # updates before retirements
            provenance = {"chat_id": chat_id, "message_id": p.source_message_id, "via": "distil"}
            if p.kind == "addition":
                node = store.add_node(p.title, p.source, description=p.description, dimensions=p.dimensions,
                                      metadata={"provenance": provenance, "created_via": "distil"})
                done.created.append(node["id"])
                continue
            node = store.get_node(p.node_id)
            meta = dict(node.get("metadata") or {})
            log = list(meta.get("provenance_log") or [])
            if p.kind == "update":
                entry = {"kind": "update", **provenance, "at": stamp, "fields": sorted(p.changes)}
                previous = {k: node[k] for k in p.changes}
                if sum(len(v or "") for v in previous.values()) <= MAX_PREVIOUS_CHARS:
                    entry["previous"] = previous
                else:
                    entry["previous_omitted"] = f"longer than {MAX_PREVIOUS_CHARS:,} characters"
                meta["provenance_log"] = log + [entry]
                store.update_node(p.node_id, **p.changes, metadata=meta)
                done.updated.append(p.node_id)
            else:
                record = {"reason": p.reason, **provenance, "at": stamp}
                meta["retired"] = record
                meta["provenance_log"] = log + [{"kind": "retirement", **record}]
                store.update_node(p.node_id, metadata=meta, dimensions=node["dimensions"] + [RETIRED])
                done.retired.append(p.node_id)
    return done
