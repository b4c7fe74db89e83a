"""Timestamps: ISO-8601 UTC with milliseconds, so they sort as text."""

from datetime import datetime, timezone


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse(stamp: str | None) -> datetime | None:
    """An ISO stamp as an aware datetime (one without a zone is UTC, as Cairn writes them); None for
    no stamp or one that is not ISO."""
    if not stamp:
        return None
    try:
        value = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
