"""Prometheus as it is queried (issue 26), against a real Prometheus that scrapes itself and a shop target
every second (`prometheus_scraping`): one series per label set with its labels, label matchers, counters as
rates, histograms as quantiles, PromQL over a range and at an instant, and refs a reader can run again."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from evcli.backends.base import LabelMatcher, SeriesQuery, parse_window
from evcli.backends.prometheus import PrometheusBackend
from evcli.core.errors import BackendError
from evcli.core.time import TimeRange
from evcli.tools.context import build_environment
from evcli.tools.runner import ToolSettings, run_tool
from tests.backends.conftest import SHOP_ORDERS_PER_S
from tests.cli._util import evcli

EXPRESSION = "sum by (status) (rate(shop_orders_total[4s]))"  # four scrapes at the fixture's 1 s interval


def five_minutes():
    return parse_window("5m", datetime.now(UTC))


def host(url: str) -> str:
    return url.removeprefix("http://")


def by(items: list[dict], label: str) -> dict[str, dict]:
    return {item["labels"][label]: item for item in items}


def test_each_label_set_is_its_own_series_with_its_labels(prometheus_scraping):
    """The five quantiles of go_gc_duration_seconds are five series, not one with five samples a timestamp."""
    items = PrometheusBackend(prometheus_scraping.url).series(None, "go_gc_duration_seconds", five_minutes())

    assert [item["labels"]["quantile"] for item in items] == ["0", "0.25", "0.5", "0.75", "1"]
    for item in items:
        exact = f'go_gc_duration_seconds{{instance="{host(prometheus_scraping.url)}",job="prometheus",quantile="{item["labels"]["quantile"]}"}}'
        assert (item["selector"], item["query"], item["type"]) == (exact, exact, "summary")
        assert item["service"] == "prometheus" and item["metric"] == "go_gc_duration_seconds"
        times = [moment for moment, _ in item["samples"]]
        assert len(times) == len(set(times)) == item["points"] >= 5  # one sample per timestamp
        assert item["step"] == 1


def test_label_matchers_narrow_the_selector(prometheus_scraping):
    backend = PrometheusBackend(prometheus_scraping.url)

    def queues(*matchers: LabelMatcher, service: str | None = None, metric: str | None = "shop_queue_depth"):
        found = backend.series(service, metric, five_minutes(), SeriesQuery(labels=matchers))
        return [(item["metric"], item["labels"].get("queue")) for item in found]

    assert queues() == [("shop_queue_depth", "email"), ("shop_queue_depth", "payments"), ("shop_queue_depth", "search")]
    assert queues(LabelMatcher("queue", "=~", "pay.*")) == [("shop_queue_depth", "payments")]
    assert queues(LabelMatcher("queue", "!=", "email")) == [
        ("shop_queue_depth", "payments"),
        ("shop_queue_depth", "search"),
    ]
    # no metric named: the names of the series the service and the matchers select
    assert queues(LabelMatcher("queue", "=", "search"), service="shop", metric=None) == [("shop_queue_depth", "search")]
    (half,) = backend.series(
        None, "go_gc_duration_seconds", five_minutes(), SeriesQuery(labels=(LabelMatcher("quantile", "=", "0.5"),))
    )
    assert half["labels"]["quantile"] == "0.5"


def test_a_counter_is_summarised_as_its_rate_per_second(prometheus_scraping):
    backend = PrometheusBackend(prometheus_scraping.url)
    assert backend.scrape_interval == 1  # read from the configuration Prometheus reports: windows of 4 s

    orders = by(backend.series("shop", "shop_orders_total", five_minutes()), "status")

    assert sorted(orders) == ["failed", "ok"]
    for status, item in orders.items():
        assert (item["type"], item["unit"], item["metric"]) == ("counter", "/s", "shop_orders_total")
        assert item["query"] == f"rate({item['selector']}[4s])"
        assert item["last"] == pytest.approx(SHOP_ORDERS_PER_S[status], rel=0.05)  # not the growing total


def test_metadata_decides_a_type_before_the_name_does(prometheus_scraping):
    backend = PrometheusBackend(prometheus_scraping.url)

    (sent,) = backend.series("shop", "shop_bytes_sent", five_minutes())  # TYPE counter, no _total suffix
    (workers,) = backend.series("shop", "shop_workers_total", five_minutes())  # TYPE gauge, a _total suffix

    assert (sent["type"], sent["unit"], sent["query"][:5]) == ("counter", "/s", "rate(")
    assert sent["last"] == pytest.approx(1000.0, rel=0.05)
    assert (workers["type"], workers["query"], workers["last"]) == ("gauge", workers["selector"], 4.0)
    # names Prometheus has no metadata for: the suffix decides
    assert backend.metric_type("nothing_scraped_total") == ("counter", "")
    assert backend.metric_type("nothing_scraped_bucket") == ("histogram", "")
    assert backend.metric_type("nothing_scraped") == ("gauge", "")
    assert backend.metric_type("shop_request_seconds_count") == ("counter", "")  # of a histogram family


def test_a_histogram_is_summarised_as_quantiles_per_label_set_without_le(prometheus_scraping):
    """/checkout: 6 of 10 requests a second within 0.1 s, 9 within 0.5 s, 10 within 1 s; /search: all within 0.1 s."""
    backend = PrometheusBackend(prometheus_scraping.url)

    items = backend.series("shop", "shop_request_seconds", five_minutes())

    shown = [(item["labels"]["path"], item["quantile"], item["last"]) for item in items]
    assert shown == [
        ("/checkout", 0.5, pytest.approx(0.08333, rel=1e-3)),
        ("/checkout", 0.9, pytest.approx(0.5, rel=1e-3)),
        ("/checkout", 0.99, pytest.approx(0.95, rel=1e-3)),
        ("/search", 0.5, pytest.approx(0.05, rel=1e-3)),
        ("/search", 0.9, pytest.approx(0.09, rel=1e-3)),
        ("/search", 0.99, pytest.approx(0.099, rel=1e-3)),
    ]
    for item in items:
        assert "le" not in item["labels"] and (item["type"], item["unit"]) == ("histogram", "s")
        assert item["metric"] == "shop_request_seconds"
        assert item["query"] == f"histogram_quantile({item['quantile']:g}, rate({item['selector']}[4s]))"
        assert item["selector"].startswith("shop_request_seconds_bucket{")
    named_bucket = backend.series("shop", "shop_request_seconds_bucket", five_minutes())
    assert [item["query"] for item in named_bucket] == [item["query"] for item in items]
    one = backend.series("shop", "shop_request_seconds", five_minutes(), SeriesQuery(quantiles=(0.95,)))
    assert [(item["labels"]["path"], item["last"]) for item in one] == [
        ("/checkout", pytest.approx(0.75, rel=1e-3)),
        ("/search", pytest.approx(0.095, rel=1e-3)),
    ]


def test_an_expression_over_a_range_gives_each_series_it_answers(prometheus_scraping):
    items = PrometheusBackend(prometheus_scraping.url).evaluate(EXPRESSION, five_minutes())

    assert [(item["selector"], item["type"], item["query"], item["step"]) for item in items] == [
        ('{status="failed"}', "promql", EXPRESSION, 1),
        ('{status="ok"}', "promql", EXPRESSION, 1),
    ]
    assert [item["last"] for item in items] == [pytest.approx(1.0, rel=0.05), pytest.approx(5.0, rel=0.05)]
    assert all(item["points"] >= 3 and "instant" not in item for item in items)


def test_an_expression_at_an_instant_gives_one_value_per_series(prometheus_scraping):
    backend = PrometheusBackend(prometheus_scraping.url)
    moment = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)

    items = backend.evaluate(EXPRESSION, TimeRange(moment, moment), instant=True)

    assert [(item["labels"], item["points"], item["instant"]) for item in items] == [
        ({"status": "failed"}, 1, True),
        ({"status": "ok"}, 1, True),
    ]
    assert {item["last_at"] for item in items} == {moment.isoformat()}
    (scalar,) = backend.evaluate("1 + 1", TimeRange(moment, moment), instant=True)
    assert (scalar["labels"], scalar["selector"], scalar["last"]) == ({}, "{}", 2.0)
    with pytest.raises(BackendError, match=r"^the expression gives a matrix at an instant; .*since/until\)$"):
        backend.evaluate("shop_orders_total[1m]", TimeRange(moment, moment), instant=True)


def test_an_expression_prometheus_refuses_is_one_line_with_its_reason(prometheus_scraping):
    with pytest.raises(BackendError) as caught:
        PrometheusBackend(prometheus_scraping.url).evaluate("sum(rate(shop_orders_total[1m])", five_minutes())

    assert str(caught.value) == (
        f"Prometheus at {prometheus_scraping.url} refused the query: 1:32: parse error: unclosed left parenthesis"
    )


# --- through the tool: refs and the cap ---------------------------------------------------------------------


def test_refs_name_the_expression_and_the_labels(prometheus_scraping):
    environment = build_environment(prometheus=prometheus_scraping.url)

    gc = run_tool(
        "query_metrics", {"metric": "go_gc_duration_seconds", "labels": ["quantile=0.5"], "window": "5m"}, environment
    )
    orders = run_tool("query_metrics", {"service": "shop", "metric": "shop_orders_total", "window": "5m"}, environment)

    (ref,) = gc.retrieval_details.evidence_refs
    assert ref.raw_path == "$.series[0]"
    assert ref.text.startswith(
        f'prometheus go_gc_duration_seconds{{instance="{host(prometheus_scraping.url)}",job="prometheus",'
        'quantile="0.5"} step=1s range='
    )
    assert gc.retrieval_details.keywords == ["go_gc_duration_seconds", "quantile=0.5"]
    texts = [ref.text for ref in orders.retrieval_details.evidence_refs]
    assert [text.split(" step=")[0] for text in texts] == [
        f'shop rate(shop_orders_total{{instance="{host_of_shop}",job="shop",service="shop",status="{status}"}}[4s])'
        for host_of_shop in [orders.output["series"][0]["labels"]["instance"]]
        for status in ("failed", "ok")
    ]
    assert all(re.search(r" last=[0-9.]+/s at ", text) for text in texts), texts


def test_more_series_than_fit_keeps_the_ones_that_moved_most(prometheus_scraping):
    """shop_queue_depth: payments climbs 7..11, search 12..13, email stays at 3; room for two."""
    environment = build_environment(prometheus=prometheus_scraping.url, settings=ToolSettings(max_items=2))

    invocation = run_tool("query_metrics", {"metric": "shop_queue_depth", "window": "5m"}, environment)

    output = invocation.output
    assert [item["labels"]["queue"] for item in output["series"]] == ["payments", "search"]
    assert (output["total"], output["truncated"]) == (3, True)
    assert output["message"] == "0 alerts, 3 series; kept the 2 of 3 series that moved most in the range"


def test_an_instant_call_searches_its_instant(prometheus_scraping):
    environment = build_environment(prometheus=prometheus_scraping.url)

    invocation = run_tool("query_metrics", {"promql": EXPRESSION, "at": "-1s"}, environment)

    start, end = invocation.retrieval_details.range.split("..")
    assert start == end and invocation.retrieval_details.range_origin == "question/call"
    assert invocation.retrieval_details.keywords == [EXPRESSION]
    texts = [ref.text for ref in invocation.retrieval_details.evidence_refs]
    assert [text.split(" at=")[0] for text in texts] == [
        f'{EXPRESSION} selector={{status="failed"}}',
        f'{EXPRESSION} selector={{status="ok"}}',
    ]
    for text in texts:  # the instant asked, to the millisecond Prometheus is asked in
        at, value = re.fullmatch(r".* at=(\S+) value=([0-9.]+)", text).groups()
        assert abs(datetime.fromisoformat(at) - datetime.fromisoformat(start)) < timedelta(milliseconds=1)
        assert float(value) > 0
    assert invocation.output["alerts"] == []  # an expression is the whole question


# --- the command line ------------------------------------------------------------------------------------


def test_cli_label_is_repeatable(prometheus_scraping):
    run = evcli(
        "tool", "query_metrics", "--prometheus", prometheus_scraping.url, "--metric", "shop_queue_depth",
        "--label", "queue!=email", "--label", "service=shop", "--window", "5m", "--json",
    )  # fmt: skip

    assert run.exit_code == 0, run
    invocation = run.json()
    assert invocation["input_params"]["labels"] == ["queue!=email", "service=shop"]
    assert [item["labels"]["queue"] for item in invocation["output"]["series"]] == ["payments", "search"]


def test_cli_promql_at_an_instant(prometheus_scraping):
    run = evcli("tool", "query_metrics", "--prometheus", prometheus_scraping.url, "--promql", EXPRESSION, "--at", "now")

    assert run.exit_code == 0, run
    assert f'$.series[1]: {EXPRESSION} selector={{status="ok"}} at=' in run.stdout


def test_cli_a_refused_expression_is_a_one_line_tool_error(prometheus_scraping):
    run = evcli("tool", "query_metrics", "--prometheus", prometheus_scraping.url, "--promql", "sum(rate(x[1m])")

    assert run.exit_code == 1, run
    assert "Traceback" not in run.stderr
    assert run.exception is None or isinstance(run.exception, SystemExit)
    assert run.stderr.strip().splitlines() == [
        f"query_metrics failed: Prometheus at {prometheus_scraping.url} refused the query: "
        "1:16: parse error: unclosed left parenthesis"
    ]
