"""evcli/gatekeeper/addresses.py: an address a claim gives a name must be the one a cited item gives it.

Lines are written the way real services write them (sshd in syslog, a Go resolver in logfmt, an HDFS
DataNode, an alert with service and instance labels); the false claims are the issue's "the DNS server's
IP stated to be another host"."""

from __future__ import annotations

import pytest

from evcli.gatekeeper import addresses, typed, typed_model

SSHD = "Mar 18 08:03:33 web-01 sshd[24189]: Accepted publickey for deploy from 10.0.0.12 port 45660 ssh2"
RESOLVER_FAILED = (
    'level=warn caller=resolver/cache.go:73 msg="dns lookup failed" host=es-cluster.internal '
    "server=10.96.0.10:53 rcode=NXDOMAIN attempt=1"
)
RESOLVER_CACHED = (
    'level=info caller=resolver/cache.go:51 msg="dns cache refreshed" host=es-cluster.internal '
    "addrs=10.20.14.21,10.20.14.22,10.20.14.23 ttl=300s"
)
HDFS = "DatanodeRegistration(10.40.7.7:50010, storageID=DS-1187452930-10.40.7.7-50010, infoPort=50075)"
ALERT = {"alertname": "NodeDown", "service": "node-exporter", "instance": "10.0.0.5:9100", "state": "firing"}
RUNBOOK = "集群内的 Pod 通过 CoreDNS（10.96.0.10:53）解析域名"


@pytest.mark.parametrize(
    ("claim", "item"),
    [
        ("Accepted publickey for deploy from 10.0.0.12 port 45660", SSHD),  # no pair written
        ("es-cluster.internal (10.20.14.21, 10.20.14.23) was cached for 300s", RESOLVER_CACHED),
        ("es-cluster.internal at 10.20.14.22", RESOLVER_CACHED),
        ("node-exporter at 10.0.0.5:9100 is down", ALERT),
        ("node-exporter (10.0.0.5) is down", ALERT),  # the port may be left out
        ("DatanodeRegistration(10.40.7.7:50010, storageID=DS-1) failed", HDFS),
        ("CoreDNS (10.96.0.10) resolves the cluster's names", RUNBOOK),  # the evidence's fullwidth brackets
        ("CoreDNS 的地址为 10.96.0.10", "CoreDNS at 10.96.0.10:53 answers"),
    ],
)
def test_a_pair_the_item_makes_passes(claim, item):
    assert addresses.problems(claim, [item], ["coredns"]) == []


@pytest.mark.parametrize(
    ("claim", "item", "named"),
    [
        ("web-01 (10.0.0.12) accepted a login for deploy", SSHD, "10.0.0.12 as web-01's"),
        ("es-cluster.internal (10.96.0.10) could not be resolved", RESOLVER_FAILED, "10.96.0.10 as es-cluster"),
        ("es-cluster.internal at 10.96.0.10:53 failed", RESOLVER_FAILED, "10.96.0.10 as es-cluster"),
        ("10.96.0.10 (es-cluster.internal) answered NXDOMAIN", RESOLVER_FAILED, "10.96.0.10 as es-cluster"),
        ("node-exporter at 10.0.0.6 is down", ALERT, "10.0.0.6 as node-exporter's"),
        ("es-cluster.internal (10.20.14.24) was cached", RESOLVER_CACHED, "10.20.14.24 as es-cluster"),
    ],
)
def test_an_address_given_to_another_name_fails(claim, item, named):
    problems = addresses.problems(claim, [item])
    assert len(problems) == 1 and named in problems[0], problems


def test_a_word_before_an_address_is_no_name():
    """ "from (10.0.0.12)" and "listening on 10.0.0.5" give no host an address."""
    assert addresses.stated_pairs("logins from (10.0.0.12) and listening on 10.0.0.5") == []


def test_the_typed_check_reports_the_address_and_the_excerpt_check_does_not_pass_it():
    cited = typed_model.Cited(0, "$.logs[0]", typed.item_values(SSHD, "$.logs[0]"), item=SSHD)
    result = typed.check_claim("web-01 (10.0.0.12) accepted a login for deploy", [cited], ["web-01"])
    assert any("10.0.0.12 as web-01's address" in problem for problem in result.problems)
    honest = typed.check_claim("Accepted publickey for deploy from 10.0.0.12", [cited], ["web-01"])
    assert not any("address" in problem for problem in honest.problems)
