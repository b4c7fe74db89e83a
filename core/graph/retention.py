"""Retention of auto-written memory: a policy the user sets (`[memory] max_age_days`, `max_count`).

Only nodes with type='memory' are ever considered; the user's own notes (any other type) are never
touched, however old. A memory node's age is counted from its last use (core.graph.memory: put into a
request or read by a tool) or its last edit, whichever is later; its creation if neither happened.
Restoring a node from the trash counts as an edit (it sets updated_at), so a memory the user brings
back is not trashed again on the next start. Nothing runs without a policy
(both settings 0, the default). What the policy removes goes to the trash (restorable with
`cairn restore`), and every caller says what it removed: `cairn doctor --repair` lists it, the app
shows a notification on start.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from core.graph import history


@dataclass(frozen=True)
class Policy:
    max_age_days: int = 0  # 0: no age limit
    max_count: int = 0  # 0: no count limit

    @property
    def active(self) -> bool:
        return self.max_age_days > 0 or self.max_count > 0

    @classmethod
    def from_config(cls, cfg) -> "Policy":
        return cls(cfg.memory.max_age_days, cfg.memory.max_count)

    def describe(self) -> str:
        parts = []
        if self.max_age_days:
            parts.append(f"unused for more than {self.max_age_days} day{'s' if self.max_age_days != 1 else ''}")
        if self.max_count:
            parts.append(f"beyond the {self.max_count:,} most recently used")
        return "memory nodes " + " or ".join(parts) + " go to the trash" if parts else "no retention policy"

    def as_dict(self) -> dict:
        return {"max_age_days": self.max_age_days, "max_count": self.max_count, "active": self.active}


def _stamp(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def plan(store, policy: Policy, now: datetime | None = None) -> list[dict]:
    """The memory nodes the policy would remove, oldest use first: {id, title, last_used, reason}."""
    if not policy.active:
        return []
    now = now or datetime.now(timezone.utc)
    # last_used: the later of the last use and the last edit (updated_at, which starts at the creation).
    # Timestamps are ISO-8601 UTC, so they compare as text.
    rows = store.db.execute(
        "SELECT n.id, n.title, MAX(COALESCE(a.last_accessed_at, ''), n.updated_at) AS last_used,"
        " a.last_accessed_at, n.created_at, n.updated_at, COALESCE(a.access_count, 0) AS uses"
        " FROM nodes n LEFT JOIN memory_access a ON a.node_id = n.id WHERE n.type = 'memory'"
        " ORDER BY last_used DESC, n.id DESC").fetchall()
    cutoff = _stamp(now - timedelta(days=policy.max_age_days)) if policy.max_age_days else None
    out = []
    for rank, r in enumerate(rows):
        reason = None
        if cutoff is not None and r["last_used"] < cutoff:
            if r["last_accessed_at"] and r["last_accessed_at"] >= r["updated_at"]:
                what = "last used"
            elif r["updated_at"] != r["created_at"]:
                what = "last edited"
            else:
                what = "created, never used,"
            reason = f"{what} more than {policy.max_age_days} days ago ({r['last_used'][:10]})"
        elif policy.max_count and rank >= policy.max_count:
            reason = f"beyond the {policy.max_count:,} most recently used memory nodes"
        if reason:
            out.append({"id": r["id"], "title": r["title"], "last_used": r["last_used"], "uses": r["uses"],
                        "reason": reason})
    out.reverse()
    return out


def apply(store, policy: Policy, now: datetime | None = None) -> list[dict]:
    """Move the planned memory nodes to the trash, in one transaction; returns what was removed."""
    doomed = plan(store, policy, now)
    if not doomed:
        return []
    with history.acting_as(history.MEMORY_RETENTION), store.db.transaction() as conn:
        for item in doomed:
            # Checked again inside the transaction: only a memory node is ever deleted here.
            row = conn.execute("SELECT type FROM nodes WHERE id = ?", (item["id"],)).fetchone()
            if row is not None and row["type"] == "memory":
                store.delete_node(item["id"])
                item["removed"] = True
    return [item for item in doomed if item.get("removed")]


def summary(removed: list[dict]) -> str:
    """One sentence for a notification or the doctor's report."""
    n = len(removed)
    if not n:
        return "No memory nodes were past the retention policy."
    titles = ", ".join(repr(item["title"]) for item in removed[:3]) + (f" and {n - 3} more" if n > 3 else "")
    return (f"Moved {n} memory node{'s' if n != 1 else ''} past the retention policy to the trash ({titles}); "
            "`cairn trash` lists them, `cairn restore ID` brings one back.")
