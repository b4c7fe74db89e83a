"""Timestamps: ISO-8601 UTC with milliseconds, so they sort as text."""

from datetime import datetime, timezone


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
