"""Integrate a node into the graph: find the nodes it should be linked to and propose explained edges.

`propose` gathers candidates three ways and writes nothing:
- search: a hybrid search with the node's own text (title, description, start of its source);
- graph: neighbours of its neighbours, counted by how many neighbours they share with it;
- mentions: nodes whose title or alias its text names (core.assist.mentions).
The node itself, nodes already linked to it (either direction) and memory nodes are never proposed
(trashed nodes are gone from `nodes`, so they cannot be). Each proposal carries one confidence in
0..1 (CONFIDENCE below) and the reasons behind it.

With a model provider (anthropic, openai or a compatible server; the offline provider is none), one
request asks it to draft an explanation and a confidence for each candidate as a JSON list. The reply
is parsed strictly; a reply that is not exactly that, or a failed request, leaves the search proposals
as they were, without drafts, and `Proposals.warning` says why (never silently). Nodes with a
`privacy.never_send` dimension are not sent to a remote model: their proposals keep no draft, and if
the node being integrated is one, no request is made at all. What was sent is written to `sent_log`.

`apply` writes the proposals the user accepted, in one transaction, each with its explanation
(an edge without one is refused: edges are explained).
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from typing import Iterable

from core.chat import model_reply
from core.chat import usage_log
from core.errors import InvalidInput
from core.graph.privacy import SendPolicy

SEARCH_CANDIDATES = 50  # hybrid hits looked at
GRAPH_CANDIDATES = 50  # neighbours of neighbours looked at (those sharing the most neighbours)
QUERY_SOURCE_CHARS = 1000  # of the source, after title and description, in the search query
MIN_CONFIDENCE = 0.15  # proposals below this are left out
PROMPT_SOURCE_CHARS = {"node": 2000, "candidate": 500}
MAX_EXPLANATION = 500

# CONFIDENCE. Three pieces of evidence, each turned into a probability-like number, combined as a
# noisy-or (1 - the product of the misses), so any one can carry a proposal and agreement raises it:
#   text      cosine similarity between the node's text and the candidate's best chunk (exact, from
#             the vectors; not the hybrid score or rank, which are relative to the query's best hit
#             and say nothing absolute): 0 at COSINE_FLOOR or below, 1 at COSINE_FULL, linear between.
#             all-MiniLM-L6-v2 puts unrelated notes at ~0.0-0.25 and notes on one topic at ~0.5-0.8.
#   graph     k shared neighbours: GRAPH_MAX x (1 - 0.5^k): 1 -> 0.25, 2 -> 0.375, 3 -> 0.44; never
#             above GRAPH_MAX, so structure alone is never a confident proposal.
#   mention   the node's text names the candidate: MENTION_WEIGHT x the mention's score (1.0 title,
#             0.95 alias, fuzzy lower).
# With a model's draft, the confidence becomes the mean of this and the model's own confidence.
COSINE_FLOOR = 0.25
COSINE_FULL = 0.75
GRAPH_MAX = 0.5
MENTION_WEIGHT = 0.6

DRAFT_PROMPT = (
    "You link notes in a personal knowledge graph. You get one note (NODE) and candidate notes that may "
    "be related to it. For each candidate, write the explanation of an edge from NODE to it: one plain "
    "sentence saying how the two are connected, naming both (for example \"X was written by Y\" or \"X "
    "applies the method described in Y\"), and your confidence from 0 to 1 that the link is worth "
    "keeping. Reply with only a JSON array, one object per candidate, no other text:\n"
    '[{"target_id": <candidate id>, "explanation": "<one sentence>", "confidence": <0..1>}]'
)


@dataclass
class Proposal:
    target_id: int
    target_title: str
    explanation: str = ""  # the draft ('' when no model drafted one)
    confidence: float = 0.0
    reasons: list[str] = field(default_factory=list)
    created_via: str = "integrate"  # or "mention"
    type: str = "related"  # the edge's context.type ("mentions" for mention suggestions)

    def as_dict(self) -> dict:
        return asdict(self)


class Proposals(list):
    """A list of Proposal, best first, plus what the caller must show: `warning` (the model's drafts
    were not used, and why) and `drafted` (a model drafted the explanations)."""

    def __init__(self, items: Iterable[Proposal] = (), *, warning: str | None = None, drafted: bool = False,
                 model: str | None = None):
        super().__init__(items)
        self.warning = warning
        self.drafted = drafted
        self.model = model


class DraftError(Exception):
    """A model reply that is not the JSON list asked for (the message says what is wrong)."""


# -- confidence ---------------------------------------------------------------------------------
def confidence(cosine: float | None, shared: int = 0, mention: float = 0.0) -> float:
    """The documented combination above (CONFIDENCE)."""
    text = 0.0
    if cosine is not None:
        text = min(1.0, max(0.0, (cosine - COSINE_FLOOR) / (COSINE_FULL - COSINE_FLOOR)))
    graph = GRAPH_MAX * (1.0 - 0.5 ** shared) if shared > 0 else 0.0
    miss = (1.0 - text) * (1.0 - graph) * (1.0 - MENTION_WEIGHT * max(0.0, min(1.0, mention)))
    return round(1.0 - miss, 3)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# -- candidates -----------------------------------------------------------------------------------
def _query_text(node: dict) -> str:
    parts = (node["title"], node.get("description") or "", (node.get("source") or "")[:QUERY_SOURCE_CHARS])
    return "\n".join(p.strip() for p in parts if p and p.strip())


def linked_ids(store, node_id: int) -> set[int]:
    return {r[0] for r in store.db.execute(
        "SELECT to_node_id FROM edges WHERE from_node_id = ?1 UNION SELECT from_node_id FROM edges"
        " WHERE to_node_id = ?1", (int(node_id),))}


def search_proposals(store, searcher, node_id: int, *, limit: int = 8) -> list[Proposal]:
    """Proposals from search, graph and mentions alone (no model), best first."""
    from core.assist.mentions import suggest_links

    node = store.get_node(node_id)
    linked = linked_ids(store, node_id)
    skip = linked | {int(node_id)}
    query = _query_text(node)

    hits = {c.node_id: c for c in searcher.candidates(query, "hybrid", limit=SEARCH_CANDIDATES)
            if c.node_id not in skip}
    shared: dict[int, set[int]] = {}
    if linked:
        for via, other in searcher.neighbours(sorted(linked)):
            if other not in skip:
                shared.setdefault(other, set()).add(via)
    graph = sorted(shared, key=lambda n: (-len(shared[n]), n))[:GRAPH_CANDIDATES]
    mentions = {s.target_id: s for s in suggest_links(store, int(node_id))}

    ids = list(dict.fromkeys([*hits, *graph, *mentions]))
    if not ids:
        return []
    rows = {r["id"]: r for r in store.db.execute(
        "SELECT id, title, type FROM nodes WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),))}
    ids = [i for i in ids if i in rows and rows[i]["type"] != "memory"]
    cosines = searcher.node_cosines(searcher.query_vector(query), ids) if query else {}

    out: list[Proposal] = []
    for target in ids:
        cos = cosines.get(target)
        k = len(shared.get(target, ()))
        mention = mentions.get(target)
        reasons = []
        if target in hits:
            reasons.append(f"hybrid match {hits[target].score:.2f}")
        if cos is not None:
            reasons.append(f"similar text (cosine {cos:.2f})")
        else:
            reasons.append("not indexed yet (no vector)")
        if k:
            reasons.append(f"{_plural(k, 'shared neighbour')}")
        if mention is not None:
            reasons.append({"exact": "mentions its title", "alias": "mentions its alias",
                            "fuzzy": f"mentions it, spelled “{mention.mention}”"}[mention.match])
        conf = confidence(cos, k, mention.score if mention else 0.0)
        if conf >= MIN_CONFIDENCE:
            out.append(Proposal(target, rows[target]["title"], "", conf, reasons))
    out.sort(key=lambda p: (-p.confidence, p.target_id))
    return out[:max(1, int(limit))]


# -- model drafts ---------------------------------------------------------------------------------
def _brief(node: dict, chars: int) -> dict:
    out = {"id": node["id"], "title": node["title"]}
    if node.get("description"):
        out["description"] = node["description"]
    source = (node.get("source") or "").strip()
    if source:
        out["text"] = source[:chars] + ("…" if len(source) > chars else "")
    if node.get("dimensions"):
        out["dimensions"] = node["dimensions"]
    return out


def parse_drafts(text: str, candidate_ids: Iterable[int]) -> dict[int, tuple[str, float]]:
    """The model's reply as {target_id: (explanation, confidence)}; DraftError unless it is exactly a
    JSON list of {target_id, explanation, confidence} naming only candidates, each once (one markdown
    code fence around the JSON is allowed)."""
    allowed = set(candidate_ids)
    try:
        data = model_reply.json_payload(text)
    except model_reply.NotJSON as exc:
        raise DraftError("the reply was empty" if exc.empty else f"the reply is not JSON: {exc.error}") from None
    if not isinstance(data, list):
        raise DraftError(f"the reply is a JSON {type(data).__name__}, not a list")
    out: dict[int, tuple[str, float]] = {}
    for i, item in enumerate(data, 1):
        if not isinstance(item, dict):
            raise DraftError(f"item {i} is not an object")
        missing = {"target_id", "explanation", "confidence"} - set(item)
        if missing:
            raise DraftError(f"item {i} has no {', '.join(sorted(missing))}")
        target, explanation, conf = item["target_id"], item["explanation"], item["confidence"]
        if isinstance(target, bool) or not isinstance(target, int):
            raise DraftError(f"item {i}: target_id {target!r} is not a node id")
        if target not in allowed:
            raise DraftError(f"item {i} names node {target}, which was not a candidate")
        if target in out:
            raise DraftError(f"node {target} appears twice")
        if not isinstance(explanation, str) or not explanation.strip():
            raise DraftError(f"item {i} (node {target}) has an empty explanation")
        if len(explanation) > MAX_EXPLANATION:
            raise DraftError(f"item {i} (node {target}): the explanation is longer than {MAX_EXPLANATION} characters")
        if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0 <= conf <= 1:
            raise DraftError(f"item {i} (node {target}): confidence {conf!r} is not a number from 0 to 1")
        out[target] = (" ".join(explanation.split()), float(conf))
    return out


def draft(store, provider, node: dict, proposals: list[Proposal], *, never_send: Iterable[str] = (),
          cancel: threading.Event | None = None, guard=None) -> str | None:
    """Ask the model for explanations and confidences; update `proposals` in place. Returns a
    warning when the drafts could not be used (the proposals are then left exactly as they were)."""
    policy = SendPolicy.for_provider(never_send, provider)
    if not policy.allows(node):
        return (f"“{node['title']}” has a privacy.never_send dimension, so it is not sent to {provider.name}; "
                "the proposals come from search alone, without drafted explanations.")
    targets = store.get_nodes([p.target_id for p in proposals])
    sent = [t for t in targets if policy.allows(t)]
    if not sent:
        return ("Every candidate has a privacy.never_send dimension, so nothing was sent to "
                f"{provider.name}; the proposals have no drafted explanations.")
    payload = {"node": _brief(node, PROMPT_SOURCE_CHARS["node"]),
               "candidates": [_brief(t, PROMPT_SOURCE_CHARS["candidate"]) for t in sent]}
    log_id = usage_log.log_request(store, purpose="integrate", provider=provider.name, model=provider.model,
                                   node_ids=[node["id"], *[t["id"] for t in sent]])  # no chat: chat_id NULL
    try:
        reply = model_reply.complete(provider, DRAFT_PROMPT, json.dumps(payload, ensure_ascii=False, indent=1),
                                     chat_key=f"cairn-integrate-{node['id']}", max_tokens=2048, cancel=cancel,
                                     guard=guard)
    except model_reply.ReplyFailed as exc:
        usage_log.record_usage(store, log_id, exc.usage)  # the tokens counted before it failed
        return f"The model could not draft explanations ({exc}); showing the search proposals without drafts."
    usage_log.record_usage(store, log_id, reply.usage)
    if reply.stop == "cancelled":
        return "Drafting was cancelled; showing the search proposals without drafts."
    try:
        drafts = parse_drafts(reply.text, [t["id"] for t in sent])
    except DraftError as exc:
        return (f"The model's reply could not be used ({exc}); showing the search proposals without "
                "drafted explanations.")
    for p in proposals:
        if p.target_id in drafts:
            explanation, model_conf = drafts[p.target_id]
            p.explanation = explanation
            p.reasons.append(f"model {model_conf:.2f}")
            p.confidence = round((p.confidence + model_conf) / 2, 3)
    hidden = len(proposals) - len(sent)
    proposals.sort(key=lambda p: (-p.confidence, p.target_id))
    notes = []
    if hidden:
        notes.append(f"{_plural(hidden, 'candidate')} with a privacy.never_send dimension {'was' if hidden == 1 else 'were'} "
                     f"not sent to {provider.name} and {'has' if hidden == 1 else 'have'} no drafted explanation.")
    if len(drafts) < len(sent):
        notes.append(f"The model drafted explanations for {len(drafts)} of the {len(sent)} candidates it was sent; "
                     "the others have none.")
    return " ".join(notes) or None


def propose(store, searcher, node_id: int, *, limit: int = 8, provider=None, never_send: Iterable[str] = (),
            cancel: threading.Event | None = None, guard=None) -> Proposals:
    """Proposed edges from a node, best first; writes nothing but the sent_log row of a model request.
    `provider` None or offline: search alone, no drafts."""
    node = store.get_node(node_id)
    proposals = search_proposals(store, searcher, node_id, limit=limit)
    if provider is None or provider.name == "offline" or not proposals:
        return Proposals(proposals)
    warning = draft(store, provider, node, proposals, never_send=never_send, cancel=cancel, guard=guard)
    drafted = any(p.explanation for p in proposals)
    return Proposals(proposals, warning=warning, drafted=drafted, model=provider.model if drafted else None)


def mention_proposals(store, node_id: int, *, limit: int = 50) -> Proposals:
    """The node's mention suggestions (core.assist.mentions) as proposals: the sentence is the draft."""
    from core.assist.mentions import suggest_links

    out = []
    for s in suggest_links(store, int(node_id), limit=limit):
        reason = {"exact": "mentions its title", "alias": "mentions its alias",
                  "fuzzy": f"mentions it, spelled “{s.mention}”"}[s.match]
        out.append(Proposal(s.target_id, s.target_title, s.sentence, s.score, [reason], "mention", "mentions"))
    return Proposals(out)


# -- writing --------------------------------------------------------------------------------------
def apply(store, node_id: int, accepted: Iterable[Proposal]) -> list[dict]:
    """Write the accepted proposals as edges from the node, all or none (one transaction)."""
    accepted = list(accepted)
    seen: set[int] = set()
    for p in accepted:
        if not (p.explanation or "").strip():
            raise InvalidInput(f"The link to “{p.target_title}” has no explanation; edges are explained, so write "
                               "one (nothing was written).")
        if p.target_id in seen:
            raise InvalidInput(f"“{p.target_title}” is accepted twice; nothing was written.")
        seen.add(p.target_id)
    edges = []
    with store.db.transaction():
        for p in accepted:
            edges.append(store.add_edge(int(node_id), p.target_id, p.explanation.strip(), source="user",
                                        context={"type": p.type, "confidence": p.confidence,
                                                 "created_via": p.created_via}))
    return edges
