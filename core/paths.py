"""Where Cairn keeps its database and config (see DESIGN.md, "Paths")."""

from __future__ import annotations

import os
import stat
from pathlib import Path

APP_NAME = "cairn"
# The database, its -wal/-shm and backups hold every note: readable by the user only, whatever the
# umask (on a shared host the default 0644/0755 lets every user read them).
PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700


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


def private_folder(path: str | os.PathLike) -> Path:
    """Create the folder (and its parents) if it is missing, the folder itself 0700 whatever the umask.
    An existing folder is left as it is: `cairn doctor` reports one other users can read."""
    path = Path(path)
    if path.is_dir():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=PRIVATE_FOLDER)
    except FileExistsError:  # another process made it first
        return path
    os.chmod(path, PRIVATE_FOLDER)  # mkdir's mode passes through the umask
    return path


def create_private_file(path: str | os.PathLike) -> bool:
    """Create an empty file readable by the user only (0600, whatever the umask); False if it exists.
    SQLite gives a database's -wal, -shm and -journal the database file's mode, so creating the file
    this way before SQLite opens it makes them private too."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, PRIVATE_FILE)
    finally:
        os.close(fd)
    return True


def readable_by_others(path: str | os.PathLike) -> bool:
    """Whether the group or other users may read the file or list the folder (False if it is missing)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    return bool(mode & (stat.S_IRGRP | stat.S_IROTH))


def editor_file(prefix: str, text: str) -> Path:
    """A new file holding `text` for $EDITOR, in the data folder's tmp/ (0700 when made here: a note's
    text is nobody else's): the app's and the command line's edits and new notes all start here."""
    import tempfile

    fd, name = tempfile.mkstemp(prefix=prefix, suffix=".md", dir=private_folder(data_dir() / "tmp"))
    with os.fdopen(fd, "wb") as fh:
        fh.write(text.encode("utf-8"))
    return Path(name)
