"""The context engine: graph + Focus tabs + message → a provider-neutral request.

Block order is the contract (DESIGN.md, "The context engine"): a stable prefix (tools, system part,
core notes, background hubs, history as sent) that providers cache, then a volatile suffix appended
to the new user message (focused nodes, retrieved passages, the date/time) that is never stored in
history. The system part is rendered once per conversation (a snapshot), so it is byte-identical on
every turn; a Focus change re-renders only the focus block.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

from core.search import lexical_rescue
from core.search import retrieval_fallback
from core.graph import memory, provenance
from core.agent import tools as tools_module
from core.agent.profiles import Agent, resolve_instructions
from core.graph.privacy import SendPolicy
from core.graph.retirement import RETIRED
from core.chat import fence
from core.chat.focus import Focus
from core.providers.request import Passage, Snapshot, Suffix
from core.graph.store import Store

BASE_CONTEXT = """\
You work inside Cairn, the user's personal knowledge graph.
- Nodes are notes (ideas, papers, people, projects) with a title, description, source text, link and dimensions (tags).
- Edges join two nodes and carry an explanation: a sentence saying why they connect.
- Nodes appear as [NODE:id:"title"]. Retrieved passages appear numbered [1], [2], … in a block at the end of the user's message.
- Cite what you use: [N] for a retrieved passage, [NODE:id] for a node. Never invent a citation; if the graph does not hold the answer, say so.
- The block at the end of each user message (focused nodes, retrieved passages, date/time) is context added by Cairn, not typed by the user.
""" + fence.RULE

# Junk control for retrieved passages, calibrated in issue 6 (bench/retrieval.py, SciFact train plus
# 30 off-topic questions in bench/data/offtopic_queries.txt). A passage enters the prompt only if its
# cosine to the message is at least MIN_COSINE (an absolute floor: the off-topic questions' best
# passages reach 0.10-0.37, relevant SciFact passages mostly 0.5-0.8) and its hybrid score is at
# least RELATIVE_CUTOFF times the best passage's (the hybrid score blends BM25 and cosine, each divided
# by the query's best, so "close to the best" is comparable across queries). On SciFact train:
# the old rule (cosine >= 0.30 and >= 0.75 x the best cosine, 6 at most) injected 4.6 passages a query,
# 19 % relevant; this one 2.8, 29 % relevant, with a relevant passage for 78 % of queries (81 % before);
# off-topic questions get 0.03 passages (0.17 before). A relative cutoff on cosine instead of the
# hybrid score was worse on all three counts (0.85: 3.2 passages, 26 % relevant, 75 %).
MIN_COSINE = 0.35
RELATIVE_CUTOFF = 0.80
MAX_PASSAGES = 6
RETRIEVAL_CANDIDATES = 20
PREVIEW_WORDS = 25
HUBS = 10


def cut(scored: list[tuple[float, dict]], min_cosine: float | None = None, relative: float | None = None,
        max_passages: int | None = None, message: str | None = None, store: Store | None = None,
        ) -> list[tuple[float, dict]]:
    """Junk control over (cosine, search hit) pairs in ranking order: keep those whose cosine is at
    least the floor and whose hybrid score is at least `relative` times the best, `max_passages` at most.
    The best is the best unboosted score (core.graph.memory's boost never raises the bar for other hits).
    With the `message`, one strong keyword match (its term rare in `store`) may pass under the floor
    (core.search.lexical_rescue)."""
    min_cosine = MIN_COSINE if min_cosine is None else min_cosine
    relative = RELATIVE_CUTOFF if relative is None else relative
    max_passages = MAX_PASSAGES if max_passages is None else max_passages
    if not scored:
        return []
    best = max((h["score"] or 0.0) / h.get("boost", 1.0) for _, h in scored)
    rescued = lexical_rescue.rescued(message, scored, relative * best, store) if message else None
    return [(c, h) for i, (c, h) in enumerate(scored)
            if (c >= min_cosine or i == rescued) and (h["score"] or 0.0) >= relative * best][:max_passages]


def _preview(text: str, words: int = PREVIEW_WORDS) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" …" if len(parts) > words else "")


def _retired(node: dict) -> bool:
    """Retired by distilling a chat (core.assist.distil): the node carries the `retired` dimension."""
    return any(d.lower() == RETIRED for d in node["dimensions"])


def node_ref(node: dict) -> str:
    return f'[NODE:{node["id"]}:{json.dumps(node["title"], ensure_ascii=False)}]'


class ContextEngine:
    """Builds the prefix once per conversation and the suffix per message / Focus change."""

    def __init__(self, store: Store, searcher, agent: Agent, *, background_enabled: bool = True,
                 policy: SendPolicy | None = None, skills_dir=None):
        self.store = store
        self.searcher = searcher
        self.agent = agent
        self.background_enabled = background_enabled
        self.policy = policy or SendPolicy()  # what may be sent to this chat's provider
        self.skills_dir = skills_dir  # the user's skills folder (None: beside the config file)
        self._focus = Focus()
        self._focus_text = ""
        self._focus_ids: list[int] = []
        self._node_lines: dict[tuple[int, str], str] = {}
        # Set by each retrieval: why it fell back to keyword search (core.search.retrieval_fallback), else None.
        self.retrieval_note: str | None = None

    # -- prefix ------------------------------------------------------------------------------------
    def snapshot(self, variables: dict[str, str]) -> Snapshot:
        """Render the stable prefix for a new conversation."""
        instructions = resolve_instructions(self.agent.instructions, variables)
        system = f"{BASE_CONTEXT}\n\n## Your role: {self.agent.name}\n{instructions}"
        ids: list[int] = []
        core_nodes = [n for n in self._core_nodes() if self.policy.allows(n)]
        core_notes = ""
        if core_nodes:
            origins = self.store.origins(n["id"] for n in core_nodes)  # fenced once, here: the prefix stays stable
            core_notes = "## Core notes (always on)\n" + "\n\n".join(
                fence.fence_origin(f"{node_ref(n)}\n{n['description'] or ''}\n{n['source'][:4000]}".strip(),
                                   origins.get(n["id"])) for n in core_nodes)
            ids += [n["id"] for n in core_nodes]
        background = ""
        if self.agent.background and self.background_enabled:
            hubs = [h for h in self.store.hubs(HUBS * 2) if self.policy.allows(h) and not _retired(h)][:HUBS]
            if hubs:
                background = "## Background: the most-connected nodes\n" + "\n".join(
                    f"{node_ref(h)} (edges: {h['edge_count']})" for h in hubs)
                ids += [h["id"] for h in hubs]
        catalog = ""
        if self.agent.role == "orchestrator":
            # Read once here: a skill added mid-chat appears in the next chat, not this one (cache).
            from core.agent import skills

            catalog = skills.catalog_text(skills.load(self.skills_dir))
        return Snapshot(tools_module.schemas(self.agent.tools), system, core_notes, background, ids, catalog)

    def _core_nodes(self) -> list[dict]:
        rows = self.store.db.execute(
            "SELECT id FROM nodes WHERE json_extract(metadata, '$.core') = 1 ORDER BY id LIMIT 20").fetchall()
        return self.store.get_nodes([r[0] for r in rows])

    # -- suffix ------------------------------------------------------------------------------------
    @property
    def focus(self) -> Focus:
        return self._focus

    def set_focus(self, focus: Focus) -> str:
        """Change the open tabs; re-renders only the focus block (kept ready for the viewer)."""
        self._focus = focus
        self._focus_text, self._focus_ids = self._render_focus(focus)
        return self._focus_text

    def refresh_focus(self) -> str:
        return self.set_focus(self._focus)

    def _render_focus(self, focus: Focus) -> tuple[str, list[int]]:
        if not focus.ordered:
            return "", []
        nodes = [n for n in self.store.get_nodes(focus.ordered) if self.policy.allows(n)]
        if not nodes:
            return "", []
        lines = ["[Focused nodes — open in the user's Focus panel]"]
        origins = self.store.origins(n["id"] for n in nodes)
        for i, node in enumerate(nodes):
            label = "Primary (active tab)" if i == 0 and node["id"] == focus.primary else "Also open"
            key = (node["id"], node["updated_at"])
            body = self._node_lines.get(key)
            if body is None:
                details = [f"status: {node['chunk_status']}"]
                if node["dimensions"]:
                    details.insert(0, "dimensions: " + ", ".join(node["dimensions"]))
                if node["link"]:
                    details.insert(0, f"link: {node['link']}")
                preview = _preview(node["description"] or node["source"])
                body = f"{node_ref(node)} — {'; '.join(details)}" + (f"\n  {preview}" if preview else "")
                if not provenance.trusted(origins.get(node["id"])):  # its title and text were not the user's
                    body = fence.fence_origin(body, origins[node["id"]])
                self._node_lines[key] = body
            lines.append(f"{label}: {body}")
        return "\n".join(lines), [n["id"] for n in nodes]

    def retrieve(self, message: str, now: datetime | None = None) -> list[Passage]:
        """Passages for this message: hybrid search, then the cosine floor and relative cutoff; keyword
        passages and the most recent notes when meaning search is unavailable (see `retrieval_note`).
        `now` is the clock the memory boost's recency is measured on (the chat's, via suffix)."""
        scored = self.scored_hits(message, now)
        kept = retrieval_fallback.cut(scored) if self.retrieval_note else cut(scored, message=message, store=self.store)
        origins = self.store.origins(h["id"] for _, h in kept)
        # The text as it will be sent: a fence tag inside it made harmless (core/chat/fence.py), so the
        # stored passage spans (core.chat.citations) find it in the suffix.
        return [Passage(i + 1, h["id"], h["title"], h["chunk"]["heading_path"], fence.neutral(h["chunk"]["text"]),
                        None if c is None else round(c, 4), h.get("fallback", "search"), self._page(h),
                        origins.get(h["id"], "user"))
                for i, (c, h) in enumerate(kept)]

    def _page(self, hit: dict) -> int | None:
        """The page a hit's chunk is on (chunks.page: set for captured PDFs), by its (node, idx) key."""
        if "page" in hit["chunk"]:
            return hit["chunk"]["page"]
        if hit["chunk"].get("idx") is None:
            return None
        row = self.store.db.execute("SELECT page FROM chunks WHERE node_id = ? AND chunk_idx = ?",
                                    (hit["id"], hit["chunk"]["idx"])).fetchone()
        return row[0] if row else None

    def _readable(self, hit: dict) -> bool:
        """Whether retrieval may put this node into the context: not private to this provider, inside
        the agent's read scope, and not retired (a note a distilled chat superseded stays in the graph,
        but is not offered to the model as current knowledge; it can still be opened or read by a tool)."""
        scope = {d.lower() for d in self.agent.read_scope}
        return (self.policy.allows(hit) and not _retired(hit)
                and (not scope or bool({d.lower() for d in hit["dimensions"]} & scope)))

    def scored_hits(self, message: str, now: datetime | None = None) -> list[tuple[float, dict]]:
        """Retrieval candidates the agent may read, best first, each with its passage's cosine (memory
        hits boosted by recency and use, core.graph.memory). When the embedder is unavailable or the indexing
        backlog is large, `retrieval_note` says so and the pairs are keyword hits and recent notes with
        a cosine of None (core.search.retrieval_fallback)."""
        self.retrieval_note = None
        if not self.agent.auto_read or not message.strip():
            return []
        self.retrieval_note = retrieval_fallback.reason(self.store, self.searcher, message)
        if self.retrieval_note:
            return retrieval_fallback.hits(self.store, self.searcher, message, self._readable)
        hits = self.searcher.search(message, mode="hybrid", limit=RETRIEVAL_CANDIDATES)
        qvec = self.searcher.query_vector(message)
        scored = []
        for h in hits:
            if h["chunk"] is None or not self._readable(h):
                continue
            cosine = h["match"]["vector"]
            if cosine is None:
                cosine = self._chunk_cosine(h, qvec)
            scored.append((cosine, h))
        return memory.boost(self.store, scored, now)

    def _chunk_cosine(self, hit: dict, qvec) -> float:
        import numpy as np

        row = self.store.db.execute(
            "SELECT v.embedding FROM chunks c JOIN vec_chunks v ON v.rowid = c.id WHERE c.node_id = ? AND c.chunk_idx = ?",
            (hit["id"], hit["chunk"]["idx"]),
        ).fetchone()
        if row is None:
            return 0.0
        return float(np.frombuffer(row[0], dtype=np.float32) @ qvec)

    def suffix(self, message: str, now: datetime | None = None, passages: list[Passage] | None = None) -> Suffix:
        # Re-render the focus block from the current nodes (cheap: lines are cached per updated_at),
        # so an edit made while a tab is open, such as a never_send dimension, is honoured.
        self._focus_text, self._focus_ids = self._render_focus(self._focus)
        if passages is None:
            passages = self.retrieve(message, now)
        retrieved = ""
        if passages:
            parts = ["[Retrieved passages — cite as [N]]"]
            for p in passages:
                where = f" › {' › '.join(p.heading_path)}" if p.heading_path else ""
                if p.page is not None:
                    where += f" (p. {p.page})"
                if p.via == "recent":
                    where += " (a recent note, added while meaning search is unavailable; not ranked for this message)"
                passage = f"[{p.n}] [NODE:{p.node_id}:{json.dumps(p.title, ensure_ascii=False)}]{where}\n{p.text.strip()}"
                # From outside, its title and headings are the stranger's words too: all inside the fence.
                parts.append(passage if provenance.trusted(p.origin) else fence.fence(passage, provenance.label(p.origin)))
            retrieved = "\n\n".join(parts)
        now = now or datetime.now(timezone.utc)
        stamp = f"[Context — current date/time: {now.strftime('%Y-%m-%d %H:%M %Z (%A)')}]"
        ids = list(dict.fromkeys([*self._focus_ids, *(p.node_id for p in passages)]))
        return Suffix(self._focus_text, retrieved, stamp, passages, ids)
