"""Writing, trashing and restoring note files so that a kill at any moment loses nothing.

`write_atomic` writes a temporary file beside the note, fsyncs it and renames it over the note, so
the note is always its old content or its new one, whole. The temporary file's name starts with `.`
and ends with `.cairn-tmp`: the vault scan (core.vault.sync) and the watcher skip hidden files, so it
is never imported; one left by a killed process is removed by the next write of the same note.

`move_to_trash` and `restore_from_trash` move a note into the vault's `.trash/` folder (Obsidian's
convention) and back, keeping its folders and never replacing a file already there (" 2", " 3" ... is
added to the name instead).
"""

from __future__ import annotations

import errno
import os
import posixpath
import secrets
from pathlib import Path

from core.errors import CairnError, InvalidInput, NotFound, disk_full, disk_full_message

TRASH = ".trash"
TEMP_SUFFIX = ".cairn-tmp"
_NAME_MAX = 255  # bytes in one file name on common file systems
_TEMP_EXTRA = 40  # bytes the temporary name adds: ".", ".<pid>-<token>", TEMP_SUFFIX


class VaultWriteError(CairnError):
    """A note file could not be written or moved; the note on disk is as it was."""


def _failure(exc: OSError, what: str, where: object = None) -> VaultWriteError:
    if disk_full(exc) is not None:
        return VaultWriteError(disk_full_message(where or exc.filename))
    if isinstance(exc, PermissionError):
        return VaultWriteError(f"Cairn may not {what} (permission denied); check the folder's permissions.")
    return VaultWriteError(f"Could not {what}: {exc.strerror or exc}.")


def _temp_prefix(name: str) -> str:
    """`.<name>.` cut so that the whole temporary name fits in one file name."""
    raw = name.encode("utf-8")[: _NAME_MAX - _TEMP_EXTRA].decode("utf-8", "ignore")
    return f".{raw}."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # someone else's process: leave its file alone
    return True


def _remove_stale(folder: Path, prefix: str) -> None:
    """Temporary files of this note left by a process that is gone (a kill between create and rename)."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(prefix) and n.endswith(TEMP_SUFFIX)]
    except OSError:
        return
    for name in names:
        pid = name[len(prefix):-len(TEMP_SUFFIX)].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            try:
                os.unlink(folder / name)
            except OSError:
                pass


def _fsync_dir(folder: Path) -> None:
    """Make a rename in `folder` durable. Platforms that cannot open a folder (Windows) skip it."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP, errno.EPERM, errno.EACCES):
            raise
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str) -> None:
    """Write `text` (UTF-8, line endings as given) to `path`: the old file or the new one, never half
    of one. Missing folders are made; the file keeps its permission bits; a symbolic link is written
    through (the link stays, its target changes). On failure nothing is left behind and a
    VaultWriteError says why in one sentence."""
    path = Path(path)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"The text for {path} holds characters that cannot be saved as UTF-8.") from None
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    folder = target.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InvalidInput(f"Cannot write {path}: a file stands where its folder should be.") from None
    except OSError as exc:
        raise _failure(exc, f"create the folder {folder}") from exc
    if target.is_dir():
        raise InvalidInput(f"Cannot write {path}: it is a folder.")
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise _failure(exc, f"write {path}", path) from exc
    prefix = _temp_prefix(target.name)
    _remove_stale(folder, prefix)
    tmp = folder / f"{prefix}{os.getpid()}-{secrets.token_hex(4)}{TEMP_SUFFIX}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(tmp, flags, 0o666)  # the umask decides a new file's bits, as for any editor's save
    except OSError as exc:
        raise _failure(exc, f"write {path}", path) from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise _failure(exc, f"write {path}", path) from exc
        raise
    try:
        _fsync_dir(folder)
    except OSError as exc:  # the new file is in place; whether it survives a power cut is not sure
        raise _failure(exc, f"make the write of {path} durable", path) from exc


# -- the trash -----------------------------------------------------------------------------------
def _parts(rel: str) -> list[str]:
    """A relative note path's parts; refuses an absolute path or one that climbs out (`..`)."""
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or rel.startswith(("/", "\\")) or ".." in parts or os.path.isabs(rel):
        raise InvalidInput(f"{rel!r} is not a path inside the vault.")
    return parts


def _inside(root: Path, path: Path) -> bool:
    real_root, real = os.path.realpath(root), os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _numbered(parts: list[str], n: int) -> list[str]:
    """`folder/Note.md` → `folder/Note 2.md` (n = 2); n = 1 is the name itself."""
    if n == 1:
        return parts
    stem, dot, suffix = parts[-1].rpartition(".")
    name = f"{stem} {n}.{suffix}" if dot and stem else f"{parts[-1]} {n}"
    return [*parts[:-1], name]


def _move(root: Path, src_parts: list[str], dest_parts: list[str], what: str) -> str:
    """Move root/src to root/dest, or to the first of `dest 2`, `dest 3` ... that is free; never
    replaces a file. Returns the path moved to, relative to root (POSIX)."""
    src = root.joinpath(*src_parts)
    if not os.path.lexists(src):
        raise NotFound(f"{'/'.join(src_parts)} is not in the vault {root}.")
    if src.is_dir() and not src.is_symlink():
        raise InvalidInput(f"{'/'.join(src_parts)} is a folder, not a note.")
    if not _inside(root, src.parent):
        raise InvalidInput(f"{'/'.join(src_parts)} lies outside the vault {root}.")
    dest_dir = root.joinpath(*dest_parts[:-1])
    known = dest_dir
    while not os.path.lexists(known) and known != root:
        known = known.parent
    if not _inside(root, known):  # (checked before making folders: a linked folder must not lead out)
        raise InvalidInput(f"{'/'.join(dest_parts[:-1])} leads outside the vault {root}.")
    try:
        dest_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _failure(exc, f"create the folder {dest_dir}") from exc
    for n in range(1, 10_000):
        parts = _numbered(dest_parts, n)
        dest = root.joinpath(*parts)
        if os.path.lexists(dest):
            continue
        try:
            _rename_no_replace(src, dest)
        except FileExistsError:
            continue  # taken meanwhile: try the next number
        except OSError as exc:
            raise _failure(exc, f"{what} {'/'.join(src_parts)}") from exc
        for folder in {src.parent, dest.parent}:
            try:
                _fsync_dir(folder)
            except OSError:
                pass  # moved; only its durability across a power cut is unsure
        return posixpath.join(*parts)
    raise VaultWriteError(f"Could not {what} {'/'.join(src_parts)}: every numbered name is taken.")


def _rename_no_replace(src: Path, dest: Path) -> None:
    """Rename that fails with FileExistsError instead of replacing `dest`: a hard link then an unlink
    (a kill between them leaves both names, never none); a plain rename after a check where the file
    system has no hard links."""
    try:
        os.link(src, dest, follow_symlinks=False)
    except FileExistsError:
        raise
    except (NotImplementedError, OSError) as exc:
        if isinstance(exc, OSError) and exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP,
                                                          errno.EXDEV, errno.EMLINK, errno.ENOSYS):
            raise
        if os.path.lexists(dest):
            raise FileExistsError(errno.EEXIST, "taken", str(dest)) from None
        os.rename(src, dest)
        return
    os.unlink(src)


def move_to_trash(vault_root: Path, rel: str) -> str:
    """Move the note `rel` into `<vault>/.trash/`, keeping its folders; returns its path there."""
    root = Path(vault_root)
    parts = _parts(rel)
    if parts[0] == TRASH:
        raise InvalidInput(f"{rel} is already in the vault's trash.")
    return _move(root, parts, [TRASH, *parts], "move to the trash")


def restore_from_trash(vault_root: Path, trash_rel: str, rel: str) -> str:
    """Move `trash_rel` (a path under `.trash/`) back to `rel`, or beside it when `rel` is taken;
    returns the path it was restored to. Folders of the trash left empty are removed."""
    root = Path(vault_root)
    src = _parts(trash_rel)
    dest = _parts(rel)
    if src[0] != TRASH or len(src) < 2:
        raise InvalidInput(f"{trash_rel} is not in the vault's trash ({TRASH}/).")
    if dest[0] == TRASH:
        raise InvalidInput(f"{rel} is inside the vault's trash; give the path to restore the note to.")
    moved = _move(root, src, dest, "restore from the trash")
    folder = root.joinpath(*src[:-1])
    while folder != root / TRASH and folder != root:
        try:
            folder.rmdir()  # only an empty folder goes
        except OSError:
            break
        folder = folder.parent
    return moved
