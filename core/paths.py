"""Where Cairn keeps its database and config (see DESIGN.md, "Paths")."""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "cairn"


def _home() -> Path | None:
    value = os.environ.get("CAIRN_HOME")
    return Path(value).expanduser() if value else None


def data_dir() -> Path:
    home = _home()
    if home is not None:
        return home
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP_NAME))


def config_dir() -> Path:
    home = _home()
    if home is not None:
        return home
    from platformdirs import user_config_dir

    return Path(user_config_dir(APP_NAME))


def db_path(explicit: str | os.PathLike | None = None) -> Path:
    """`--db` wins, then `$CAIRN_HOME/cairn.db`, then the XDG data dir."""
    if explicit:
        return Path(explicit).expanduser()
    return data_dir() / "cairn.db"


def config_path() -> Path:
    return config_dir() / "config.toml"
