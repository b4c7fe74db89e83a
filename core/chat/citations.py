"""Citations in a reply: the one parser for `[N]`, `[N, M]`, `[N][M]`, `[NODE:id]` and
`[NODE:id:"title"]`, and the check that each one points at context that was actually sent.

A reply may only cite what the model saw. `[N]` must be one of this turn's numbered passages;
`[NODE:id]` must be a node whose content (or at least its id) went out in this turn's request: the
snapshot (core notes, hubs), the suffix (focused nodes, passages), what tools returned in this turn,
and what the history as sent still holds (tool results, the user's own words, the rolling summary).
Anything else is *dangling* and is shown as such; the reply text itself is never changed.

With `chat.check_citations = "model"` the same provider is then asked, in one request after the reply
is complete, whether each cited text supports the sentence that cites it (strict JSON verdicts). A
check that cannot be done says "citation check failed: <reason>"; one the user stops (escape, ctrl+c)
says "citation check skipped"; neither ever counts as a pass.

Things that only look like citations inside code (`a[1]` in a code span or a fenced block) are not
citations. Indented code blocks are not recognised (they are rare in replies and collide with lists).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from core.chat import model_reply

MAX_JUDGED = 40  # claims per model request; more are left unchecked (and say so)
JUDGE_SOURCE_CHARS = 3000  # of a cited node's text given to the judge
SENTENCE_CHARS = 300
MAX_NODE_ID = 2**63 - 1
SKIPPED = "citation check skipped: stopped before the model judged the citations"

# A group: `[NODE:12]`, `[NODE:12:"Title"]` (JSON-escaped title), `[NODE:12:Title]`, `[3]`, `[1, 2]`.
# Not `\[1]` (escaped), not `[[1]]`, not a Markdown link's text `[1](url)`.
_GROUP = re.compile(
    r'(?<![\\\[])\['
    r'(?:NODE:(?P<node>\d+)(?::(?:"(?P<title>(?:[^"\\\n]|\\.)*)"|(?P<bare>[^\]\n"]{1,200})))?'
    r'|(?P<nums>\d{1,3}(?:\s*,\s*\d{1,3})*))'
    r'\](?!\()')
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.M)
_TICKS = re.compile(r"`+")
# The end of a sentence: . ! ? (and closing quotes/brackets), then citations that trail it, then space.
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’»)]*(?:[ \t]*\[[^\]\n]{1,60}\](?!\())*(?=\s|$)")


@dataclass(frozen=True)
class Citation:
    kind: str  # "passage" | "node"
    ref: int  # the passage number or the node id
    start: int  # the span of the whole bracket group in the text
    end: int
    title: str | None = None  # a [NODE:id:"title"]'s title, decoded

    @property
    def label(self) -> str:
        return f"[{self.ref}]" if self.kind == "passage" else f"[NODE:{self.ref}]"


def code_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) spans of fenced code blocks and inline code spans, in order."""
    spans: list[tuple[int, int]] = []
    pos = 0
    fences = list(_FENCE.finditer(text))
    i = 0
    while i < len(fences):
        opening = fences[i]
        mark = opening.group(1)
        close = None
        for j in range(i + 1, len(fences)):
            f = fences[j].group(1)
            if f[0] == mark[0] and len(f) >= len(mark) and not text[fences[j].end():].split("\n", 1)[0].strip():
                close = j
                break
        if close is None:  # an unclosed fence runs to the end of the text (as CommonMark reads it)
            spans.append((opening.start(), len(text)))
            break
        end = text.find("\n", fences[close].end())
        spans.append((opening.start(), len(text) if end < 0 else end))
        i = close + 1
    # inline code: a run of n backticks up to the next run of exactly n (outside fenced blocks)
    inline: list[tuple[int, int]] = []
    for a, b in [(0, 0)] + spans + [(len(text), len(text))]:
        if a > pos:
            inline += _inline_code(text, pos, a)
        pos = max(pos, b)
    return sorted(spans + inline)


def _inline_code(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    out = []
    runs = [m for m in _TICKS.finditer(text, lo, hi)]
    k = 0
    while k < len(runs):
        n = len(runs[k].group())
        match = next((r for r in runs[k + 1:] if len(r.group()) == n), None)
        if match is None:
            k += 1  # a lone run of backticks is literal text
            continue
        out.append((runs[k].start(), match.end()))
        k = runs.index(match) + 1
    return out


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in spans)


def groups(text: str) -> list[tuple[int, int, list[Citation]]]:
    """Each citation group outside code as (start, end, citations); `[1, 2]` is one group of two."""
    code = code_spans(text)
    out = []
    for m in _GROUP.finditer(text):
        if _inside(m.start(), code):
            continue
        if m.group("node") is not None:
            title = None
            if m.group("title") is not None:
                try:
                    title = json.loads(f'"{m.group("title")}"')
                except ValueError:
                    title = m.group("title")
            elif m.group("bare") is not None:
                title = m.group("bare").strip() or None
            cites = [Citation("node", int(m.group("node")), m.start(), m.end(), title)]
        else:
            cites = [Citation("passage", int(n), m.start(), m.end()) for n in re.split(r"\s*,\s*", m.group("nums"))]
        out.append((m.start(), m.end(), cites))
    return out


def parse(text: str) -> list[Citation]:
    """Every citation in the text, in order (code spans and blocks excluded)."""
    return [c for _, _, cites in groups(text) for c in cites]


def cited_node_ids(text: str) -> list[int]:
    """The node ids a reply cites as [NODE:id], sorted, once each."""
    return sorted({c.ref for c in parse(text) if c.kind == "node"})


def sentence_at(text: str, pos: int) -> str:
    """The sentence (or list item / line) holding position `pos`; a citation that trails a sentence's
    full stop (`… rivers. [1]`) belongs to that sentence."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    end = len(text) if end < 0 else end
    line = text[start:end]
    cut = 0
    for m in _SENTENCE_END.finditer(line):
        if m.end() > pos - start:
            return _tidy(line[cut:m.end()])
        cut = m.end()
    return _tidy(line[cut:])


def _tidy(sentence: str) -> str:
    s = " ".join(sentence.split())
    s = re.sub(r"^(?:[-*+]|\d{1,3}[.)])\s+", "", s)  # a list marker is not part of the sentence
    return s if len(s) <= SENTENCE_CHARS else s[:SENTENCE_CHARS - 1].rstrip() + "…"


# -- the check ------------------------------------------------------------------------------------------
@dataclass
class CitationCheck:
    """The verdict on one reply's citations. status: "ok" (every citation points at context that was
    sent, and with the model check each is supported), "problems", "failed" (the check itself could
    not be done: `error` says why; dangling items found before the failure are still listed),
    "skipped" (the user stopped the model check: the citations point at what was sent, but none was
    judged), or "none" (the reply cites nothing)."""

    mode: str
    items: list[dict] = field(default_factory=list)
    status: str = "none"
    error: str | None = None  # "citation check failed: <reason>"
    note: str | None = None  # e.g. why the model check did not run
    usage: dict | None = None  # of the model check's request
    skipped: bool = False  # the user stopped the model check before its verdicts came

    def as_dict(self) -> dict:
        out: dict[str, Any] = {"mode": self.mode, "status": self.status, "items": self.items}
        for key in ("error", "note", "usage"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.skipped:
            out["skipped"] = True
        return out

    @classmethod
    def from_dict(cls, data: dict) -> "CitationCheck":
        return cls(data.get("mode", "sent"), list(data.get("items") or []), data.get("status", "none"),
                   data.get("error"), data.get("note"), data.get("usage"), bool(data.get("skipped")))

    def settle(self) -> "CitationCheck":
        """Set the status from the items (and the error)."""
        if self.error:
            self.status = "failed"
        elif not self.items:
            self.status = "none"
        elif any(i["status"] != "ok" for i in self.items):
            self.status = "problems"
        elif self.skipped:
            self.status = "skipped"
        else:
            self.status = "ok"
        return self

    @property
    def dangling(self) -> list[dict]:
        return [i for i in self.items if i["status"] == "dangling"]

    def lines(self) -> list[str]:
        """One line per problem, for the chat pane and `cairn ask` (nothing when all is well)."""
        out: list[str] = []
        seen: set[str] = set()
        for item in self.items:
            status = item["status"]
            if status == "dangling":
                if item["citation"] in seen:
                    continue
                seen.add(item["citation"])
                out.append(f"⚠ {item['citation']} {item['why']}")
            elif status == "unsupported":
                out.append(f"✗ {item['citation']} does not support: ‘{item['sentence']}’"
                           + (f" ({item['why']})" if item.get("why") else ""))
            elif status == "unclear":
                out.append(f"? {item['citation']} may not support: ‘{item['sentence']}’"
                           + (f" ({item['why']})" if item.get("why") else ""))
            elif status == "unchecked" and not self.error:
                out.append(f"· {item['citation']} not checked: {item['why']}")
        if self.error:
            out.append(self.error)
        elif self.skipped:
            out.append(f"· {SKIPPED}")
        elif self.note:
            out.append(f"· {self.note}")
        return out


def check(reply_text: str, passages: dict, sent_node_ids: Iterable[int], *,
          existing: Callable[[list[int]], set[int]] | None = None, mode: str = "sent") -> CitationCheck:
    """Check every citation of a reply against what was sent with it.

    `passages` is this reply's `[N]` → node id map (keys as str or int); `sent_node_ids` the nodes
    in the context actually sent for this turn; `existing(ids)` returns which of those node ids exist
    (a cited node that does not exist is dangling even if it was somehow "sent")."""
    numbered = {int(k): int(v) for k, v in passages.items()}
    sent = {int(n) for n in sent_node_ids}
    found = set()
    items: list[dict] = []
    cites = [(c, sentence_at(reply_text, c.start)) for c in parse(reply_text)]
    node_refs = sorted({c.ref for c, _ in cites if c.kind == "node" and c.ref <= MAX_NODE_ID})
    alive = set(existing(node_refs)) if existing is not None and node_refs else set(node_refs)
    for c, sentence in cites:
        key = (c.kind, c.ref, sentence)
        if key in found:
            continue
        found.add(key)
        item = {"citation": c.label, "kind": c.kind, "ref": c.ref, "sentence": sentence, "node_id": None,
                "status": "ok", "why": ""}
        if c.kind == "passage":
            if c.ref in numbered:
                item["node_id"] = numbered[c.ref]
            else:
                item["status"] = "dangling"
                item["why"] = ("was not among the passages sent with this question"
                               + (f" (passages sent: {_ranges(sorted(numbered))})" if numbered else
                                  " (no passages were sent)"))
        else:
            item["node_id"] = c.ref
            if c.ref not in alive:
                item["status"], item["why"] = "dangling", "does not exist"
            elif c.ref not in sent:
                item["status"], item["why"] = "dangling", "was not in the context sent"
        items.append(item)
    return CitationCheck(mode, items).settle()


def _ranges(numbers: list[int]) -> str:
    return ", ".join(f"[{n}]" for n in numbers)


# -- what was sent ---------------------------------------------------------------------------------------
def sent_node_ids(snapshot_ids: Iterable[int], suffix_ids: Iterable[int], tool_ids: Iterable[int],
                  messages: Iterable[dict]) -> set[int]:
    """Node ids in the context sent for a turn: the snapshot's and suffix's, those tools returned
    (`ToolContext.touched` and `created`), and those the messages sent with the request still carry:
    `[NODE:id]` in user-side text (the user's words, the rolling summary) and nodes or edge ends in
    tool results. The model's own earlier replies do not count (a dangling citation repeated is
    still dangling)."""
    ids = {int(n) for n in [*snapshot_ids, *suffix_ids, *tool_ids]}
    for m in messages:
        for block in m.get("content") or []:
            kind = block.get("type")
            if kind == "text" and m.get("role") == "user":
                ids.update(c.ref for c in parse(block.get("text") or "") if c.kind == "node")
            elif kind == "tool_result":
                content = block.get("content")
                if isinstance(content, list):  # content blocks
                    content = "".join(b.get("text", "") for b in content if isinstance(b, dict))
                ids.update(_tool_result_nodes(content or ""))
    return ids


def _tool_result_nodes(content: str) -> set[int]:
    """Node ids in a tool result: objects with an id and a title (nodes), and node_id / from_node_id /
    to_node_id fields (search hits, edges); `[NODE:id]` written in text results (a delegate's answer)."""
    try:
        value = json.loads(content)
    except ValueError:
        return {c.ref for c in parse(content) if c.kind == "node"}
    out: set[int] = set()

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            if isinstance(v.get("id"), int) and "title" in v:
                out.add(v["id"])
            for key in ("node_id", "from_node_id", "to_node_id"):
                if isinstance(v.get(key), int):
                    out.add(v[key])
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str) and "[NODE:" in v:
            out.update(c.ref for c in parse(v) if c.kind == "node")

    walk(value)
    return out


# -- the passages as sent --------------------------------------------------------------------------------
def passage_spans(suffix_text: str, passages) -> dict[str, list[int]]:
    """Where each numbered passage (its `[N] [NODE:id:"title"]` header line and text) sits in the suffix
    as sent, as {"N": [start, end]}: stored in the user message's `sent` beside the suffix, so the
    passage text can be read back exactly (not from the node, which may have changed since)."""
    out: dict[str, list[int]] = {}
    pos = 0
    for p in passages:
        body = p.text.strip()
        head = suffix_text.find(f"[{p.n}] [NODE:{p.node_id}:", pos)  # the header, as core.chat.context writes it
        start = suffix_text.find(body, head if head >= 0 else pos)
        if not body or start < 0:
            continue  # not in the suffix: the model check says it could not give this text to the model
        out[str(p.n)] = [head if head >= 0 else start, start + len(body)]
        pos = start + len(body)
    return out


def passage_texts(sent: dict | None) -> dict[str, str]:
    """The passages' text as sent, by number, read back from a user message's stored `sent`."""
    suffix = (sent or {}).get("suffix") or ""
    return {n: suffix[a:b] for n, (a, b) in ((sent or {}).get("passage_spans") or {}).items()}


# -- the model check -------------------------------------------------------------------------------------
JUDGE_PROMPT = """\
You check citations in an answer written from a user's notes. For each numbered claim you get the
sentence and the text it cites. Decide whether the cited text supports the sentence:
"supported" (the text states or directly implies it), "unsupported" (it does not, or contradicts it),
or "unclear" (it is related but does not settle the claim).
Answer with JSON only, no prose and no code fence, exactly:
{"verdicts": [{"claim": 1, "verdict": "supported", "why": "one short sentence"}, ...]}
with one verdict for every claim."""
VERDICTS = {"supported": "ok", "unsupported": "unsupported", "unclear": "unclear"}


def judge_request(items: list[dict], texts: dict[str, str]) -> tuple[str, list[int]]:
    """The judge's user message and the indices of the items it covers (`texts` by citation label)."""
    covered = [i for i, item in enumerate(items) if item["status"] == "ok" and item["citation"] in texts]
    covered = covered[:MAX_JUDGED]
    labels = list(dict.fromkeys(items[i]["citation"] for i in covered))
    parts = ["Cited texts:"]
    for label in labels:
        parts.append(f"--- {label} ---\n{texts[label].strip()}")
    parts.append("Claims:")
    for k, i in enumerate(covered, 1):
        parts.append(f"Claim {k}: cites {items[i]['citation']}: {items[i]['sentence']}")
    return "\n\n".join(parts), covered


def parse_verdicts(answer: str, count: int) -> list[tuple[str, str]]:
    """The model's verdicts as (verdict, why) for claims 1..count; ValueError says what is wrong."""
    try:
        data = model_reply.json_payload(answer)  # a markdown code fence around it is allowed
    except model_reply.NotJSON:
        raise ValueError(f"the model's answer is not JSON ({' '.join(answer.split())[:80]!r})") from None
    if not isinstance(data, dict) or not isinstance(data.get("verdicts"), list):
        raise ValueError('the model\'s answer has no "verdicts" list')
    out: dict[int, tuple[str, str]] = {}
    for v in data["verdicts"]:
        if not isinstance(v, dict) or not isinstance(v.get("claim"), int) or not 1 <= v["claim"] <= count:
            raise ValueError(f"the model gave a verdict for no claim asked ({json.dumps(v)[:80]})")
        if v.get("verdict") not in VERDICTS:
            raise ValueError(f"the model's verdict {v.get('verdict')!r} is not supported, unsupported or unclear")
        why = v.get("why", "")
        out[v["claim"]] = (v["verdict"], why if isinstance(why, str) else str(why))
    missing = [k for k in range(1, count + 1) if k not in out]
    if missing:
        raise ValueError(f"the model gave no verdict for claim{'s' if len(missing) > 1 else ''} "
                         + ", ".join(map(str, missing)))
    return [out[k] for k in range(1, count + 1)]


def apply_verdicts(result: CitationCheck, covered: list[int], verdicts: list[tuple[str, str]]) -> None:
    for i, (verdict, why) in zip(covered, verdicts):
        result.items[i]["status"] = VERDICTS[verdict]
        result.items[i]["why"] = " ".join(why.split())[:200]
    for i, item in enumerate(result.items):
        if item["status"] == "ok" and i not in covered:
            item["status"] = "unchecked"
            item["why"] = (f"more than {MAX_JUDGED} citations in one reply" if len(covered) >= MAX_JUDGED
                           else "its text could not be given to the model")
    result.settle()


def skip(result: CitationCheck) -> CitationCheck:
    """The user stopped the model check (escape in the chat pane, ctrl+c in `cairn ask`): no verdicts;
    the items keep what the sent check found, and the result says it was skipped."""
    result.mode = "model"
    result.skipped = True
    return result.settle()


def judge(result: CitationCheck, texts: dict[str, str], provider, chat_key: str, cancel=None,
          guard=None) -> list[int]:
    """Ask the provider, in one request, whether each cited text supports its sentence; update `result`
    in place. Returns the node ids whose text was sent (for sent_log). Any failure (provider error,
    answer not the JSON asked for) sets `result.error`; `cancel` set before the answer came skips the
    check (`skip`); neither passes silently."""
    from core.providers.base import ProviderError, Usage

    result.mode = "model"
    prompt, covered = judge_request(result.items, texts)
    if not covered:
        apply_verdicts(result, [], [])
        return []
    sent_ids = sorted({result.items[i]["node_id"] for i in covered if result.items[i]["node_id"] is not None})
    usage = Usage()
    try:
        try:
            reply = model_reply.complete(provider, JUDGE_PROMPT, prompt, chat_key=chat_key + "-citations",
                                         max_tokens=min(4096, 512 + 96 * len(covered)), cancel=cancel,
                                         guard=guard)
        except model_reply.ReplyFailed as exc:
            usage = exc.usage  # what the provider counted before it failed
            raise
        usage = reply.usage
        result.usage = usage.as_dict()
        if reply.stop == "cancelled":
            skip(result)
            return sent_ids
        apply_verdicts(result, covered, parse_verdicts(reply.text, len(covered)))
    except (ProviderError, ValueError) as exc:
        result.usage = usage.as_dict()
        result.error = f"citation check failed: {_about_the_check(str(exc))}"
        result.settle()
    return sent_ids


def _about_the_check(reason: str) -> str:
    """A provider's error as said of the judge's request: "the partial reply is kept, marked incomplete"
    is about a chat reply, and the reply whose citations were being checked is complete."""
    return _PARTIAL_KEPT.sub("", reason)


_PARTIAL_KEPT = re.compile(r";\s*the partial reply is kept, marked incomplete")
