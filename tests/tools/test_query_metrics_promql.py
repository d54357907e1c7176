"""query_metrics' Prometheus parameters without a Prometheus (issue 26): what is validated, what a snapshot
refuses, how a live series reads as a ref, and which series are kept when more match than fit.
The calls against a real Prometheus are in tests/backends/test_prometheus_queries.py."""

from __future__ import annotations

import pytest

from evcli.agents.executor import tool_schemas
from evcli.backends.base import LabelMatcher, UnsupportedQuery, parse_matcher
from evcli.core.errors import BadInput
from evcli.tools.context import build_environment
from evcli.tools.params import MAX_PROMQL
from evcli.tools.query_metrics import precise, series_query, series_text, wider
from evcli.tools.registry import validate_params
from evcli.tools.runner import ToolSettings, run_tool
from tests.cli._util import assert_clean_error, evcli

RANGE = "2026-05-01T10:00:00+00:00..2026-05-01T11:00:00+00:00"


@pytest.mark.parametrize(
    ("args", "asked"),
    [
        (("--promql", "up"), "promql"),
        (("--promql", "up", "--at", "now"), "promql and at"),
        (("--metric", "cpu_usage", "--label", "quantile=0.5"), "labels"),
        (("--metric", "p99_latency", "--quantile", "0.95"), "quantile"),
    ],
)
def test_a_snapshot_refuses_what_only_prometheus_answers_in_one_line(args, asked):
    run = evcli("tool", "query_metrics", *args)

    assert_clean_error(run, 2, f"cannot ask {asked} of a snapshot", "needs a live Prometheus (--prometheus URL)")


def test_a_model_call_on_a_snapshot_is_refused_before_anything_is_recorded():
    """BadInput is what the executor loop shows the model as <refused …>, with no invocation stored."""
    with pytest.raises(UnsupportedQuery, match=r"^cannot ask promql of a snapshot"):
        run_tool("query_metrics", {"promql": "sum(rate(http_requests_total[5m]))"}, build_environment())
    assert issubclass(UnsupportedQuery, BadInput)


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"promql": "x" * (MAX_PROMQL + 1)}, "promql: String should have at most 2000 characters"),
        ({"promql": ""}, "promql: String should have at least 1 character"),
        ({"promql": "up\nor vector(1)"}, "promql: must be one line without control characters"),
        ({"promql": "up\x1b[31m"}, "promql: must be one line without control characters"),
        ({"promql": "up", "service": "shop"}, "promql is the whole query: give it without service"),
        ({"promql": "up", "metric": "up", "labels": ["job=x"]}, "give it without metric, labels"),
        ({"at": "now"}, "at evaluates a promql expression at one instant: give promql too"),
        ({"promql": "up", "at": "now", "window": "5m"}, "give either at (an instant) or since/until/window"),
        ({"promql": "up", "at": "yesterday-ish"}, "at: cannot read time 'yesterday-ish'"),
        ({"labels": ["quantile"]}, "label matcher 'quantile' must look like name=value"),
        ({"labels": ["=0.5"]}, "'' is not a label name"),
        ({"labels": ["a b=1"]}, "'a b' is not a label name"),
        ({"labels": ["job=a\tb"]}, "must be one line without control characters"),
        ({"labels": [f"l{i}=x" for i in range(9)]}, "labels: List should have at most 8 items"),
        ({"labels": ["job=" + "x" * 200]}, "a label matcher has at most 200 characters"),
        ({"quantile": 1}, "quantile: Input should be less than 1"),
        ({"quantile": 0}, "quantile: Input should be greater than 0"),
    ],
)
def test_parameters_are_checked_before_any_backend_sees_them(raw, fragment):
    with pytest.raises(BadInput) as caught:
        validate_params("query_metrics", raw)

    message = caught.value.message
    assert message.startswith("query_metrics: ") and fragment in message, message
    assert "\n" not in message


def test_valid_parameters_become_the_series_query():
    params = validate_params(
        "query_metrics",
        {"metric": "http_requests_total", "labels": ["code!=200", "handler=~/api/.*"], "quantile": 0.95},
    )

    query = series_query(params)  # type: ignore[arg-type]
    assert query.labels == (LabelMatcher("code", "!=", "200"), LabelMatcher("handler", "=~", "/api/.*"))
    assert (query.promql, query.instant, query.quantiles) == (None, False, (0.95,))
    assert query.asked() == ["labels", "quantile"]
    instant = series_query(validate_params("query_metrics", {"promql": "sum(up)", "at": "-5m"}))  # type: ignore[arg-type]
    assert (instant.promql, instant.instant, instant.asked()) == ("sum(up)", True, ["promql", "at"])
    assert validate_params("query_metrics", {"labels": []}).model_dump(exclude_none=True) == {}


@pytest.mark.parametrize(
    ("text", "matcher"),
    [
        ("quantile=0.5", ("quantile", "=", "0.5")),
        ("code!=200", ("code", "!=", "200")),
        ("handler=~/api/.*", ("handler", "=~", "/api/.*")),
        ("pod!~canary-.*", ("pod", "!~", "canary-.*")),
        ("le=+Inf", ("le", "=", "+Inf")),
        ("query=a=b", ("query", "=", "a=b")),  # the first operator splits
        ("app.kubernetes.io/name=shop", ("app.kubernetes.io/name", "=", "shop")),
        ("job=", ("job", "=", "")),  # PromQL: the label is absent
    ],
)
def test_label_matchers_read_as_promql_writes_them(text, matcher):
    assert parse_matcher(text) == LabelMatcher(*matcher)


def test_a_live_series_ref_names_its_expression_labels_and_step():
    gauge = {
        "service": "prometheus",
        "metric": "go_gc_duration_seconds",
        "unit": "",
        "range": RANGE,
        "points": 300,
        "min": 3.9e-05,
        "min_at": "2026-05-01T10:12:00+00:00",
        "max": 0.0031,
        "max_at": "2026-05-01T10:40:00+00:00",
        "last": 6.9e-05,
        "last_at": "2026-05-01T11:00:00+00:00",
        "labels": {"instance": "127.0.0.1:9090", "job": "prometheus", "quantile": "0.5"},
        "type": "summary",
        "selector": 'go_gc_duration_seconds{instance="127.0.0.1:9090",job="prometheus",quantile="0.5"}',
        "query": 'go_gc_duration_seconds{instance="127.0.0.1:9090",job="prometheus",quantile="0.5"}',
        "step": 12,
    }
    counter = {**gauge, "service": "shop", "metric": "shop_orders_total", "unit": "/s", "type": "counter"}
    counter.update(query='rate(shop_orders_total{job="shop",status="ok"}[60s])', min=4.9, max=5.2, last=5)
    expression = {**counter, "type": "promql", "selector": '{status="ok"}', "service": ""}
    expression["query"] = "sum by (status) (rate(shop_orders_total[5m]))"
    instant = {
        **expression,
        "instant": True,
        "points": 1,
        "range": "2026-05-01T11:00:00+00:00..2026-05-01T11:00:00+00:00",
    }
    instant.pop("step")

    assert series_text(gauge) == (
        'prometheus go_gc_duration_seconds{instance="127.0.0.1:9090",job="prometheus",quantile="0.5"} step=12s '
        f"range={RANGE} points=300 min=3.9e-05 at 2026-05-01T10:12:00+00:00 max=0.0031 at 2026-05-01T10:40:00+00:00 "
        "last=6.9e-05 at 2026-05-01T11:00:00+00:00"
    )
    assert series_text(counter).startswith(
        f'shop rate(shop_orders_total{{job="shop",status="ok"}}[60s]) step=12s range={RANGE} points=300 '
        "min=4.9/s at 2026-05-01T10:12:00+00:00 max=5.2/s at"
    )
    assert series_text(expression).startswith(
        'sum by (status) (rate(shop_orders_total[5m])) selector={status="ok"} step=12s range='
    )
    assert series_text(instant) == (
        'sum by (status) (rate(shop_orders_total[5m])) selector={status="ok"} at=2026-05-01T11:00:00+00:00 value=5/s'
    )


def test_a_snapshot_series_ref_reads_as_before():
    item = {
        "service": "order-service",
        "metric": "heap_used",
        "unit": "GB",
        "range": RANGE,
        "points": 12,
        "min": 2.9,
        "min_at": "2026-05-01T10:00:00+00:00",
        "max": 3.8,
        "max_at": "2026-05-01T10:40:00+00:00",
        "last": 3.7,
        "last_at": "2026-05-01T11:00:00+00:00",
    }

    assert series_text(item) == (
        f"order-service heap_used range={RANGE} points=12 min=2.9GB at 2026-05-01T10:00:00+00:00 "
        "max=3.8GB at 2026-05-01T10:40:00+00:00 last=3.7GB at 2026-05-01T11:00:00+00:00"
    )


def test_when_more_series_match_than_fit_the_ones_that_moved_most_are_kept():
    """order-service in the demo: 2 alerts and 6 series; room for 2 series keeps db_pool_waiting (0 → 25,
    moved by all of its size) and gc_pause_total (0.05 → 3.4), not the first two columns of the file."""
    everything = run_tool("query_metrics", {"service": "order-service"}, build_environment()).output
    assert [item["metric"] for item in everything["series"]][:2] == ["heap_used", "heap_max"]

    narrow = build_environment(settings=ToolSettings(max_items=len(everything["alerts"]) + 2))
    invocation = run_tool("query_metrics", {"service": "order-service"}, narrow)

    output = invocation.output
    assert [item["metric"] for item in output["series"]] == ["db_pool_waiting", "gc_pause_total"]
    assert (output["total"], output["truncated"]) == (len(everything["alerts"]) + 6, True)
    assert output["message"].endswith("; kept the 2 of 6 series that moved most in the range")
    assert invocation.retrieval_details.truncated is True


def test_the_model_schema_and_the_cli_share_the_parameter_help():
    (schema,) = [s["function"] for s in tool_schemas() if s["function"]["name"] == "query_metrics"]
    properties = schema["parameters"]["properties"]

    assert properties["labels"]["anyOf"][0] == {"items": {"type": "string"}, "maxItems": 8, "type": "array"}
    assert {"maxLength": MAX_PROMQL, "minLength": 1, "type": "string"} in properties["promql"]["anyOf"]
    assert properties["quantile"]["anyOf"][0] == {"exclusiveMaximum": 1.0, "exclusiveMinimum": 0.0, "type": "number"}
    for name in ("labels", "promql", "at", "quantile"):
        assert properties[name]["description"].split()[0] in ("Prometheus", "Evaluate"), name
    shown = evcli("tool", "query_metrics", "--help").stdout
    assert "--label" in shown and "--promql" in shown and "--at" in shown and "--quantile" in shown
    assert " ".join(shown.split()).count("Prometheus only: a PromQL expression evaluated as written") == 1


def test_precise_and_wider_read_matchers_and_expressions():
    assert precise({"promql": "sum(up)"}) and precise({"labels": ["job=shop"]})
    assert not precise({"metric": "up"})
    assert wider({"labels": ["job=shop", "code=500"]}, {"labels": ["job=shop"]}) == (
        "it drops the label matchers code=500"
    )
    assert wider({"promql": "sum(up)"}, {"promql": "up"}) == "it drops or changes the promql (sum(up) → up)"
    assert wider({"labels": ["job=shop"]}, {"labels": ["job=shop", "code=500"]}) is None
