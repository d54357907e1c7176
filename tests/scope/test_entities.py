"""evcli.scope.entities through extract_scope: services, hosts, unknown names, alerts."""

from __future__ import annotations

from evcli.scope.entities import alert_like, normal_name
from evcli.scope.grammar import words
from tests.scope._env import scope_of


def test_a_service_spelled_many_ways_is_one_service():
    assert scope_of("shop api / shop-api / shop_api / Shop API").services == ["shop-api"]


def test_an_alias_is_never_read_inside_a_longer_name():
    scope = scope_of("is shop-api-v2 or billing-api up, or workers?")
    assert scope.services == []
    assert scope.unknown_services == ["shop-api-v2", "billing-api"]


def test_a_known_service_named_like_a_host_is_both():
    scope = scope_of("what happened on web-01 and on host db-2.prod")
    assert scope.services == ["web-01"]
    assert scope.hosts == ["web-01", "db-2.prod"]


def test_hosts_of_the_environment_are_hosts():
    scope = scope_of("anything on mailhub?")
    assert scope.hosts == []
    from evcli.scope.extract import extract_scope
    from tests.scope._env import ALIASES, BERLIN, CLOCK, SERVICES

    found = extract_scope(
        "anything on mailhub?",
        services=SERVICES,
        aliases=ALIASES,
        alertnames=[],
        clock=CLOCK,
        tz=BERLIN,
        hosts=["mailhub"],
    )
    assert found.hosts == ["mailhub"]


def test_fqdn_and_ip_named_hosts():
    assert scope_of("db1.prod.example.com and ip-10-0-0-12 slow").hosts == ["db1.prod.example.com", "ip-10-0-0-12"]


def test_service_words_alone_are_no_unknown_service():
    assert scope_of("which service is the web service? check service health").unknown_services == ["health"]


def test_alert_names_known_camel_and_spelled_out():
    scope = scope_of("high http 401 rate and KafkaConsumerLagHigh, not OOMKilled or CrashLoopBackOff")
    assert scope.alertnames == ["HighHTTP401Rate", "KafkaConsumerLagHigh"]
    assert scope.tokens == ["OOMKilled", "CrashLoopBackOff"]


def test_where_no_alerts_are_served_a_camel_alert_word_is_a_log_token():
    """A snapshot of logs alone: 'why is the nightly etl getting FetchFailed?' searches FetchFailed."""
    from evcli.scope.extract import extract_scope
    from tests.scope._env import ALIASES, BERLIN, CLOCK, SERVICES

    kwargs = {"services": SERVICES, "aliases": ALIASES, "alertnames": [], "clock": CLOCK, "tz": BERLIN}
    question = "why is the nightly etl getting FetchFailed?"
    assert extract_scope(question, **kwargs).alertnames == ["FetchFailed"]
    logs_only = extract_scope(question, **kwargs, alerts_served=False)
    assert logs_only.alertnames == [] and logs_only.tokens == ["FetchFailed"]


def test_alert_like_and_normal_name():
    assert alert_like("DiskAlmostFull") and not alert_like("RiskScoreCalculator") and not alert_like("OOMKilled")
    assert normal_name(" Order_Service ") == normal_name("order service") == "order-service"


def test_where_no_alerts_are_served_an_alert_state_word_asks_no_alert_state():
    """ "did payments-worker recover?" of a snapshot of logs alone asks its logs, not a resolved alert."""
    from evcli.scope.extract import extract_scope
    from tests.scope._env import ALIASES, BERLIN, CLOCK, SERVICES

    kwargs = {"services": SERVICES, "aliases": ALIASES, "alertnames": [], "clock": CLOCK, "tz": BERLIN}
    question = "did billing recover?"
    assert extract_scope(question, **kwargs).alert_state == "resolved"
    assert extract_scope(question, **kwargs, alerts_served=False).alert_state is None


def test_a_service_named_as_where_it_happened_comes_first():
    """ "auth failures on nginx": the service the failures were on first; the word before "failures" second."""
    assert scope_of("any auth failures on nginx after 2pm?").services == ["nginx", "auth"]
    assert scope_of("nginx errors and redis timeouts").services == ["nginx", "redis"]  # none named as where


def test_the_words_no_service_is_named_are_the_grammars():
    """A stop word or a `word.not_a_name` word before "service" names none ("the backend service")."""
    assert {"web", "backend"} <= words("word.not_a_name") and "the" in words("word.stop")
    assert scope_of("is the backend service or the web svc down, or the billing-worker service?").unknown_services == [
        "billing-worker"
    ]


def test_the_words_around_a_name_are_the_grammars():
    """ "service X", "X service", the suffix of "billing-api", "host X" and "on (our) X" are `entity.*` groups."""
    assert {"service", "svc"} <= words("entity.service_before") and "microservice" in words("entity.service_after")
    assert {"api", "worker"} <= words("entity.service_suffix") and "host" in words("entity.host_before")
    assert {"on", "from"} <= words("entity.where_before") and {"the", "our"} <= words("entity.article")
    scope = scope_of("any auth failures on our nginx, or on service payments and machine db7.lan?")
    assert scope.services == ["nginx", "auth"]  # named as where, with an article between
    assert (scope.unknown_services, scope.hosts) == (["payments"], ["db7.lan"])
