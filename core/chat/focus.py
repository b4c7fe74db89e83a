"""What the Focus panel has open: a tiny value type shared by the context engine and the app
(its own module so the app can use it without importing the context engine at startup)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Focus:
    """The Focus panel's open tabs: ids in tab order, and the active (primary) one."""

    open: tuple[int, ...] = ()
    primary: int | None = None

    def __post_init__(self):
        if self.primary is not None and self.primary not in self.open:
            object.__setattr__(self, "open", (self.primary, *self.open))

    @property
    def ordered(self) -> tuple[int, ...]:
        """Primary first, then the other tabs in order."""
        if self.primary is None:
            return self.open
        return (self.primary, *[i for i in self.open if i != self.primary])
