"""evcli/gatekeeper/facts.py: a clause with an address says only what that address's own lines say (the
issue's "'the attacker logged in' stitched from two real bindings")."""

from __future__ import annotations

import pytest

from evcli.gatekeeper.facts import missing_facts

FAILED = (
    "Mar 18 09:25:07 web-01 sshd[24179]: Failed password for invalid user postgres from 203.0.113.45 port 47567 ssh2"
)
ALERT = "SSHBruteForce, service=auth, instance=web-01, state=firing, active_at=2026-03-18T08:16:00Z"
ACCEPTED = "Mar 18 08:03:33 web-01 sshd[24189]: Accepted publickey for deploy from 10.0.0.12 port 45660 ssh2"


@pytest.mark.parametrize(
    "claim",
    [
        "Accepted publickey for deploy from 203.0.113.45 port 45660",
        "203.0.113.45 logged in as deploy",
        "Failed password for invalid user postgres from 10.0.0.12",
    ],
)
def test_a_clause_stitched_from_two_lines_fails(claim):
    missing = missing_facts(claim, [FAILED, ACCEPTED])
    assert any("from a line about another address" in problem for problem in missing), missing


@pytest.mark.parametrize(
    "claim",
    [
        "Failed password for invalid user postgres from 203.0.113.45; Accepted publickey for deploy from 10.0.0.12",
        "sshd accepted publickey for deploy from 10.0.0.12 after failed passwords for postgres from 203.0.113.45",
        "web-01 sshd logged failed and accepted logins (203.0.113.45, 10.0.0.12)",  # words both lines hold
        # an alert names no address: its words may join a line's
        "SSHBruteForce on web-01 has been firing since 08:16, with Failed password for postgres from 203.0.113.45",
    ],
)
def test_each_address_with_its_own_line_passes(claim):
    missing = missing_facts(claim, [FAILED, ACCEPTED, ALERT])
    assert not any("from a line about another address" in problem for problem in missing), missing


def test_one_excerpt_is_never_stitched():
    assert missing_facts("Accepted publickey for deploy from 10.0.0.12", [ACCEPTED]) == []
