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
