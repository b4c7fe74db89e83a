"""What the database holds and what the chat has spent: `cairn stats` and the Stats section of the
Settings / Context viewer.

Tokens are summed from each reply's normalised usage (core.providers.base.Usage, stored on the
assistant message) grouped by the chat's provider, over the last 7 days (a rolling week, so the
figure does not drop to zero on Mondays). `input` counts every prompt token sent, cached or not;
`cache_read` is the part of it read from the provider's cache, `cache_write` the part written to it.
Delegated sub-chats count under their own provider: their tokens were spent too.

Model requests that are not chat replies (the rolling summary, the citation judge, distil,
integrate's drafts: core.chat.usage_log) keep their usage on their sent_log row, under the provider they
went to. They are added to the same per-provider sums (each once: a chat turn's own sent_log rows
carry no usage) and broken down by purpose in `by_purpose`; `replies` still counts chat replies only.

Spending (`spend_by_provider`) prices the same rows, grouped by provider and model (a chat reply by its
chat's, a side request by its sent_log row's), through core.chat.cost at the configured cache TTL:
"no price" for offline and local, "price unknown (model X)" for a model the table does not know.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

WEEK_DAYS = 7
USAGE_FIELDS = ("input", "output", "cache_read", "cache_write")
PURPOSE_LABELS = {"summary": "rolling summary", "citation_check": "citation checks", "distil": "distil",
                  "integrate": "integrate drafts"}


def _stamp(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def tokens_this_week(store, now: datetime | None = None) -> dict[str, dict[str, int]]:
    """{provider: {replies, input, output, cache_read, cache_write}} for replies in the last 7 days."""
    now = now or datetime.now(timezone.utc)
    since = _stamp(now - timedelta(days=WEEK_DAYS))
    sums = ", ".join(f"COALESCE(SUM(json_extract(m.usage, '$.{f}')), 0) AS {f}" for f in USAGE_FIELDS)
    rows = store.db.execute(
        f"SELECT COALESCE(c.provider, 'unknown') AS provider, COUNT(*) AS replies, {sums}"
        " FROM messages m JOIN chats c ON c.id = m.chat_id"
        " WHERE m.usage IS NOT NULL AND m.created_at >= ? GROUP BY 1 ORDER BY 1", (since,)).fetchall()
    out = {r["provider"]: {"replies": r["replies"], **{f: int(r[f]) for f in USAGE_FIELDS}} for r in rows}
    for r in _side_requests(store, since, "provider"):
        t = out.setdefault(r["provider"], {"replies": 0, **{f: 0 for f in USAGE_FIELDS}})
        for f in USAGE_FIELDS:
            t[f] += int(r[f])
    return dict(sorted(out.items()))


def _side_requests(store, since: str, key: str) -> list:
    """Usage of side requests (sent_log rows with a usage, core.chat.usage_log) since `since`, grouped by `key`."""
    sums = ", ".join(f"COALESCE(SUM(json_extract(usage, '$.{f}')), 0) AS {f}" for f in USAGE_FIELDS)
    return store.db.execute(
        f"SELECT {key}, COUNT(*) AS requests, {sums} FROM sent_log"
        f" WHERE usage IS NOT NULL AND created_at >= ? GROUP BY 1 ORDER BY 1", (since,)).fetchall()


def spend_this_week(store, pricer=None, now: datetime | None = None) -> dict[str, dict]:
    """{provider: Cost.as_dict()} of the replies and side requests of the last 7 days."""
    from core.chat.cost import Pricer, spend_since

    now = now or datetime.now(timezone.utc)
    since = _stamp(now - timedelta(days=WEEK_DAYS))
    return {p: c.as_dict() for p, c in spend_since(store, pricer or Pricer(), since).items()}


def tokens_by_purpose(store, now: datetime | None = None) -> dict[str, dict[str, int]]:
    """{purpose: {requests, input, output, cache_read, cache_write}} for side requests in the last 7 days
    (the rolling summary, citation checks, distil, integrate drafts); chat replies are not in it."""
    now = now or datetime.now(timezone.utc)
    since = _stamp(now - timedelta(days=WEEK_DAYS))
    return {(r["purpose"] or "other"): {"requests": r["requests"], **{f: int(r[f]) for f in USAGE_FIELDS}}
            for r in _side_requests(store, since, "purpose")}


def collect(store, config=None, now: datetime | None = None) -> dict:
    """Counts, pending work, database size, memory and its retention policy, tokens this week."""
    from core.graph import retention
    from core.index.indexer import coverage

    db = store.db
    by_type = {r[0]: r[1] for r in db.execute("SELECT type, COUNT(*) FROM nodes GROUP BY type")}
    nodes = {"total": sum(by_type.values()), "note": by_type.get("note", 0), "memory": by_type.get("memory", 0)}
    nodes["other"] = nodes["total"] - nodes["note"] - nodes["memory"]
    counts = db.execute(
        "SELECT (SELECT COUNT(*) FROM edges) AS edges, (SELECT COUNT(*) FROM chunks) AS chunks,"
        " (SELECT COUNT(*) FROM nodes WHERE chunk_status != 'indexed' AND chunk_status = 'pending') AS pending,"
        " (SELECT COUNT(*) FROM nodes WHERE chunk_status != 'indexed' AND chunk_status = 'error') AS errors,"
        " (SELECT COUNT(*) FROM trash) AS trash,"
        " (SELECT COUNT(*) FROM chats WHERE json_extract(metadata, '$.parent_chat_id') IS NULL) AS chats"
    ).fetchone()
    memory = db.execute(
        "SELECT COUNT(a.node_id) AS used, COALESCE(SUM(a.access_count), 0) AS uses,"
        " MAX(a.last_accessed_at) AS last_used FROM nodes n"
        " LEFT JOIN memory_access a ON a.node_id = n.id AND a.access_count > 0 WHERE n.type = 'memory'").fetchone()
    policy = retention.Policy.from_config(config) if config is not None else retention.Policy()
    path = Path(store.path)
    main, wal = _size(path), _size(path.with_name(path.name + "-wal"))
    from core.chat.cost import Pricer

    tokens = tokens_this_week(store, now)
    spend = spend_this_week(store, Pricer.from_config(config) if config is not None else Pricer(), now)
    total = {f: sum(p[f] for p in tokens.values()) for f in ("replies", *USAGE_FIELDS)}
    return {
        "nodes": nodes,
        "edges": counts["edges"],
        "chunks": counts["chunks"],
        "index": {"pending": counts["pending"], "errors": counts["errors"], "covered": coverage(db)[0]},
        "trash": counts["trash"],
        "chats": counts["chats"],
        "memory": {"nodes": nodes["memory"], "used": memory["used"], "never_used": nodes["memory"] - memory["used"],
                   "uses": memory["uses"], "last_used": memory["last_used"],
                   "policy": policy.as_dict(), "past_policy": len(retention.plan(store, policy, now))},
        "database": {"path": str(path), "bytes": main, "wal_bytes": wal, "total_bytes": main + wal},
        "tokens_this_week": {"days": WEEK_DAYS, "by_provider": tokens, "total": total,
                             "by_purpose": tokens_by_purpose(store, now), "spend_by_provider": spend},
    }


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"  # pragma: no cover


def _n(count: int, word: str, plural: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else (plural or word + 's')}"


def lines(stats: dict) -> list[tuple[str, str]]:
    """(label, value) rows for people: the CLI and the Stats section of the viewer print these."""
    from core.index.progress import coverage_text

    n, idx, mem, tok = stats["nodes"], stats["index"], stats["memory"], stats["tokens_this_week"]
    out = [
        ("Nodes", f"{n['total']:,} ({_n(n['note'], 'note')}, {n['memory']:,} memory, {n['other']:,} other)"),
        ("Edges", f"{stats['edges']:,}"),
        ("Chunks", f"{stats['chunks']:,}"),
        ("Pending work", f"{_n(idx['pending'], 'node')} waiting to be indexed, {idx['errors']:,} failed"
                         + ("" if idx["covered"] >= n["total"] else
                            f"; {coverage_text(idx['covered'], n['total'], 'node')}")),
        ("Memory", f"{_n(mem['nodes'], 'node')}, {mem['used']:,} used ({_n(mem['uses'], 'use')}), "
                   f"{mem['never_used']:,} never used"),
    ]
    policy = mem["policy"]
    if policy["active"]:
        parts = []
        if policy["max_age_days"]:
            parts.append(f"max age {policy['max_age_days']} days")
        if policy["max_count"]:
            parts.append(f"max count {policy['max_count']:,}")
        out.append(("Retention", ", ".join(parts) + f"; {mem['past_policy']:,} past it now"))
    else:
        out.append(("Retention", "no policy ([memory] max_age_days / max_count)"))
    db = stats["database"]
    out.append(("Database", f"{human_bytes(db['total_bytes'])} ({human_bytes(db['bytes'])} + "
                            f"{human_bytes(db['wal_bytes'])} WAL)"))
    if not tok["by_provider"]:
        out.append((f"Tokens, last {tok['days']} days", "none sent"))
    for provider, t in tok["by_provider"].items():
        out.append((f"Tokens, last {tok['days']} days, {provider}",
                    f"{t['input']:,} sent ({t['cache_read']:,} read from cache, {t['cache_write']:,} written to it), "
                    f"{t['output']:,} received, {_n(t['replies'], 'reply', 'replies')}"))
    for provider, cost in (tok.get("spend_by_provider") or {}).items():
        out.append((f"Spent, last {tok['days']} days, {provider}", cost["label"]))
    side = tok.get("by_purpose") or {}
    if side:  # already in the sums above; this says how much of them was not a chat reply
        out.append((f"Tokens, last {tok['days']} days, besides replies",
                    "; ".join(f"{PURPOSE_LABELS.get(p, p)} {t['input']:,} sent, {t['output']:,} received "
                              f"({_n(t['requests'], 'request')})" for p, t in side.items())))
    return out
