"""Errors a user can read: each carries one sentence that says what went wrong and what to do."""


class CairnError(Exception):
    """Base for every error Cairn reports to a person (CLI exits non-zero with its message)."""


class NotFound(CairnError):
    pass


class InvalidInput(CairnError):
    pass


class DatabaseError(CairnError):
    pass


class EmbedderError(CairnError):
    pass


def disk_full_message(where: object = None) -> str:
    """The one sentence for a full disk (SQLite's SQLITE_FULL, or ENOSPC from a file write)."""
    place = f"The disk holding {where}" if where else "The disk"
    return f"{place} is full, so nothing was changed or saved; free some space and try again."


def disk_full(exc: BaseException) -> CairnError | None:
    """A full disk (ENOSPC, or a quota: EDQUOT) raised as an OSError, as the error a user reads; else None."""
    import errno

    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return CairnError(disk_full_message(exc.filename))
    return None
