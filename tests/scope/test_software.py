"""evcli.scope.software through extract_scope: well-known software named as the subject of a
question is an unknown service when the environment does not run it, and stays a term."""

from __future__ import annotations

import pytest

from evcli.scope.extract import extract_scope
from evcli.scope.grammar import words
from evcli.scope.software import SOFTWARE
from tests.scope._env import ALERTNAMES, ALIASES, BERLIN, CLOCK, SERVICES, scope_of


@pytest.mark.parametrize(
    ("question", "name"),
    [
        ("is kafka lagging", "kafka"),
        ("rabbitmq queue full?", "rabbitmq"),
        ("elasticsearch cluster red since 9am", "elasticsearch"),
        ("etcd leader changes today", "etcd"),
        ("haproxy 503s in the last hour", "haproxy"),
        ("memcached evictions", "memcached"),
        ("mongodb slow ops", "mongodb"),
        ("any cassandra timeouts?", "cassandra"),
        ("consul leader lost?", "consul"),
        ("is vault sealed", "vault"),
        ("kube-apiserver 5xx", "kube-apiserver"),
        ("coredns NXDOMAIN errors", "coredns"),
        ("what happened to kafka this morning", "kafka"),
        ("any problems with mysql?", "mysql"),
        ("postgres-replica lag", "postgres-replica"),
    ],
)
def test_software_as_the_subject_is_an_unknown_service_and_a_term(question, name):
    scope = scope_of(question)
    assert scope.unknown_services == [name]
    assert name in scope.terms


@pytest.mark.parametrize(
    ("question", "services", "unknown"),
    [
        ("errors in postgres since shop-api restarted", ["shop-api"], ["postgres"]),
        ("kafka logs on web-01", ["web-01"], ["kafka"]),
        ("shop-api and kafka errors", ["shop-api"], ["kafka"]),
        ("shop-api 和 kafka 报错", ["shop-api"], ["kafka"]),
        ("mysql 日志 shop-api", ["shop-api"], ["mysql"]),
    ],
)
def test_software_in_a_subject_position_beside_a_known_service(question, services, unknown):
    scope = scope_of(question)
    assert (scope.services, scope.unknown_services) == (services, unknown)


@pytest.mark.parametrize(
    "question",
    [
        "shop-api can't connect to mysql",
        "shop-api 调用 mysql 超时",
        "billing timeouts talking to postgres",
        "Does shop-api log Redis timeouts?",  # a known service logs what it calls
    ],
)
def test_software_another_service_calls_is_only_a_term(question):
    scope = extract_scope(
        question, services=["shop-api", "billing"], aliases={}, alertnames=ALERTNAMES, clock=CLOCK, tz=BERLIN
    )
    assert scope.unknown_services == []
    assert {"mysql", "postgres", "redis"} & {word.lower() for word in scope.terms}


def test_software_inside_a_phrase_or_path_is_no_name():
    scope = scope_of("any 'mysql restarted' in /var/lib/mysql/error.log?")
    assert scope.unknown_services == []
    assert (scope.phrases, scope.tokens) == (["mysql restarted"], ["/var/lib/mysql/error.log"])


def test_software_the_environment_knows_is_a_service():
    scope = scope_of("redis OOM command not allowed?")
    assert (scope.services, scope.unknown_services) == (["redis"], [])
    named_in = extract_scope(
        "postgres errors", services=["postgres-primary"], aliases={}, alertnames=[], clock=CLOCK, tz=BERLIN
    )
    assert named_in.unknown_services == []  # a part of a known name: its logs are searched for the word


def test_hosts_of_the_environment_are_known():
    scope = extract_scope(
        "is consul down?", services=SERVICES, aliases=ALIASES, alertnames=[], clock=CLOCK, tz=BERLIN, hosts=["consul"]
    )
    assert scope.unknown_services == [] and scope.hosts == ["consul"]


def test_the_list_is_small_and_holds_no_user_names():
    assert len(SOFTWARE) < 80
    assert not SOFTWARE & {"oracle", "root", "admin", "postgres_user", "deploy", "test"}


def test_the_words_around_the_name_are_the_grammars():
    """The cues of a dependency, of a subject before and after the name and of "and" are `software.*` groups."""
    assert {"to", "calling", "调用"} <= words("software.dependency")
    assert {"in", "happened to"} <= words("software.subject_before")
    assert {"logs", "cluster", "日志"} <= words("software.subject_after")
    assert {"and", ",", "和"} <= words("software.and")


@pytest.mark.parametrize(
    ("question", "unknown"),
    [
        ("what happens to kafka when zookeeper restarts?", ["kafka"]),  # the longest cue: "happens to", not "to"
        ("billing timeouts calling our mysql cluster", []),  # an article between: still what billing calls
        ("timeouts when we reach the postgres-replica", []),  # named alone, but after a dependency cue
    ],
)
def test_the_longest_cue_before_the_name_decides(question, unknown):
    scope = extract_scope(
        question, services=["shop-api", "billing", "zookeeper"], aliases={}, alertnames=[], clock=CLOCK, tz=BERLIN
    )
    assert scope.unknown_services == unknown
