"""`cairn search hubs list`: finding nodes by query, by connections, by recency."""

from __future__ import annotations

from core.search.searcher import MODES
from tui.cli.common import Out, Verbs, id_arg, open_store, plural, positive_int


def print_nodes(out: Out, nodes: list[dict], extra=None) -> None:
    if not nodes:
        out.text("No nodes.", style="dim")
    for n in nodes:
        dims = f"  #{' #'.join(n['dimensions'])}" if n["dimensions"] else ""
        out.text((f"[{n['id']}] ", "dim"), (n["title"], "bold"), (dims, "cyan"), (extra(n) if extra else "", "dim"))


def cmd_search(args, out: Out) -> int:
    from core.search.searcher import Searcher
    from core.search.snippet import around

    with open_store(args, readonly=True) as store:
        hits = Searcher(store).search(args.query, mode=args.mode, limit=args.limit, dimension=args.dimension,
                                      node_id=args.node)
        pending = store.counts()["pending"] if not hits and args.mode != "fts" else 0
    if out.as_json:
        out.json(hits)
        return 0
    if not hits:
        out.text("No matches.", style="dim")
    if pending:  # meaning search cannot see them yet; keywords can
        out.text(f"Not indexed yet: {plural(pending, 'node')}; run `cairn index` so that meaning search sees "
                 "them (keyword search, --mode fts, already does).", style="dim")
    for h in hits:
        where = " › ".join(h["chunk"]["heading_path"]) if h["chunk"] and h["chunk"]["heading_path"] else ""
        if h["chunk"] and h["chunk"].get("page"):  # a captured PDF: the page the passage is on, as the chat cites it
            where = f"p. {h['chunk']['page']}" + (f" · {where}" if where else "")
        out.text((f"[{h['id']}] ", "dim"), (h["title"], "bold"), (f"  {h['score']:.4g}", "dim"),
                 (f"  {where}" if where else "", "cyan"))
        if h["chunk"]:
            out.text("    " + around(h["chunk"]["text"], args.query))
    return 0


def cmd_hubs(args, out: Out) -> int:
    with open_store(args, readonly=True) as store:
        hubs = store.hubs(args.limit)
    if out.as_json:
        out.json(hubs)
    else:
        print_nodes(out, hubs, lambda n: f"  edges: {n['edge_count']}")
    return 0


def cmd_list(args, out: Out) -> int:
    with open_store(args, readonly=True) as store:
        nodes = store.recent(args.limit, dimension=args.dimension)
    if out.as_json:
        out.json(nodes)
    else:
        print_nodes(out, nodes, lambda n: f"  {n['updated_at'][:16].replace('T', ' ')}")
    return 0


def register(verbs: Verbs) -> None:
    p = verbs.add("search", cmd_search, "search notes by keyword, meaning, or both (a query starting with - goes after --)")
    p.add_argument("query", help='words (OR-ed), "a phrase", prefix*, -excluded')
    p.add_argument("--mode", choices=MODES, default="hybrid",
                   help="hybrid: keywords and meaning (default); fts: keywords; vector: meaning")
    p.add_argument("--limit", "-n", type=positive_int, default=10, metavar="N", help="at most N hits (default 10)")
    p.add_argument("--dimension", "-d", metavar="D", help="only nodes with this dimension")
    p.add_argument("--node", type=id_arg, metavar="ID", help="search only inside this node")

    p = verbs.add("hubs", cmd_hubs, "the most-connected nodes")
    p.add_argument("--limit", "-n", type=positive_int, default=10, metavar="N", help="at most N (default 10)")
    p = verbs.add("list", cmd_list, "recently updated nodes")
    p.add_argument("--limit", "-n", type=positive_int, default=20, metavar="N", help="at most N (default 20)")
    p.add_argument("--dimension", "-d", metavar="D", help="only nodes with this dimension")
