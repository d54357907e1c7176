"""The packaged host environment's names (evcli/envs/host/env.toml) on its frozen clock,
09:30 local on 2026-03-18 in Europe/Berlin, and a helper comparing a whole scope."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from evcli.contracts import Query
from evcli.core.time import zone_named
from evcli.scope.extract import extract_scope

SERVICES = ["auth", "nginx", "apache", "intranet", "shop-api", "zookeeper", "worker", "billing", "redis", "web-01"]
ALIASES = {
    "auth": ["sshd", "ssh", "auth log"],
    "nginx": ["web server", "proxy"],
    "apache": ["httpd", "admin app"],
    "intranet": ["intranet vhost"],
    "shop-api": ["shop", "shop api"],
    "zookeeper": ["zk"],
    "worker": ["mail worker"],
    "billing": ["billing service"],
    "redis": ["cache"],
    "web-01": ["host", "node"],
}
ALERTNAMES = ["DiskSpaceLow", "HighHTTP401Rate", "SSHBruteForce", "ZooKeeperDown"]
BERLIN = zone_named("Europe/Berlin")
CLOCK = datetime.fromisoformat("2026-03-18T08:30:00+00:00")  # 09:30 in Berlin


def scope_of(question: str, *, clock: datetime = CLOCK, tz: Any = BERLIN) -> Query:
    return extract_scope(question, services=SERVICES, aliases=ALIASES, alertnames=ALERTNAMES, clock=clock, tz=tz)


def _middle(canonical: str) -> str | None:
    """The instant a range around one moment names: its middle, when it is AROUND either side of it."""
    from evcli.core.time import parse_range_text
    from evcli.scope.times import AROUND

    asked = parse_range_text(canonical)
    if asked.start is None or asked.end is None or asked.end - asked.start != 2 * AROUND:
        return None
    return (asked.start + AROUND).isoformat()


ANSWER_FIELDS = ("answer", "kinds", "by", "sources", "cues")


def assert_scope(scope: Query, expected: dict[str, Any]) -> None:
    """Every field equals `expected` or its default; `terms` given are the prefix of the scope's
    terms, `range` is (text, canonical range, relative); the answer reading (evcli/scope/answers.py, tested
    there) is compared only where `expected` names a field of it."""
    actual = scope.model_dump()
    for name in ANSWER_FIELDS:
        if name not in expected:
            actual.pop(name, None)
    wanted = Query().model_dump()
    wanted.update({key: value for key, value in expected.items() if key not in ("terms", "range")})
    if "range" in expected and expected["range"] is not None:
        text, canonical, relative = expected["range"]
        wanted["range"] = {"text": text, "range": canonical, "relative": relative, "instant": _middle(canonical)}
        if wanted["range"]["instant"] != (actual.get("range") or {}).get("instant"):
            wanted["range"]["instant"] = None  # a range of two times that happen to be ten minutes apart
    terms = expected.get("terms")
    actual_terms = actual.pop("terms")
    wanted.pop("terms")
    assert actual == wanted
    if terms is not None:
        assert actual_terms[: len(terms)] == terms, actual_terms
