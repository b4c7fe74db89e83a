"""`cairn mcp`: Cairn's notes served to MCP clients over stdin/stdout."""

from __future__ import annotations

from tui.cli.common import Out, Verbs


def cmd_mcp(args, out: Out) -> int:
    """The MCP stdio server (core.agent.mcp_server); --print-config prints the client snippet instead."""
    from core.agent import mcp_server
    from core.paths import db_path

    path = db_path(getattr(args, "db", None))
    if args.print_config:
        out.json(mcp_server.client_config(path))
        return 0
    from core.vault.write_back import write_back_store

    return mcp_server.serve(path, after_write=write_back_store)


def register(verbs: Verbs) -> None:
    p = verbs.add("mcp", cmd_mcp, "run the MCP server on stdin/stdout (for Claude Desktop, Claude Code ...)",
                  with_json=False)
    p.add_argument("--print-config", action="store_true",
                   help="print the JSON that registers this server with an MCP client, and exit")
