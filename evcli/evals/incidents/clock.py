"""The sampling clock of one incident: every metric row and every effect is indexed by tick."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta


@dataclass(frozen=True)
class Timeline:
    start: datetime  # aware UTC: the first tick
    step: int  # seconds between ticks (the scrape interval)
    ticks: int

    def at(self, tick: int) -> datetime:
        return self.start + timedelta(seconds=tick * self.step)

    def tick_of(self, moment: datetime) -> int:
        """The first tick at or after `moment`: the first sample that can show what began then."""
        return math.ceil((moment - self.start).total_seconds() / self.step)

    @property
    def end(self) -> datetime:
        return self.at(self.ticks - 1)
