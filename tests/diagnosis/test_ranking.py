"""evcli.diagnosis.ranking: causes before symptoms, and the fault kind a suspect's own changes name."""

from evcli.diagnosis import ranking
from evcli.diagnosis.changes import Change

STEP = 60.0


def change(service: str, signal: str, klass: str, score: float, onset: float, direction: str = "up") -> Change:
    return Change(
        service, signal, "metric", klass, direction, "", 1.0, 0.1, 30, 2.0, 2.0, 10, 10, onset, score, "m.csv"
    )


def test_a_resource_change_that_leads_the_errors_names_the_fault():
    """CPU rose with the errors (same minute): the errors follow from it, though they score higher."""
    found = [
        change("tax", "http_request_errors_total", "errors", 45.0, 600.0),
        change("tax", "process_cpu_usage", "cpu", 12.5, 600.0),
    ]
    assert ranking.rank(found, {}, STEP)[0].fault == "cpu"


def test_a_resource_change_after_the_errors_and_weak_does_not():
    """CPU that moved only a little, ten minutes after the errors: the errors are the fault."""
    found = [
        change("tax", "http_request_errors_total", "errors", 45.0, 600.0),
        change("tax", "process_cpu_usage", "cpu", 12.5, 1200.0),
    ]
    assert ranking.rank(found, {}, STEP)[0].fault == "errors"


def test_a_callee_that_changed_first_ranks_above_its_caller():
    found = [
        change("frontend", "latency_p99", "latency", 40.0, 720.0),
        change("payment", "latency_p99", "latency", 30.0, 600.0),
    ]
    ranked = ranking.rank(found, {"frontend": ("payment",)}, STEP)
    assert [suspect.service for suspect in ranked] == ["payment", "frontend"]
    assert ranked[0].affects == ["frontend"] and ranked[1].explained_by == ["payment"]


def test_a_named_service_with_a_cause_of_its_own_goes_before_suspects_nothing_links_it_to():
    found = [
        change("user", "db_query_p99", "latency", 40.0, 600.0),
        change("order", "HighMemoryUsage", "memory", 10.0, 840.0),
        change("order", "db_pool_waiting", "other", 15.0, 1200.0),
    ]
    ranked = ranking.rank(found, {}, STEP)
    assert [s.service for s in ranked] == ["user", "order"]
    assert [s.service for s in ranking.asked_first(ranked, "order", {})] == ["order", "user"]
    # ... but not before a callee of its own that changed first: that may be where its memory went
    linked = {"order": ("user",)}
    assert [s.service for s in ranking.asked_first(ranking.rank(found, linked, STEP), "order", linked)][0] == "user"


def test_a_named_service_showing_only_what_travels_keeps_its_rank():
    """A gateway's errors and latency may come from anywhere: the suspects that changed first stay first."""
    found = [
        change("payment", "cpu", "cpu", 40.0, 600.0),
        change("gateway", "http_errors_total", "errors", 30.0, 720.0),
    ]
    ranked = ranking.rank(found, {}, STEP)
    assert [s.service for s in ranking.asked_first(ranked, "gateway", {})] == ["payment", "gateway"]


def test_without_topology_a_change_of_its_own_that_came_first_outranks_louder_errors_after_it():
    """A service's responses shrank first; three services' success rates fell a minute later, far louder.
    Nothing says who calls whom: what changed first and on its own is the likelier cause."""
    found = [
        change("comment", "response_bytes", "responses", 12.0, 600.0, direction="down"),
        change("kyc", "success_rate", "success", 40.0, 660.0, direction="down"),
        change("inventory", "success_rate", "success", 38.0, 690.0, direction="down"),
    ]
    assert ranking.rank(found, {}, STEP)[0].service == "comment"
    # a caller whose callees are known is judged by them instead (not cut for an unrelated earlier change)
    assert ranking.rank(found, {"kyc": ("ledger",)}, STEP)[0].service == "kyc"
