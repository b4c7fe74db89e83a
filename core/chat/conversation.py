"""A conversation: persisted messages, the request for each turn, streaming, and the tool loop.

History is stored exactly as sent, minus each turn's volatile suffix (kept in `messages.sent` for
the record), so the next turn's prefix is byte-identical to the last one's. Each request writes a
`sent_log` row naming the nodes that left the machine and the provider they went to (core/chat/usage_log.py).
The rows of chats and messages are read and written by core/chat/repository.py.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Callable, Iterator

from core.agent import profiles
from core.agent.egress import Egress
from core import clock
from core.chat import cache_policy, citations, cut_off, fence, model_reply, usage_log
from core.chat.turn_budget import TurnBudget
from core.chat.cost import SpendGuard
from core.chat import request as chat_request
from core.chat import window
from core.chat.focus import Focus
from core.chat.repository import ChatRepository
from core.graph import history, memory, provenance
from core.providers.request import ContextRequest, Snapshot, estimate_tokens
from core.errors import InvalidInput, NotFound
from core.providers.base import Provider, ProviderError, StreamEvent, Turn, Usage
from core.graph.store import Store
from core.agent.tools import SQL_ROWS, ToolContext, ToolError, ToolRunner, result_text

MAX_TOOL_CALLS = 25
MAX_DELEGATION_DEPTH = 5
MEMORY_MIN_CHARS = 80
SUMMARY_THRESHOLD_TOKENS = 24_000  # estimated history size that triggers a rolling summary
SUMMARY_KEEP_EXCHANGES = 4
SUMMARY_PROMPT = (
    "Summarise the conversation below for your own future reference. Use exactly these sections:\n"
    "## Decisions\n## Open questions\n## Current task\n## Facts and sources (keep [NODE:id] references)\n"
    "Be complete about decisions and open questions; be brief elsewhere."
)


@dataclass
class Reply:
    message_id: int | None = None
    text: str = ""
    status: str = "complete"  # complete | incomplete | error
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    citations: dict = field(default_factory=dict)
    citation_check: "citations.CitationCheck | None" = None  # see core/chat/citations.py (chat.check_citations)
    created_nodes: list[int] = field(default_factory=list)
    tool_calls: int = 0
    requests: int = 0
    # This turn's side requests (core.chat.usage_log): {"summary" | "citation_check": usage dict}, also on
    # their sent_log rows (message_id = the turn's user message); not in `usage`, which is the reply's own.
    side_usage: dict = field(default_factory=dict)


@dataclass
class TurnScope:
    """What one message of the user's shares with every delegate it causes: its budget of requests and
    tool calls, the egress rule (with what the user wrote), and the nodes sent to a model so far (in this
    chat's earlier turns and this one)."""

    budget: TurnBudget
    egress: Egress
    sent: set[int]
    reads: list[set[int]] = field(default_factory=list)  # each agent's ToolContext.touched, read as it grows
    raw_sql: bool = False  # a raw SQL query's rows (any note's text) were given to a model in this chat

    def seen(self) -> set[int]:
        """Every node a model of this turn has been given so far, this instant."""
        return self.sent.union(*self.reads)


@dataclass
class _Step:
    """One request of a turn as it streamed: its text, tool calls, stop reason and error."""

    text: str = ""
    calls: list = field(default_factory=list)
    stop: str = ""
    error: ProviderError | None = None
    usage: Usage = field(default_factory=Usage)  # this request's own
    read: set[int] = field(default_factory=set)  # nodes whose text its tool results hold
    raw_sql: bool = False  # whether they hold a raw SQL query's rows


def _text_block(text: str) -> dict:
    return {"type": "text", "text": text}


# The answer stored for a tool call whose result never was (a kill, a full disk or a lock timeout
# between the two writes of a step, in a version that made two): the APIs refuse a `tool_use` without
# a `tool_result` in the very next message, on every later turn.
INTERRUPTED = "interrupted: this tool call was cut off before it returned; it was not completed."
# The answer to a call not run because the user stopped the turn before it.
NOT_RUN = "stopped: the user stopped the turn before this tool call ran; it was not run."


def _sendable(content: list[dict]) -> list[dict]:
    """A stored message's blocks as sent: a reply cut off or failed before any text is stored as an
    empty text block, and the APIs reject empty (or blank) text blocks."""
    return [b for b in content if b.get("type") != "text" or (b.get("text") or "").strip()]


def _stopped(cancel: threading.Event | None) -> bool:
    return cancel is not None and cancel.is_set()


def pair_tool_calls(messages: list[tuple[int, str, list[dict]]]) -> tuple[dict[int, list[dict]], list[list[dict]]]:
    """The repair a history needs so every `tool_use` is answered by a `tool_result` in the very next
    message (what the APIs require): `messages` are (row id, role, stored content), oldest first, those
    that are sent. Returns (row id → new content, contents of user messages to append). An unanswered call
    is answered with an error result: at the head of the next message when that is the user's, in a user
    message appended when the call ends the history; when an assistant message follows (nowhere to put an
    answer in order) the call is rewritten as a text saying it was cut off. Nothing to repair: ({}, [])."""
    updates: dict[int, list[dict]] = {}
    appended: list[list[dict]] = []
    visible = [(i, role, content) for i, role, content in messages if _sendable(content)]
    for k, (row_id, role, content) in enumerate(visible):
        calls = [b for b in content if b.get("type") == "tool_use"] if role == "assistant" else []
        if not calls:
            continue
        after = visible[k + 1] if k + 1 < len(visible) else None
        if after is not None and after[1] == "assistant":
            updates[row_id] = [_text_block(f"[{b.get('name')} call: {INTERRUPTED}]") if b.get("type") == "tool_use"
                               else b for b in content]
            continue
        answered = {b.get("tool_use_id") for b in (after[2] if after else []) if b.get("type") == "tool_result"}
        missing = [{"type": "tool_result", "tool_use_id": b.get("id"), "content": INTERRUPTED, "is_error": True}
                   for b in calls if b.get("id") not in answered]
        if not missing:
            continue
        if after is None:
            appended.append(missing)
        else:
            updates[after[0]] = missing + after[2]
    return updates, appended


def _answered_only(messages: list[dict]) -> list[dict]:
    """`messages` without the `tool_result` blocks that answer no `tool_use` of the message just before
    (the APIs refuse them: one whose call went into the rolling summary, say); a message left with
    nothing is left out."""
    out: list[dict] = []
    for m in messages:
        content = m["content"]
        if m["role"] == "user" and any(b.get("type") == "tool_result" for b in content):
            prev = out[-1] if out else None
            ids = ({b.get("id") for b in prev["content"] if b.get("type") == "tool_use"}
                   if prev is not None and prev["role"] == "assistant" else set())
            content = [b for b in content if b.get("type") != "tool_result" or b.get("tool_use_id") in ids]
            if not content:
                continue
        out.append({"role": m["role"], "content": content})
    return out


def _older(history_rows: list, keep: int = SUMMARY_KEEP_EXCHANGES) -> list:
    """The rows the rolling summary folds: all before the `keep`-th last user message that carries text
    (tool pairs stay together; keep 0: all of them); empty when there are not more exchanges than are kept."""
    starts = [i for i, r in enumerate(history_rows)
              if r["role"] == "user" and any(b.get("type") == "text" for b in json.loads(r["content"]))]
    if len(starts) <= keep or not history_rows:
        return []
    return history_rows[:starts[-keep]] if keep else list(history_rows)


class Chat:
    def __init__(self, store: Store, config, provider: Provider, *, chat_id: int | None = None,
                 agent: str | None = None, searcher=None, confirm: Callable[[str, dict], bool] | None = None,
                 depth: int = 0, inherited: list[dict] | None = None, parent_id: int | None = None,
                 now: Callable[[], datetime] | None = None, confirm_fetch: Callable[[str], bool] | None = None,
                 scope: TurnScope | None = None):
        """`confirm` asks the user about one of the model's edits, `confirm_fetch` about fetching an address
        they did not write (core/agent/egress.py); None: nobody to ask, refused. `scope`: a delegate's,
        its caller's turn (budget and egress rule shared)."""
        from core.search.searcher import Searcher

        self.store = store
        self.config = config
        # base_provider: what a delegated agent's model is chosen against; provider: on this agent's model.
        self.base_provider = self.provider = provider
        self.searcher = searcher or Searcher(store)
        self.confirm = confirm
        self.confirm_fetch = confirm_fetch
        self._scope = scope
        self._turn_scope: TurnScope | None = None  # the turn under way (its own, or the caller's)
        self.depth = depth
        self.now = now
        self._inherited = inherited or []
        self._replacing_from: int | None = None  # while send(again=True) runs: the message it replaces
        self.repo = ChatRepository(store)
        if chat_id is None:
            self.agent = profiles.get(agent or config.chat.agent, config)
            self.provider = provider = chat_request.provider_for(self.agent, config, provider)
            self.engine = chat_request.engine(store, self.searcher, self.agent, config, provider)

            def first_metadata(new_id: int) -> dict:
                # Rendered inside the transaction that creates the row (ChatRepository.create_chat).
                variables = chat_request.variables(config, chat_id=new_id, agent=self.agent, model=provider.shown_model)
                self.snapshot = self.engine.snapshot(variables)
                data = {"snapshot": json.loads(self.snapshot.as_json()), "variables": variables}
                if parent_id is not None:
                    data["parent_chat_id"] = parent_id
                return data

            self.id, self.metadata = self.repo.create_chat(agent=self.agent.name, provider=provider.name,
                                                           model=provider.shown_model, metadata=first_metadata)
        else:
            row = self.repo.load_chat(chat_id)
            if row is None:
                raise NotFound(f"There is no chat {chat_id}.")
            if row.get("deleted_at"):
                raise InvalidInput(f"Chat {chat_id} is in the trash; restore it first (cairn chats restore {chat_id}).")
            self.id = row["id"]
            self.agent = profiles.get(row["agent"], config)
            self.provider = provider = chat_request.provider_for(self.agent, config, provider)
            self.engine = chat_request.engine(store, self.searcher, self.agent, config, provider)
            self.metadata = row["metadata"]
            # send() writes the title to the row only: a reopened chat (each message in the app, `cairn
            # ask --chat`) keeps it instead of being retitled with its latest message.
            if row["title"]:
                self.metadata.setdefault("title", row["title"])
            if "snapshot" in self.metadata:
                self.snapshot = Snapshot(**self.metadata["snapshot"])
            else:  # a chat row left without its snapshot (a kill mid-creation, before that was atomic)
                variables = chat_request.variables(config, chat_id=self.id, agent=self.agent, model=provider.shown_model)
                self.snapshot = self.engine.snapshot(variables)
                self.metadata.update(snapshot=json.loads(self.snapshot.as_json()), variables=variables)
                self._save_metadata()
        self.chat_key = f"cairn-chat-{self.id}"
        self.last_reply: Reply | None = None

    @property
    def spend_guard(self) -> SpendGuard:
        """The spending caps for this chat's requests (its turns and side requests; core/chat/cost.py)."""
        return SpendGuard(self.store, self.config, self.id)

    def _save_metadata(self) -> None:
        self.repo.save_metadata(self.id, self.metadata)

    # -- focus ---------------------------------------------------------------------------------------
    def set_focus(self, focus: Focus) -> str:
        return self.engine.set_focus(focus)

    # -- history -------------------------------------------------------------------------------------
    def _history_rows(self) -> list[tuple[int, str, list[dict]]]:
        """The stored messages the next request sends (after the rolling summary's cut; while a message is
        sent again, before the one it replaces), decoded."""
        upto = self.metadata.get("summary_upto", 0)
        before = self._replacing_from
        return [(r["id"], r["role"], json.loads(r["content"])) for r in self.repo.rows(self.id)
                if r["id"] > upto and (before is None or r["id"] < before)]

    def repair_history(self) -> bool:
        """Store the answers to tool calls the history left unanswered (`pair_tool_calls`), so what is
        sent from now on is what is stored, byte for byte. Returns whether anything was repaired."""
        updates, appended = pair_tool_calls(self._history_rows())
        self.repo.repair_messages(self.id, updates, appended)
        return bool(updates or appended)

    def history(self) -> list[dict]:
        """Earlier turns exactly as sent (no suffixes), after the rolling summary if there is one. A tool
        call left unanswered is shown answered as `repair_history` stores it (send() stores it first)."""
        out = list(self._inherited)
        if self.metadata.get("summary"):
            # The model's own words about a conversation that may have quoted strangers: fenced as a model's
            summary = [_text_block("[Summary of the earlier conversation]\n" + fence.fence(
                self.metadata["summary"], "a language model's summary of the earlier conversation"))]
            if self.metadata.get("skills_block"):
                # Skills whose activation the summary replaced, rendered once at summary time (byte-stable).
                summary.append(_text_block(self.metadata["skills_block"]))
            out += [{"role": "user", "content": summary},
                    {"role": "assistant", "content": [_text_block("Understood; continuing from that summary.")]}]
        rows = self._history_rows()
        updates, appended = pair_tool_calls(rows)
        for row_id, role, content in [*rows, *((0, "user", c) for c in appended)]:
            content = _sendable(updates.get(row_id, content))
            if content:
                out.append({"role": role, "content": content})
        return _answered_only(out)

    def messages(self) -> list[dict]:
        """The stored conversation for display (also after reopening): each message's text, status,
        usage and citations (the `[N]` → node id map of the reply)."""
        return self.repo.messages(self.id)

    def request(self, message: str, *, focus: Focus | None = None) -> ContextRequest:
        """The request the next turn would send (no side effects beyond rendering, and saving a prefix
        re-rendered because one of its nodes has since been made private)."""
        if focus is not None:
            self.engine.set_focus(focus)
        self._drop_hidden_from_snapshot()
        # The pace on the clock that stamps the rows (core.clock), not `self.now` (the date the suffix shows).
        pace = cache_policy.pace_of(self.repo.request_times(self.id), clock.now())
        scale = window.Calibration.from_metadata(self.metadata).ratio_for(self.provider)
        return chat_request.build(self.engine, self.snapshot, self.history(), message, self.provider.model,
                                  now=self.now() if self.now else None, provider=self.provider, pace=pace,
                                  scale=scale)

    def _drop_hidden_from_snapshot(self) -> None:
        """Privacy beats the cache: if a node in the snapshot (a hub or core note) has since been given
        a never_send dimension, render the prefix again without it (the cache is rebuilt once)."""
        if not self.engine.policy.restricts or not self.snapshot.node_ids:
            return
        if all(self.engine.policy.allows(n) for n in self.store.get_nodes(self.snapshot.node_ids)):
            return
        variables = self.metadata.get("variables") or chat_request.variables(
            self.config, chat_id=self.id, agent=self.agent, model=self.provider.model)
        self.snapshot = self.engine.snapshot(variables)
        self.metadata["snapshot"] = json.loads(self.snapshot.as_json())
        self._save_metadata()

    # -- a turn --------------------------------------------------------------------------------------
    def last_message(self) -> tuple[int, str] | None:
        """The last message you sent in this chat (its id and text), the one "send again" replaces."""
        for row_id, role, content in reversed(self._history_rows()):
            texts = [b.get("text", "") for b in content if b.get("type") == "text"]
            if role == "user" and texts and not any(b.get("type") == "tool_result" for b in content):
                return row_id, "\n".join(texts)
        return None

    def send(self, message: str, cancel: threading.Event | None = None, *,
             again: bool = False) -> Iterator[StreamEvent]:
        """Stream one turn: text deltas, tool calls and results, usage, stop or error. The reply is
        persisted as it ends (also when cancelled or cut: kept, marked incomplete). With the model
        citation check, a `phase` event ("citation_check") says the judge request starts (the reply is
        complete and stored by then; `cancel` set after it skips the check only).

        `again`: this message replaces the last one you sent, and the reply to it (and anything after)
        leaves the conversation: regenerate (the same text) or edit and resend. Those messages stay in
        the database as 'superseded' — their tokens were spent and still count — but are neither sent
        nor shown."""
        if not message.strip():
            raise InvalidInput("The message is empty.")
        replacing = None
        if again:
            last = self.last_message()
            if last is None:
                raise InvalidInput(f"Chat {self.id} has no message of yours to send again (one folded into the "
                                   "rolling summary cannot be).")
            replacing = last[0]
        self._replacing_from = replacing  # left out of the request; superseded as the new message is stored
        try:
            yield from self._send(message, cancel, replacing)
        finally:
            self._replacing_from = None

    # The chat turn, step by step: each rule lives in its own home (named beside each step).
    def _send(self, message: str, cancel: threading.Event | None, replacing: int | None) -> Iterator[StreamEvent]:
        scope = self._turn_scope = self._scope or self._new_scope(message, cancel)  # shared with delegates
        request, notices, summary = self._prepare(message, cancel)  # history repaired, summarised, fitted to the window
        reply = self.last_reply = Reply()
        ctx = self._tool_context(scope, cancel)
        sent_tools = {t["name"] for t in request.snapshot.tools}  # the window policy may have left some out
        runner = ToolRunner(ctx, tuple(t for t in self.agent.tools if t in sent_tools)
                            if self.provider.supports_tools else ())
        user_id = self._store_user_message(message, request, replacing, summary, reply)
        for notice in notices:
            yield StreamEvent("notice", text=notice)
        loop: list[dict] = []
        text_parts: list[str] = []
        calibration = window.Calibration.from_metadata(self.metadata)
        step_text = ""
        while True:
            refused = self._not_sent(request, loop, scope, cancel)  # a stop, a spending cap, the turn budget
            if refused is not None:
                step_text = ""
                reply.status = "incomplete"
                if refused.type == "error":
                    reply.error = str(refused.error)
                yield refused
                break
            scope.sent.update(request.node_ids, ctx.touched)
            usage_log.log_turn(self.store, chat_id=self.id, message_id=user_id, provider=self.provider.name,
                               model=self.provider.model, node_ids=request.node_ids + sorted(ctx.touched))
            step = _Step()
            turn = window.with_reply_room(self.provider, Turn(request, loop, self.chat_key), calibration)
            yield from self._stream_step(turn, step, reply, calibration, cancel)
            step_text = step.text
            text_parts.append(step_text)
            if step.stop == cut_off.STOP and step.error is None:  # the model's limit ended it (core/chat/cut_off.py)
                step.error = cut_off.cut_off(self.provider.facts, turn.max_tokens, step.usage)
                yield StreamEvent("error", error=step.error)
            if step.error is not None or step.stop == "cancelled" or not step.calls:
                reply.status = "complete" if (step.error is None and step.stop != "cancelled") else "incomplete"
                if step.error is not None:
                    reply.error = str(step.error)
                break
            over = self._tool_limit(reply, scope)  # per agent (MAX_TOOL_CALLS) and per turn (the budget)
            if over is not None:
                # The model was told the limit and still calls tools: end the turn here (its calls are
                # not run, and not stored, so the history keeps every tool_use paired with a result).
                step_text = ""
                reply.status, reply.error = "incomplete", str(over)
                yield StreamEvent("error", error=over)
                break
            blocks, results = yield from self._run_tools(step, runner, reply, scope, cancel)
            loop += [{"role": "assistant", "content": blocks}, {"role": "user", "content": results}]
            too_long = yield from self._store_step(request, loop, step, blocks, results, calibration)
            if too_long is not None:  # not sent: the API would refuse it for its length
                step_text = ""
                reply.status, reply.error = "incomplete", str(too_long)
                yield StreamEvent("error", error=too_long)
                break
        calibration.save(self.metadata)
        self._save_metadata()
        yield from self._finish(message, request, reply, ctx, loop, text_parts, step_text, user_id, cancel)

    # -- the steps of a turn -----------------------------------------------------------------------------
    def _new_scope(self, message: str, cancel: threading.Event | None) -> "TurnScope":
        """What this message shares with every delegate it causes: the turn budget (core/chat/turn_budget.py),
        the egress rule (core/agent/egress.py) and the nodes sent to any model so far."""
        sent, raw_sql = self.repo.sent_node_ids(self.id)
        scope = TurnScope(TurnBudget.from_config(self.config), Egress(), sent, raw_sql=raw_sql)
        ask = self.confirm_fetch

        def allowed(url: str) -> bool:  # asked of the user; never after a stop, and a late yes is a no
            return not _stopped(cancel) and bool(ask(url)) and not _stopped(cancel)

        # A sub-chat continued directly (cairn ask --chat SUB): its earlier "user" messages are the tasks
        # a model wrote, not the user's words.
        earlier = [] if "parent_chat_id" in self.metadata else self.repo.user_texts(self.id)
        scope.egress = Egress(user_texts=[*earlier, message], ask=allowed if ask is not None else None,
                              hidden_seen=lambda: self._never_send_seen(scope))
        return scope

    def _never_send_seen(self, scope: TurnScope) -> list[str]:
        """The never_send dimensions ([privacy]) of the notes a model of this chat has been given: any of
        them at all once raw SQL rows were (they could hold any note's text)."""
        hidden = sorted({d.lower() for d in self.config.privacy.never_send})
        if not hidden:
            return []
        where = "" if scope.raw_sql else " AND node_id IN (SELECT value FROM json_each(?))"
        params = (json.dumps(hidden),) if scope.raw_sql else (json.dumps(hidden), json.dumps(sorted(scope.seen())))
        rows = self.store.db.execute(
            "SELECT DISTINCT lower(dimension) FROM node_dimensions WHERE lower(dimension) IN"
            " (SELECT value FROM json_each(?))" + where, params).fetchall()
        return sorted(r[0] for r in rows)

    def _prepare(self, message: str, cancel: threading.Event | None) -> tuple[ContextRequest, list[str], object]:
        """The request for this message: the history repaired (a tool call an earlier crash left unanswered:
        the APIs refuse such a history), the rolling summary made if due, and the context-window policy
        (core/chat/window.py: cut to fit, or refuse before anything is sent). Returns it, the notices of
        what was cut, and the summary request made for it (its sent_log row and usage), if any."""
        self.repair_history()
        summary = self._maybe_summarise(cancel)
        request = self.request(message)
        calibration = window.Calibration.from_metadata(self.metadata)
        forced: list = []

        def summarise_to_fit(keep: int) -> list[dict] | None:
            upto = self.metadata.get("summary_upto", 0)
            made = self._maybe_summarise(cancel, force=True, keep=keep)
            if made is not None:
                forced.append(made)
            if self.metadata.get("summary_upto", 0) == upto:  # nothing summarised (too few exchanges, failed)
                return None
            return self.history()

        fitted, notices = window.fit(self.provider, Turn(request, [], self.chat_key), calibration,
                                     summarise=summarise_to_fit, message=message)
        return fitted.request, notices, summary or (forced[0] if forced else None)

    def _tool_context(self, scope: "TurnScope", cancel: threading.Event | None) -> ToolContext:
        """What the model's tools may reach and do this turn: the send policy, the agent's tool scope,
        the user's confirmation for edits, the egress rule for fetches, delegation and skills."""
        ctx = ToolContext(self.store, self.searcher, policy=self.engine.policy, tool_scope=self.agent.tool_scope,
                          local_addresses=self.config.capture.local_addresses, actor=history.model_in_chat(self.id),
                          confirm=self._confirm_unless_stopped(cancel), egress=scope.egress,
                          private_seen=lambda: self._never_send_seen(scope),
                          delegate=lambda agent, task: self._delegate(agent, task, cancel),
                          activate_skill=self._activate_skill)
        scope.reads.append(ctx.touched)
        return ctx

    def _store_user_message(self, message: str, request: ContextRequest, replacing: int | None, summary,
                            reply: Reply) -> int:
        """Store the user's message with the suffix it was sent with (the replaced turn leaves as its
        replacement arrives, never before); name it on the summary's row; title a new chat."""
        with self.store.db.transaction():
            if replacing is not None:
                self.repo.supersede_from(self.id, replacing)
            user_id = self._insert("user", [_text_block(message)],
                                   sent={"suffix": request.suffix.text,
                                         "passages": {str(p.n): p.node_id for p in request.suffix.passages},
                                         "passage_spans": citations.passage_spans(request.suffix.text,
                                                                                  request.suffix.passages)})
        if summary is not None:  # the summary was made for this turn: its row names the turn's message
            usage_log.attach_message(self.store, summary[0], user_id)
            reply.side_usage["summary"] = summary[1].as_dict()
        if not self.metadata.get("title"):
            self.metadata["title"] = message.strip().splitlines()[0][:80]
            self.repo.set_title(self.id, self.metadata["title"])
        return user_id

    def _not_sent(self, request: ContextRequest, loop: list[dict], scope: "TurnScope",
                  cancel: threading.Event | None) -> StreamEvent | None:
        """The event that ends the turn instead of its next request, or None to send it: the user stopped
        it (after a tool call, a summary), a spending cap would be passed ([chat] max_usd_per_day,
        max_usd_per_chat: core/chat/cost.py), or the message has used its requests (the turn budget)."""
        if _stopped(cancel):
            return StreamEvent("stop", stop_reason="cancelled")
        refused = self.spend_guard(self.provider, Turn(request, loop, self.chat_key)) or scope.budget.take_request()
        return StreamEvent("error", error=refused) if refused is not None else None

    def _stream_step(self, turn: Turn, step: "_Step", reply: Reply, calibration: "window.Calibration",
                     cancel: threading.Event | None) -> Iterator[StreamEvent]:
        """Send one request and pass its events on, gathering its text, tool calls, usage and end."""
        reply.requests += 1
        estimated, reported = window.raw_estimate(self.provider, turn), 0
        for event in self.provider.stream(turn, cancel):
            if event.type == "text":
                step.text += event.text
            elif event.type == "tool_call":
                step.calls.append(event.tool_call)
            elif event.type == "usage":
                reply.usage = reply.usage + event.usage
                step.usage = step.usage + event.usage
                reported += event.usage.input if event.usage is not None else 0
            elif event.type == "stop":
                step.stop = event.stop_reason
            elif event.type == "error":
                step.error = event.error
            yield event
        calibration.record(estimated, reported)

    def _tool_limit(self, reply: Reply, scope: "TurnScope") -> ProviderError | None:
        """Why the tool calls just asked for end the turn unrun: this agent passed MAX_TOOL_CALLS, or the
        message spent its tool calls (core/chat/turn_budget.py) and the model still calls tools."""
        if reply.tool_calls > MAX_TOOL_CALLS:
            return ProviderError(f"Stopped: the model kept calling tools after the limit of {MAX_TOOL_CALLS} "
                                 "tool calls per turn; the reply so far is kept, marked incomplete.", kind="tool_limit")
        if scope.budget.tool_calls_spent:
            return scope.budget.spent_error()
        return None

    def _run_tools(self, step: "_Step", runner: ToolRunner, reply: Reply, scope: "TurnScope",
                   cancel: threading.Event | None) -> Iterator[StreamEvent]:
        """Run the step's tool calls (each within the limits, each result fenced when its text is not the
        user's: core/chat/fence.py); returns the assistant's blocks and the results."""
        blocks = ([_text_block(step.text)] if step.text else []) + [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments if c.arguments is not None else {}}
            for c in step.calls]
        results = []
        before = set(runner.ctx.touched)
        for call in step.calls:
            reply.tool_calls += 1
            if _stopped(cancel):  # the user stopped the turn during an earlier call of this step
                content, is_error = NOT_RUN, True
            elif reply.tool_calls > MAX_TOOL_CALLS:
                content, is_error = (f"Tool call limit reached ({MAX_TOOL_CALLS} per turn); answer with what "
                                     "you have."), True
            elif (spent := scope.budget.take_tool_call()) is not None:
                content, is_error = spent, True
            elif call.arguments is None:
                content, is_error = f"Invalid tool input: {call.error}. Send a JSON object.", True
            else:
                try:
                    content, is_error = result_text(runner.run(call.name, call.arguments)), False
                except ToolError as exc:  # may quote a server (a capture's error) as well as Cairn
                    content, is_error = str(exc), True
                if SQL_ROWS in runner.ctx.origins:
                    scope.raw_sql = step.raw_sql = True
            shown = content  # for the user: the result without the fence the model gets
            if fence.sources(runner.ctx.origins):
                content = fence.fence(content, "tool result with text from " + fence.sources(runner.ctx.origins))
            result = {"type": "tool_result", "tool_use_id": call.id, "content": content}
            if is_error:
                result["is_error"] = True
            results.append(result)
            yield StreamEvent("tool_result", text=shown[:500], stop_reason="error" if is_error else "ok")
        step.read = runner.ctx.touched - before
        return blocks, results

    def _store_step(self, request: ContextRequest, loop: list[dict], step: "_Step", blocks: list[dict],
                    results: list[dict], calibration: "window.Calibration") -> Iterator[StreamEvent]:
        """Cap this turn's largest tool results so the next request fits too (core/chat/window.py), then
        store the step (one transaction: never a call without its answer). Returns the refusal when even
        capped it would not fit."""
        too_long = None
        try:
            _, notices = window.fit(self.provider, Turn(request, loop, self.chat_key), calibration,
                                    drop_passages=False)
        except window.TooLong as exc:
            notices, too_long = [], exc
        self.repo.insert_step(self.id, blocks, results, read=step.read, raw_sql=step.raw_sql)
        for notice in notices:
            yield StreamEvent("notice", text=notice)
        return too_long

    def _finish(self, message: str, request: ContextRequest, reply: Reply, ctx: ToolContext, loop: list[dict],
                text_parts: list[str], final: str, user_id: int, cancel: threading.Event | None) -> Iterator[StreamEvent]:
        """Store the reply with its usage, citations (checked: core/chat/citations.py) and status; the
        optional model check of the citations; memory use and the agent's memory notes."""
        reply.text = "\n\n".join(t for t in text_parts if t.strip())
        reply.created_nodes = list(ctx.created)
        passages = {str(p.n): p.node_id for p in request.suffix.passages}
        reply.citations = {"passages": passages, "nodes": citations.cited_node_ids(reply.text)}
        pages = {str(p.n): p.page for p in request.suffix.passages if p.page is not None}
        if pages:  # passages from a paged document (a captured PDF): the sources say "p. 4"
            reply.citations["pages"] = pages
        reply.citation_check = self._check_citations(reply, request, loop, ctx)
        stored = dict(reply.citations, check=reply.citation_check.as_dict()) if reply.citation_check else reply.citations
        reply.message_id = self._insert("assistant", [_text_block(final)] if final else [_text_block("")],
                                        usage=reply.usage.as_dict(), citations=stored, status=reply.status,
                                        sent={"error": reply.error} if reply.error else None)
        if reply.citation_check and self.config.chat.check_citations == "model":
            # after the reply is stored and complete; yields the "citation_check" phase event
            yield from self._judge_citations(reply, request, user_id, cancel)
        # Memory nodes used this turn (a retrieved passage, or read by a tool) count as used (core.graph.memory).
        memory.record_access(self.store, [p.node_id for p in request.suffix.passages] + sorted(ctx.read))
        self._remember(message, reply)

    # -- citation check (core/chat/citations.py) -----------------------------------------------------------
    def _check_citations(self, reply: Reply, request: ContextRequest, loop: list[dict],
                         ctx: ToolContext) -> "citations.CitationCheck | None":
        """Each [N] / [NODE:id] of the reply against the context sent for this turn (chat.check_citations)."""
        if self.config.chat.check_citations == "off":
            return None
        sent = citations.sent_node_ids(request.snapshot.node_ids, request.suffix.node_ids,
                                       [*ctx.touched, *ctx.created],
                                       [*request.history, {"role": "user", "content": [_text_block(request.user_text)]},
                                        *loop])
        return citations.check(reply.text, reply.citations["passages"], sent,
                               existing=lambda ids: {n["id"] for n in self.store.get_nodes(ids)})

    def _confirm_unless_stopped(self, cancel: threading.Event | None) -> Callable[[str, dict], bool] | None:
        """The confirm callback, refused once the user stopped the turn: not asked after the stop, and an
        answer that comes after it (the dialog was open when the stop came) changes nothing."""
        if self.confirm is None:
            return None
        ask = self.confirm

        def confirm(action: str, detail: dict) -> bool:
            if _stopped(cancel):
                return False
            return bool(ask(action, detail)) and not _stopped(cancel)

        return confirm

    def _judge_citations(self, reply: Reply, request: ContextRequest, user_id: int,
                         cancel: threading.Event | None) -> Iterator[StreamEvent]:
        """The optional model check: one request asking whether each cited text supports its sentence,
        with the passages exactly as sent (read back from the user message's stored `sent`); the verdicts
        (or why the check failed, or that the user skipped it) are stored with the reply. Yields one
        `phase` event just before the request, so a UI can say the check is running."""
        result = reply.citation_check
        result.mode = "model"
        if reply.status != "complete":
            result.note = "citations not judged by the model: the reply is incomplete"
        elif self.provider.name == "offline":
            result.note = "citations not judged by a model: the offline provider quotes the passages themselves"
        else:
            texts = {f"[{n}]": text for n, text in citations.passage_texts(self.repo.sent(user_id)).items()}
            wanted = {i["ref"] for i in result.items if i["kind"] == "node" and i["status"] == "ok"}
            for node in self.store.get_nodes(sorted(wanted)):
                if self.engine.policy.allows(node):
                    body = "\n".join(x for x in (node["title"], node["description"], node["source"]) if x)
                    texts[f"[NODE:{node['id']}]"] = body[:citations.JUDGE_SOURCE_CHARS]
            if any(i["status"] == "ok" for i in result.items):
                _, covered = citations.judge_request(result.items, texts)
                log_id = None
                if covered and cancel is not None and cancel.is_set():
                    citations.skip(result)  # stopped as the reply ended: no request is sent
                else:
                    if covered:  # the judge request sends these nodes' text; its tokens go on the same row
                        yield StreamEvent("phase", text="citation_check")
                    if covered and _stopped(cancel):
                        citations.skip(result)  # stopped as the check was announced: no request is sent
                    elif covered and self._turn_scope is not None and self._turn_scope.budget.take_request():
                        result.note = ("citations not judged by the model: this message has used its model "
                                       "requests ([chat] max_requests_per_turn)")
                    else:
                        if covered:
                            log_id = usage_log.log_request(
                                self.store, purpose="citation_check", provider=self.provider.name,
                                model=self.provider.model, chat_id=self.id, message_id=user_id,
                                node_ids=[result.items[i]["node_id"] for i in covered
                                          if result.items[i]["node_id"] is not None])
                        citations.judge(result, texts, self.provider, self.chat_key, cancel, guard=self.spend_guard)
                        if log_id is not None and result.usage is not None:
                            usage_log.record_usage(self.store, log_id, result.usage)
                            reply.side_usage["citation_check"] = dict(result.usage)
        stored = dict(reply.citations, check=result.as_dict())
        self.repo.set_citations(reply.message_id, stored)

    def _insert(self, role: str, content: list[dict], *, sent: dict | None = None, usage: dict | None = None,
                citations: dict | None = None, status: str = "complete") -> int:
        return self.repo.insert_message(self.id, role, content, sent=sent, usage=usage, citations=citations,
                                        status=status)

    # -- memory --------------------------------------------------------------------------------------
    def _remember(self, message: str, reply: Reply) -> None:
        """allow_write agents keep run input (80+ characters) and output as type='memory' nodes."""
        if not self.agent.allow_write or reply.status != "complete":
            return
        made_in = {"chat_id": self.id, "message_id": reply.message_id, "agent": self.agent.name}
        # After a never_send note was seen, what the model says (and a task it wrote) may quote it: the
        # memory keeps those dimensions, so it stays as private as the note.
        private = self._never_send_seen(self._turn_scope) if self._turn_scope is not None else []
        if len(message.strip()) >= MEMORY_MIN_CHARS:
            # a delegate's "message" is the task its caller (a model) wrote
            asked_by = provenance.USER if self.depth == 0 and "parent_chat_id" not in self.metadata else provenance.MODEL
            self.store.add_node(f"Asked: {message.strip()[:60]}", message, type="memory", origin=asked_by,
                                dimensions=private, metadata={"provenance": {**made_in, "part": "input"}})
        if reply.text.strip():
            self.store.add_node(f"Answered: {message.strip()[:60]}", reply.text, type="memory", origin=provenance.MODEL,
                                dimensions=private, metadata={"provenance": {**made_in, "part": "output"}})

    # -- delegation ----------------------------------------------------------------------------------
    def _delegate(self, agent_name: str, task: str, cancel: threading.Event | None = None) -> str:
        """Run `task` in a sub-chat of `agent_name`, with the same stop flag (a stop reaches every depth)."""
        if _stopped(cancel):
            raise ToolError("Stopped: the user stopped the turn; the task was not handed over.")
        scope = self._turn_scope
        refused = scope.budget.can_delegate()
        if refused is not None:
            raise ToolError(refused)
        target = profiles.get(agent_name, self.config)
        if target.name == self.agent.name:
            raise ToolError(f"An agent cannot delegate to itself ({agent_name}).")
        if self.depth + 1 > MAX_DELEGATION_DEPTH:
            raise ToolError(f"Delegation depth limit reached ({MAX_DELEGATION_DEPTH}); do the task yourself.")
        # The delegate sees the conversation (text only), not the caller's instructions or tools.
        seen = []
        for m in self.history():
            texts = [b for b in m["content"] if b.get("type") == "text" and b.get("text")]
            if texts:
                seen.append({"role": m["role"], "content": texts})
        while seen and seen[-1]["role"] == "user":
            seen.pop()  # the delegated task is the next user message
        # The base provider: the delegate runs on its own model (core/chat/request.py model_for), not the caller's.
        sub = Chat(self.store, self.config, self.base_provider, agent=target.name, searcher=self.searcher,
                   confirm=self.confirm, depth=self.depth + 1, inherited=seen, parent_id=self.id, now=self.now,
                   confirm_fetch=self.confirm_fetch, scope=scope)
        for _ in sub.send(task, cancel):
            pass
        result = sub.last_reply
        if _stopped(cancel) and result.status != "complete":
            raise ToolError(f"Stopped: the user stopped the turn before the {target.name} agent finished.")
        if result.error:
            raise ToolError(f"The {target.name} agent failed: {result.error}")
        return result.text

    # -- skills --------------------------------------------------------------------------------------
    def _activate_skill(self, name: str) -> str:
        """activateSkill: the skill's text (bounded) as the tool result, recorded in the chat's metadata
        (`active_skills`: names, oldest activation first; `skill_texts`: the text sent and the last
        message id before it) so a rolling summary can re-attach it."""
        from core.agent import skills

        catalog = skills.load(self.engine.skills_dir)
        name = name.strip().lower()
        skill = catalog.skills.get(name)
        if skill is None:
            raise ToolError(f"There is no skill {name!r}; the skills are: {', '.join(catalog.names) or '(none)'}.")
        active = list(self.metadata.get("active_skills", []))
        if name in active and self._skill_in_view(name):
            return (f"The {name} skill is already active: its instructions are earlier in this conversation. "
                    "Keep following them.")
        text = skills.activation_text(skill)
        last = self.repo.last_message_id(self.id)
        self.metadata["active_skills"] = [n for n in active if n != name] + [name]
        self.metadata.setdefault("skill_texts", {})[name] = {"after_message": last, "text": text}
        self._save_metadata()
        return text

    def _skill_in_view(self, name: str) -> bool:
        """Whether the model still sees the skill's text: its activation is after the summary, or the
        summary re-attached it (a skill dropped from the re-attached block may be activated again)."""
        state = self.metadata.get("skill_texts", {}).get(name)
        if state is None:
            return False
        if state["after_message"] >= self.metadata.get("summary_upto", 0):
            return True
        return name in self.metadata.get("skills_reattached", [])

    def _reattach_skills(self, upto: int) -> None:
        """After a summary up to message `upto`: the block of active skills whose activation it replaced."""
        from core.agent import skills

        state = self.metadata.get("skill_texts", {})
        texts = [(n, state[n]["text"]) for n in self.metadata.get("active_skills", [])
                 if n in state and state[n]["after_message"] < upto]
        block, kept, dropped = skills.reattach_block(texts)
        self.metadata["skills_block"] = block
        self.metadata["skills_reattached"] = kept
        self.metadata["skills_dropped"] = dropped

    # -- rolling summary -----------------------------------------------------------------------------
    def can_summarise(self) -> bool:
        """Whether the rolling summary has older messages to fold (what the window policy tries first)."""
        if self.provider.name == "offline":
            return False
        return bool(_older([r for r in self.repo.rows(self.id) if r["id"] > self.metadata.get("summary_upto", 0)]))

    def _maybe_summarise(self, cancel: threading.Event | None = None, *, force: bool = False,
                         keep: int = SUMMARY_KEEP_EXCHANGES) -> "tuple[int, Usage] | None":
        """Fold the older history into the rolling summary when it has grown past the threshold (`force`:
        whatever its size, for the context-window policy, core/chat/window.py, which may ask to `keep` fewer
        of the last exchanges, down to none).
        Returns (its sent_log row id, its usage) when a summary request was made (also a failed one or
        one the user stopped: then nothing is summarised). After a stop no summary request is sent."""
        if _stopped(cancel):
            return None
        history_rows = [r for r in self.repo.rows(self.id) if r["id"] > self.metadata.get("summary_upto", 0)]
        size = sum(estimate_tokens(r["content"]) for r in history_rows)
        if (size < SUMMARY_THRESHOLD_TOKENS and not force) or self.provider.name == "offline":
            return None
        old = _older(history_rows, keep)
        if not old:
            return None
        if self._turn_scope is not None and self._turn_scope.budget.take_request() is not None:
            return None  # this message has used its requests (core/chat/turn_budget.py): go on unsummarised
        transcript = []
        if self.metadata.get("summary"):
            transcript.append("Earlier summary:\n" + self.metadata["summary"])
        for r in old:
            for b in json.loads(r["content"]):
                if b.get("type") == "text" and b.get("text"):
                    transcript.append(f"{r['role']}: {b['text']}")
                elif b.get("type") == "tool_use":
                    transcript.append(f"{r['role']} called {b['name']}({json.dumps(b['input'])[:300]})")
        # An older message may alone be larger than the window (a pasted document): the transcript is
        # cut to what the summary request can carry with room for its 2,048-token reply.
        room = window.budget(self.provider.facts, 2048) - estimate_tokens(SUMMARY_PROMPT) - 64
        transcript = window.clip_to_fit(transcript, max(int(room * 0.95), 0))  # a margin for JSON escapes
        log_id = usage_log.log_request(self.store, purpose="summary", provider=self.provider.name,
                                       model=self.provider.model, chat_id=self.id)  # sends no node's content
        try:
            reply = model_reply.complete(self.provider, SUMMARY_PROMPT, "\n\n".join(transcript),
                                         chat_key=self.chat_key + "-summary", max_tokens=2048, cancel=cancel,
                                         guard=self.spend_guard)
        except model_reply.ReplyFailed as exc:
            usage_log.record_usage(self.store, log_id, exc.usage)  # the tokens counted before it failed
            self.metadata["summary_error"] = str(exc)  # continue unsummarised; shown by `cairn chats`
            self._save_metadata()
            return log_id, exc.usage
        text, usage = reply.text, reply.usage
        usage_log.record_usage(self.store, log_id, usage)
        if text.strip() and reply.stop != "cancelled":  # a summary cut off by a stop is not kept
            self.metadata["summary"] = text.strip()
            self.metadata["summary_upto"] = old[-1]["id"]
            self._reattach_skills(old[-1]["id"])
            self.metadata.pop("summary_error", None)
            self._save_metadata()
        return log_id, usage

