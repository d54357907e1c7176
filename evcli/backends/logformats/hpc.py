"""LANL HPC cluster logs: `134681 node-246 unix.hw state_change.unavailable 1077804742 1 Component
State Change: Component \\042alt0\\042 is in the unavailable state (HWID=1973)`
= record id, node, component, state, epoch seconds, flag, message.

Invariants: the timestamp is the epoch field (10 digits), aware in UTC; the leading record id
is never a time (the `epoch` format needs 10+ digits there, and this format comes before it);
the level is None (no field states one); fields are node, component and state.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from evcli.backends.logformats.base import LogFormat, ParseContext, ParsedLine

_LINE = re.compile(r"\d+ (?P<node>\S+) (?P<component>\S+) (?P<state>\S+) (?P<epoch>\d{10}) \d+(?: (?P<message>.*)|$)")


class Hpc(LogFormat):
    name = "hpc"
    description = "LANL HPC logs: record id, node, component, state, epoch seconds, flag, message"
    example = (
        "134681 node-246 unix.hw state_change.unavailable 1077804742 1 Component State Change: "
        "Component \\042alt0\\042 is in the unavailable state (HWID=1973)"
    )

    def sniff(self, line: str) -> bool:
        return line[:1].isdigit() and _LINE.match(line) is not None

    def parse(self, line: str, context: ParseContext) -> ParsedLine | None:
        match = _LINE.match(line)
        if match is None:
            return None
        moment = datetime.fromtimestamp(int(match["epoch"]), UTC)  # 10 digits: always in range
        fields = {"node": match["node"], "component": match["component"], "state": match["state"]}
        return ParsedLine(moment, None, match["message"] or "", fields)


FORMAT = Hpc()
