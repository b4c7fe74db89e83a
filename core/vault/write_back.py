"""After a command changes notes, their files in the bound folder follow at once (issue 23: every change
to a vault note made anywhere in Cairn reaches its file, not only while the app or `cairn watch` runs).

`write_back(db_path, config)` runs TwoWaySync.write_back on the folder `[vault] path` binds: Cairn's
side of a round, without the import (core/vault/twoway.py). The CLI calls it after each verb that can
change notes (tui/cli/main.py WRITING_VERBS); `cairn mcp` runs `write_back_store` after each tool call
that can change notes (handed to core/agent/mcp_server.py by tui/cli/mcp.py).
"""

from __future__ import annotations

from pathlib import Path

from core.graph.store import Store


def write_back(db_path: str | Path, config):
    """The RoundReport of writing Cairn's changes to the bound folder, or None when no folder is bound
    (or the database does not exist yet). Errors (the folder gone, a full disk) are raised as CairnError."""
    from core.vault.twoway import TwoWaySync

    folder = config.vault.bound
    if not folder or not Path(db_path).exists():
        return None
    with Store(db_path) as store:
        return TwoWaySync(store, Path(folder).expanduser()).write_back(new_notes=config.vault.new_notes)


def write_back_store(store: Store, config) -> None:
    """The same on an open store (the MCP server's own connection)."""
    from core.vault.twoway import TwoWaySync

    if config.vault.bound:
        TwoWaySync(store, Path(config.vault.bound).expanduser()).write_back(new_notes=config.vault.new_notes)
