"""evcli/gatekeeper/owners.py: a certificate belongs to the host its item names, not to the service whose
probe or client reported it (the issue's "a certificate given the wrong owner")."""

from __future__ import annotations

import pytest

from evcli.gatekeeper import owners

ALERT = {
    "alertname": "CertificateExpiringSoon",
    "service": "checkout-api",
    "instance": "payments.internal:443",
    "labels": {"job": "blackbox-tls", "service": "checkout-api", "instance": "payments.internal:443"},
    "summary": "TLS certificate of payments.internal:443 (probed for checkout-api) expired 20m ago",
}
REF = "CertificateExpiringSoon, service=checkout-api, instance=payments.internal:443, state=firing"
LOG = 'x509: certificate has expired; upstream "payments.internal:443"'
SERVICES = ["checkout-api", "payments"]


@pytest.mark.parametrize(
    ("claim", "item"),
    [
        ("The TLS certificate of payments.internal:443 expired 20m ago", ALERT),
        ("payments.internal's certificate expired", ALERT),
        ("the certificate for payments expired", ALERT),  # the host's first label
        ("payments.internal 的证书已过期", ALERT),
        ("the certificate of payments.internal expired", REF),  # a ref's key=value fields
        ("checkout-api's certificate check failed", LOG),  # no item says whose it is: nothing to compare
        ("checkout-api has a firing CertificateExpiringSoon alert", ALERT),  # no owner written
    ],
)
def test_the_owner_the_item_names_passes(claim, item):
    assert owners.problems(claim, [item], SERVICES) == []


@pytest.mark.parametrize(
    "claim",
    [
        "checkout-api's TLS certificate expired 20m ago",
        "The certificate of checkout-api expired",
        "checkout-api 的证书已过期",
        "blackbox-tls's cert is expired",
    ],
)
def test_the_reporting_service_is_not_the_owner(claim):
    problems = owners.problems(claim, [ALERT], SERVICES)
    assert len(problems) == 1 and "its items give it to payments.internal" in problems[0], problems


def test_each_thing_is_one_table_row():
    """The words and owner fields come from facts.toml: a thing is a row, not code."""
    certificate = next(thing for thing in owners.things() if thing.name == "certificate")
    assert "instance" in certificate.fields and "证书" in certificate.words
