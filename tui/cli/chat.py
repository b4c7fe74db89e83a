"""`cairn context` and `cairn ask`: the request the next message would send, and sending it."""

from __future__ import annotations

import json
import sys

from core.agent.profiles import BUILT_IN
from core.errors import InvalidInput
from core.safe_text import printable
from tui.cli.common import Out, UsageError, Verbs, add_provider_options, load_config, open_store, text_arg
from tui.cli.questions import Question, Questions


def _focus(args):
    from core.chat.focus import Focus

    ids: list[int] = []
    for part in (args.focus or "").split(","):
        part = part.strip()
        if part:
            if not part.isdigit():
                raise InvalidInput(f"--focus takes node ids separated by commas, not {part!r}.")
            ids.append(int(part))
    if args.primary is not None and args.primary not in ids:
        raise UsageError(f"--primary {args.primary} is not one of the --focus ids; add it to --focus.")
    return Focus(tuple(ids), args.primary if args.primary is not None else (ids[0] if ids else None))


def cache_line(model: str, facts, prefix_est: int) -> str:
    """The cached prefix against the model's minimum (core/providers/models.py)."""
    if not facts.min_cacheable:
        return f"cached prefix ~{prefix_est} tokens; {model} on a local server reuses any common prefix"
    below = prefix_est < facts.min_cacheable
    return (f"cached prefix ~{prefix_est} tokens; {model} caches prefixes from {facts.min_cacheable} tokens"
            + (" — this one is too short to be cached" if below else ""))


def cmd_context(args, out: Out) -> int:
    """The exact request body the next message would send, and its blocks (no key needed)."""
    from core.chat.preview import next_request
    from core.chat.request import cache_note
    from core.providers.base import Turn
    from core.providers.factory import preview_provider

    cfg = load_config(args)
    provider = preview_provider(cfg)
    focus = _focus(args)
    with open_store(args) as store:
        for node_id in focus.ordered:
            store.get_node(node_id)  # a clear error for an unknown id
        preview = next_request(store, cfg, provider, args.message, focus=focus, chat_id=args.chat or None)
        request, retrieval_note, provider = preview.request, preview.retrieval_note, preview.provider  # agent's model
        last_usage = None
        if preview.chat is not None:
            # Estimates before sending; what the provider reported for the last reply corrects them.
            replies = [m for m in preview.chat.messages() if m["role"] == "assistant" and m["usage"]]
            last_usage = replies[-1]["usage"] if replies else None
        body = provider.body(Turn(request, [], preview.chat_key))
        blocks = [b.summary() for b in request.blocks()]
        window = preview.window(args.message)  # what the context-window policy would cut, or refuse
        policy = cache_note(request, provider)  # the TTLs chosen from the chat's pace (core/chat/cache_policy.py)
    facts = provider.facts
    prefix_est = sum(b["tokens_est"] for b in blocks if b["cached"])
    result = {"provider": provider.name, "model": provider.model, "blocks": blocks,
              "tokens_est_total": sum(b["tokens_est"] for b in blocks), "node_ids": request.node_ids,
              "retrieval_note": retrieval_note, "agent": preview.agent_facts, "window": window.as_dict(),
              "cache": {"prefix_tokens_est": prefix_est,
                        "min_cacheable_tokens": facts.min_cacheable,
                        "model_known": facts.known, "assumed": facts.assumed,
                        "retirement": facts.retirement(),
                        "context_window": facts.context_window,
                        "policy": policy,
                        "plan": request.cache.as_dict() if request.cache is not None else None,
                        "last_reported_usage": last_usage},
              "body": body}
    if out.as_json:
        out.json(result)
    else:
        for b in blocks:
            out.text(f"{b['name']:>11} ", (("cached" if b["cached"] else "not cached").ljust(11), "green" if b["cached"] else "yellow"),
                     (f"~{b['tokens_est']} tokens (estimate)", "dim"))
        out.text(f"{'total':>11} ", " " * 11, (f"~{result['tokens_est_total']} tokens (estimate)", "dim"))
        out.text(preview.agent_line, style="dim")
        if provider.name != "offline":  # offline nothing is sent: no window to fit (as in the viewer)
            out.text(window.line, style="yellow" if window.cuts or window.refusal else "dim")
        cache = result["cache"]
        if provider.name != "offline":
            out.text(cache_line(provider.model, facts, prefix_est), style="yellow" if prefix_est < facts.min_cacheable else "dim")
            if policy:
                out.text(policy, style="dim")
            if facts.assumed:
                out.text(facts.assumed, style="yellow")
            if facts.retirement():
                out.text(facts.retirement(), style="yellow")
        if last_usage:
            out.text(f"last reply, as reported: input {last_usage['input']} (cache read {last_usage['cache_read']}, "
                     f"write {last_usage['cache_write']}), output {last_usage['output']}", style="dim")
        out.text("")
        if retrieval_note:
            out.text(retrieval_note, style="yellow")
        out.text(request.suffix.text or "(empty suffix)")
    return 0


def cmd_ask(args, out: Out) -> int:
    """Stream a reply; Ctrl-C stops it and keeps the partial reply (marked incomplete)."""
    import queue
    import threading

    from core.chat.conversation import Chat
    from core.providers.factory import make_provider

    cfg = load_config(args)
    provider = make_provider(cfg)
    if args.again and args.chat is None:
        raise UsageError("--again sends a chat's last message again: say which chat with --chat ID.")
    if args.message is None and not args.again:
        raise UsageError("Give the message (or - to read it from stdin); --chat ID --again alone resends the last one.")
    message = text_arg(args.message) if args.message is not None else None
    if message is not None and not message.strip():  # before a chat row is made: a refused ask leaves no empty chat
        raise InvalidInput("The message is empty.")
    focus = _focus(args)
    cancel = threading.Event()
    events: queue.Queue = queue.Queue()
    # --yes covers edits only; a fetch the user did not write needs --allow-fetch, or a terminal to ask at.
    questions = Questions(events, cancel, yes=args.yes, allow_fetch=args.allow_fetch)
    confirm, fetch = questions.confirm, questions.confirm_fetch

    with open_store(args) as store:
        for node_id in focus.ordered:
            store.get_node(node_id)  # a clear error for an unknown id, before a chat row is made
        chat = Chat(store, cfg, provider, chat_id=args.chat, confirm=confirm, confirm_fetch=fetch)
        chat.set_focus(focus)
        if message is None:  # --again alone: the same message, a new reply
            last = chat.last_message()
            if last is None:
                raise InvalidInput(f"Chat {chat.id} has no message of yours to send again.")
            message = last[1]
        failure: list[BaseException] = []
        finished: list = []  # the worker's last reply, kept here too: the queue's copy can be lost to a Ctrl-C

        def work():
            from core.graph.store import Store

            try:
                # SQLite connections belong to one thread: the worker opens its own.
                with Store(store.path) as own:
                    worker_chat = Chat(own, cfg, provider, chat_id=chat.id, confirm=confirm, confirm_fetch=fetch)
                    worker_chat.set_focus(_focus(args))
                    for event in worker_chat.send(message, cancel, again=args.again):
                        events.put(event)
                    finished.append(worker_chat.last_reply)
            except BaseException as exc:  # handed to the main thread, which reports it
                failure.append(exc)
            finally:
                events.put(None)  # the end of the turn (the reply, or the failure, is in `finished`/`failure`)

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        # A Ctrl-C is a KeyboardInterrupt wherever the main thread is at that moment: waiting on the queue,
        # printing a delta, between the two. Each of them stops the turn (the worker keeps the partial reply
        # and ends it as incomplete) and this loop goes on until the worker is done; a get cut short after
        # it took the end-of-turn item is noticed by the worker thread having ended.
        while True:
            try:
                try:
                    item = events.get(timeout=0.1)
                except queue.Empty:
                    if thread.is_alive():
                        continue
                    break
                if item is None:
                    break
                _show(item, out, questions)
            except KeyboardInterrupt:
                cancel.set()
        thread.join(timeout=5)
        reply = finished[0] if finished else None
        if failure:
            if args.chat is None:  # a new chat whose first message was refused before sending: no empty chat left
                chat.repo.drop_if_unused(chat.id)
            raise failure[0]
        passages = reply.citations.get("passages", {}) if reply else {}
        titles = {n["id"]: n["title"] for n in store.get_nodes(passages.values())} if passages else {}
    from core.chat.cost import Pricer

    pricer = Pricer.from_config(cfg)  # the reply and its side requests, on the chat's (its agent's) model
    cost = pricer.for_provider(reply.usage, chat.provider)
    for s in reply.side_usage.values():
        cost = cost + pricer.for_provider(s or {}, chat.provider)
    if out.as_json:
        out.json({"chat_id": chat.id, "message_id": reply.message_id, "text": reply.text, "status": reply.status,
                  "error": reply.error, "usage": reply.usage.as_dict(), "cost": cost.as_dict(),
                  "citations": reply.citations,
                  "citation_check": reply.citation_check.as_dict() if reply.citation_check else None,
                  "side_usage": reply.side_usage, "created_nodes": reply.created_nodes})
    else:
        print()
        if reply.status != "complete":
            out.text(f"[incomplete reply{': ' + reply.error if reply.error else ''}]", style="yellow")
        if reply.citation_check and reply.citation_check.lines():
            print()  # the citation check's problems, after a blank line (the reply text is as streamed)
            for line in reply.citation_check.lines():
                out.text(line, style="yellow")
        if passages:
            out.text("Sources:", style="bold")
            pages = reply.citations.get("pages") or {}  # a passage of a captured PDF: its page
            for n, node_id in passages.items():
                out.text(f"  [{n}] ", (f"[NODE:{node_id}] {titles.get(node_id, '(deleted)')}", "cyan"),
                         f", p. {pages[n]}" if n in pages else "")
        u = reply.usage
        side = "".join(f" · + {purpose.replace('_', ' ')} {s.get('input', 0)} in/{s.get('output', 0)} out"
                       for purpose, s in reply.side_usage.items() if s)
        out.text(f"chat {chat.id} · tokens in {u.input} (cache read {u.cache_read}, write {u.cache_write}) · out {u.output}"
                 f"{side} · {cost.label()}", style="dim")
    return 0 if reply.status == "complete" else 1


def _show(item, out: Out, questions: Questions) -> None:
    """One item of a streamed turn, on the main thread: a delta printed as it comes, a question asked
    (between the streamed lines), a tool call or refusal said on stderr."""
    if isinstance(item, Question):
        questions.answer(item)
    elif item.type == "text":
        if not out.as_json:  # each delta escaped on its own is safe (core/safe_text.py)
            sys.stdout.write(printable(item.text))
            sys.stdout.flush()
    elif item.type == "tool_call" and not out.as_json:
        call = item.tool_call  # whole up to 2,000 characters: a fetched address is seen entire
        shown = call.raw_arguments if len(call.raw_arguments) <= 2000 else call.raw_arguments[:2000] + "…"
        print(printable(f"\n[tool] {call.name} {shown}"), file=sys.stderr)
    elif item.type == "tool_result" and item.stop_reason == "error" and not out.as_json:
        # a refusal (a fetch not allowed, an edit not confirmed) is the user's to see, not only the model's
        print(printable(f"[not done: {item.text}]"), file=sys.stderr)
    elif item.type == "notice" and not out.as_json:  # e.g. what was cut to fit the context window
        print(printable(f"\n[{item.text}]"), file=sys.stderr)
    elif item.type == "phase" and item.text == "citation_check" and not out.as_json:
        print("\n[checking citations… Ctrl-C skips; the reply is kept]", file=sys.stderr)


def _chat_options(p) -> None:
    p.add_argument("--focus", metavar="ID,ID", help="node ids open in the Focus panel")
    p.add_argument("--primary", type=int, metavar="ID", help="the active tab (default: the first --focus id)")
    p.add_argument("--agent", choices=list(BUILT_IN),
                   help="the agent's instructions and tools (default: chat.agent in the config)")
    add_provider_options(p, "this time only (default: chat.provider in the config)",
                         "this time only (default: chat.model, else the provider's default)")
    p.add_argument("--chat", type=int, metavar="ID", help="continue this chat")


def register(verbs: Verbs) -> None:
    p = verbs.add("context", cmd_context, "show the exact request the next message would send")
    p.add_argument("message", help="the message it would send")
    _chat_options(p)
    p = verbs.add("ask", cmd_ask, "ask the chat a question (streams; Ctrl-C stops and keeps the partial reply)")
    p.add_argument("message", nargs="?", help="the message, or - to read it from stdin (with --again: the new text "
                   "of the last message; omitted: the same text)")
    p.add_argument("--again", action="store_true", help="with --chat: replace your last message and its reply — "
                   "regenerate (no MESSAGE) or edit and resend (MESSAGE); the old ones stay counted, out of the chat")
    _chat_options(p)
    p.epilog = ("Without a provider the reply is an offline answer (quotes from your notes, no model). To use a model: "
                "`cairn config set chat.provider anthropic` (or openai) and set $ANTHROPIC_API_KEY / $OPENAI_API_KEY, "
                "or pass --provider for one question; an OpenAI-compatible server (Ollama ...) also needs "
                "`cairn config set chat.base_url URL`.")
    p.add_argument("--yes", "-y", action="store_true", help="confirm the model's edits without asking (not its fetches: "
                   "see --allow-fetch)")
    p.add_argument("--allow-fetch", action="store_true", help="let the model fetch web addresses you did not write "
                   "in the chat without asking (what an address holds is sent to its server; without a terminal and "
                   "without this flag such fetches are refused)")
