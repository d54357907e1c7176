"""Claims the offline executor builds from log lines (evcli/agents/offline/claims.py): which lines are symptoms."""

from __future__ import annotations

from pathlib import Path

from evcli.agents.offline.claims import log_claims, refs_of
from evcli.agents.offline.payload import intent_of
from evcli.messages import catalogue
from evcli.tools.context import build_environment
from evcli.tools.runner import run_tool


def _source_locations_snapshot(root: Path) -> Path:
    """An orders service whose INFO lines hold numbers in the status range that are no status (a source
    location, a line, a port, an id) and whose one WARN line holds a status an upstream returned."""
    lines = [
        "2026-07-08 22:40:01.000  INFO 1 --- [nio-8080-exec-1] c.e.shop.OrderServiceImpl : order ORD-7 placed by "
        "OrderServiceImpl#548",
        "2026-07-08 22:40:02.000  INFO 1 --- [nio-8080-exec-2] c.e.shop.ConfigLoader : config read at Foo.java:500 "
        "line 502",
        "2026-07-08 22:40:03.000  INFO 1 --- [main] c.e.shop.Server : listening on port 5003 as worker id=5001",
        "2026-07-08 22:40:04.000  INFO 1 --- [main] c.e.shop.Tracer : span from at com.x.Foo.bar(Foo.java:503)",
        "2026-07-08 22:40:05.000  WARN 1 --- [nio-8080-exec-3] c.e.shop.CartClient : cart-api returned 503 for /cart",
    ]
    (root / "logs").mkdir(parents=True)
    (root / "logs" / "orders.log").write_text("\n".join(lines) + "\n")
    (root / "env.toml").write_text('now = "2026-07-08T23:00:00Z"\n')
    return root


def test_a_number_that_is_no_status_makes_no_line_a_symptom(tmp_path):
    """`OrderServiceImpl#548`, `Foo.java:503`, `line 502`, `port 5003`, `id=5001` are no HTTP statuses: their INFO
    lines are no symptom; the line where an upstream returned 503 is one."""
    env = build_environment(_source_locations_snapshot(tmp_path / "env"))
    invocation = run_tool("query_logs", {"service": "orders"}, env).model_copy(update={"invocation_id": 1})
    intent = intent_of({"language": "en", "intent": {"services": ["orders"]}, "environment": {"services": ["orders"]}})
    claims = log_claims(intent, refs_of(invocation), catalogue("en"), "symptom", cap=10)
    assert [claim["claim_text"].rsplit(": ", 1)[-1] for claim in claims] == ["cart-api returned 503 for /cart"]
