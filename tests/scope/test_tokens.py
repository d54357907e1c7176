"""evcli.scope.tokens: quoted phrases and distinctive tokens, verbatim."""

from __future__ import annotations

import pytest

from evcli.scope.grammar import words
from evcli.scope.match import Spans
from evcli.scope.tokens import find_name_tokens, find_phrases, find_tokens, in_order


def phrases(question: str) -> list[str]:
    return find_phrases(question, Spans())


def tokens(question: str) -> list[str]:
    spans = Spans()
    return in_order(find_tokens(question, spans), find_name_tokens(question, spans))


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (
            "search for \"Accepted publickey\" and 'Connection reset by peer'",
            ["Accepted publickey", "Connection reset by peer"],
        ),
        ("it isn't in deploy's logs, is it 'Broken pipe'?", ["Broken pipe"]),
        ("“Connection refused” ‘SSL handshake failed’", ["Connection refused", "SSL handshake failed"]),
        ("「Failed password」和『No space left on device』", ["Failed password", "No space left on device"]),
        ("`OOM command not allowed` twice `OOM command not allowed`", ["OOM command not allowed"]),
        ("don't won't can't", []),
        ('an "x" is too short', []),
    ],
)
def test_phrases(question, expected):
    assert phrases(question) == expected


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("401s from 10.20.30.40 and 2001:db8::1", ["401", "10.20.30.40", "2001:db8::1"]),
        ("10.0.0.256 is no address", []),
        ("5xx and 4XX on 2026 traffic", ["5xx", "4XX"]),
        ("502 took 300 ms, 500 requests, port 8080", ["502"]),
        ("status 200 and returned 304", ["200", "304"]),
        ("200 ok", []),
        (
            "java.net.SocketTimeoutException then KeeperException$SessionExpiredException",
            ["java.net.SocketTimeoutException", "KeeperException$SessionExpiredException"],
        ),
        ("NullPointerException in OrderController", ["NullPointerException", "OrderController"]),
        ("ECONNRESET ORA-00060 E11000 errno 28", ["ECONNRESET", "ORA-00060", "E11000", "errno 28"]),
        ("POST /api/login and /var/lib/mysql", ["POST", "/api/login", "/var/lib/mysql"]),
        ("and/or 50/50", []),
        ("how many I/O errors on dn-07, any TCP/IP or i/o trouble", ["I/O", "TCP/IP"]),  # i/o is I/O again
        (
            "order ORD-7188072 trace 4bf92f3577b34da6a3ce929d0e0e4736",
            ["ORD-7188072", "4bf92f3577b34da6a3ce929d0e0e4736"],
        ),
        (
            "request 123e4567-e89b-12d3-a456-426614174000 to redis-cluster-01:6379",
            ["123e4567-e89b-12d3-a456-426614174000", "redis-cluster-01:6379"],
        ),
        ("did anyone log in as deploy? sshed as root", ["deploy", "root"]),
        ("Failed password for invalid user oracle", ["oracle"]),
        ("for user the service", []),
        ("see https://status.example.com/incidents/42 now", ["https://status.example.com/incidents/42"]),
        ("OOM KILLER and HikariCP but not API HTTP CPU or ERROR", ["OOM KILLER", "HikariCP"]),
    ],
)
def test_tokens(question, expected):
    assert tokens(question) == expected


def test_the_words_that_name_no_token_are_the_grammars():
    """Upper-case words that name nothing and words after "user" that name no one are `word.*` groups."""
    assert {"asap", "api"} <= words("word.acronym") and {"accounts", "the"} <= words("word.not_a_user")
    assert tokens("ASAP: is HikariCP THE CULPRIT") == ["HikariCP", "CULPRIT"]
    assert tokens("invalid user accounts, for user deploy") == ["deploy"]


def test_the_cues_beside_users_and_status_codes_are_the_grammars():
    """The cues before a user or a 1xx–3xx code and the units after a number are `token.*` groups; of
    overlapping user cues the longest is read."""
    assert {"log in as", "for user"} <= words("token.user_cue") and "returned" in words("token.status_cue")
    assert {"ms", "requests", "%"} <= words("token.unit")
    assert tokens("Failed password for invalid user oracle, then logged in as user deploy") == ["oracle", "deploy"]
    assert tokens("a 500% jump in 502s, returned 304 twice") == ["502", "304"]  # 500% is no status code
