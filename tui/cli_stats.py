"""`cairn stats`: node, edge, chunk and memory counts, pending work, database size, tokens this week."""

from __future__ import annotations


def cmd_stats(args, out) -> int:
    from core.ops import stats
    from tui.cli import _config, _store

    cfg = _config(args)
    with _store(args, readonly=True) as store:
        result = stats.collect(store, cfg)
    if out.as_json:
        out.json(result)
        return 0
    rows = stats.lines(result)
    width = max(len(label) for label, _ in rows)
    for label, value in rows:
        out.text((f"{label:<{width}}  ", "bold"), value)
    return 0
