"""What a report cites: the answer's citations and the evidence each one names, as plain dataclasses.

Built by evcli.report.model and read by the drawings (evcli.report.traces) and every renderer.
`Citation.number` is the answer's `[n]` marker; `CitedEvidence.ref_text` is the full text the tool
recorded and `excerpt_at` the excerpt's place in it (None when the gate matched it only nearly).
Values are verbatim: renderers escape them for their medium.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ITEM_PATH = re.compile(r"^\$\.(\w+)\[(\d+)\]$")  # a cited list item: `$.<array>[<i>]`


@dataclass
class SeriesChart:
    """One cited metric series over its range: its samples and the values the citation names."""

    service: str
    metric: str
    unit: str = ""
    start: str | None = None
    end: str | None = None
    points: int = 0
    samples: list[tuple[float, float]] = field(default_factory=list)  # (unix seconds, value); empty: not recorded
    marked: list[tuple[str, str, float]] = field(default_factory=list)  # (min|max|last, time, value) cited


@dataclass
class CitedFact:
    """A fact the claim states, matched by the Gatekeeper to one field of the cited item."""

    claim: str  # as the claim wrote it ("91%")
    field: str  # the field's JSON path ("$.alerts[0].value"); "" when no field of the item states it
    evidence: str  # the field's value as recorded ("91.0%")
    ok: bool
    at: tuple[int, int] | None = None  # [start, end) of its value in the ref text (ok facts only)


@dataclass
class CitedEvidence:
    anchor: str  # the HTML id of this evidence
    tool_name: str
    invocation_id: int | None
    raw_path: str
    excerpt: str
    ref_text: str  # the full ref text the tool recorded ("" when the invocation holds no such ref)
    excerpt_at: tuple[int, int] | None = None  # [start, end) of the excerpt in ref_text
    source: str | None = None  # file:line (snapshot) or stream labels (Loki)
    time: str | None = None
    line: str | None = None  # a log ref's raw line, as the source wrote it
    kind: str = "other"  # logs, alerts, series, stats, patterns, evidence_blocks, no_evidence
    chart: SeriesChart | None = None
    facts: list[CitedFact] = field(default_factory=list)
    drawing: tuple[str, str] | None = None  # (anchor, name) of the drawing that shows this item (evcli.report.traces)


@dataclass
class Citation:
    number: int
    claim_id: str
    claim_type: str
    claim_text: str
    evidence: list[CitedEvidence]
