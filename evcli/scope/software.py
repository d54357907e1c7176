"""Well-known server software named as the subject of a question ("mysql slow queries since 09:00?",
"postgres 最近 30 分钟有报错吗？", "is kafka lagging"): a service the question asks about even when its
name does not *look* like one (no "-api", no "service").

When the environment does not know the name, it is an unknown service (the engines answer "no such
service" with close names) and it stays a search term too, for the logs of other services mention
it. A name the environment knows (a service, an alias, a host, or a part of one: `postgres` when
`postgres-primary` exists) is left to the other extractors. The name is the subject:
- after "in", "on", "from" ("errors in postgres"), or followed by a word naming its logs or
  deployment ("kafka logs", "etcd cluster", "mysql 日志"), or written with "and" / "or" after a
  service or host ("shop-api and kafka errors"); or
- the question names no other service or host ("is kafka lagging");
never after a word naming a dependency ("connect to mysql", "shop-api 调用 mysql 超时"), where
the name is what another service's logs mention. Of the cues written right before the name the longest
decides: "what happened to kafka" asks about kafka, "connect to kafka" calls it.

The list is small on purpose: databases, caches, queues, proxies and cluster components on-call
engineers name by their product name, not English words or user names (no "oracle": sshd logs
"Invalid user oracle"). The product names are the same in every language and stay here; the words around
them are data, `software.*` groups of the question grammar (evcli/scope/grammar/<language>.toml), read
beside the name with `entities.cue_before` / `cue_after` (an `entity.article` may stand between a cue and
the name: "in our postgres").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from evcli.scope.entities import cue_after, cue_before
from evcli.scope.grammar import hits
from evcli.scope.match import Spans

SOFTWARE = frozenset(
    """mysql mysqld mariadb postgres postgresql mongodb mongo mongod cassandra elasticsearch opensearch
    clickhouse influxdb couchdb mssql redis memcached etcd consul vault zookeeper kafka rabbitmq activemq
    nginx apache httpd haproxy envoy traefik tomcat gunicorn uwsgi php-fpm celery sidekiq keycloak
    kube-apiserver kubelet kube-proxy kube-scheduler kube-controller-manager coredns dockerd containerd
    prometheus alertmanager grafana minio ceph sshd postfix jenkins""".split()
)
_NAMES = "|".join(sorted(map(re.escape, SOFTWARE), key=len, reverse=True))
# the product name, or a name made of it ("postgres-replica", "redis_sentinel")
_FOUND = re.compile(rf"(?<![A-Za-z0-9_./-])(?:{_NAMES})(?:[-_][a-z0-9]+)*(?![A-Za-z0-9_-])", re.IGNORECASE)
_DEPENDENCY = "software.dependency"  # "connect to mysql": what another service's logs mention
_SUBJECT_BEFORE = "software.subject_before"  # "errors in postgres"
_SUBJECT_AFTER = "software.subject_after"  # "kafka logs", "mysql 日志"
_AND = "software.and"  # "shop-api and kafka errors"


def find_software(question: str, known: Iterable[str], spans: Spans, *, alone: bool) -> list[str]:
    """Software names the question asks about that are none of the `known` names (normalised
    service, alias and host names); `alone`: the question names no other service or host.
    Spans are not consumed: the name stays a term."""
    parts = {part for name in known for part in re.split(r"[\s_-]+", name) if part} | set(known)
    found = []
    for match in _FOUND.finditer(question):
        name = match.group()
        if name.lower() in parts or not spans.free(*match.span()):
            continue
        before = cue_before(question, match.start(), _DEPENDENCY, _SUBJECT_BEFORE)
        if before == _DEPENDENCY:
            continue
        if (
            alone
            or before == _SUBJECT_BEFORE
            or cue_after(question, match.end(), _SUBJECT_AFTER)
            or _beside_name(question, match.start(), spans)
        ):
            found.append(name)
    return found


def _beside_name(question: str, start: int, spans: Spans) -> bool:
    """Written with "and" / "or" / "," after a name already read ("shop-api and kafka errors"): the word
    before the `software.and` cue that ends right before `start` is taken."""
    end = len(question[:start].rstrip())
    for hit in hits(question, _AND):
        before = question[: hit.start].rstrip()
        words = before.split()
        if hit.end == end and words and not spans.free(len(before) - len(words[-1]), len(before)):
            return True
    return False
