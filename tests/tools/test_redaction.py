from __future__ import annotations

import pytest

from evcli.errors import BadInput
from evcli.tools.redaction import ENV_EXTRA_PATTERNS, Redactor


@pytest.mark.parametrize(
    ("raw", "masked", "secret"),
    [
        (
            "url=jdbc:mysql://app:s3cr3t@mysql-primary-01:3306/users",
            "jdbc:mysql://app:***@mysql-primary-01:3306/users",
            "s3cr3t",
        ),
        ("redis://:pw0rd@redis-cluster-01:6379", "redis://:***@redis-cluster-01:6379", "pw0rd"),
        ("Authorization: Bearer abc.def-ghi_jkl", "Authorization: Bearer ***", "abc.def-ghi_jkl"),
        ("curl -H 'bearer 0123456789abcdefXYZ'", "bearer ***", "0123456789abcdefXYZ"),
        ("login failed password=hunter2 user=bob", "password=*** user=bob", "hunter2"),
        ('{"api_key": "abcd1234", "x": 1}', '"api_key": "***"', "abcd1234"),
        ("DB_PASSWORD: swordfish", "DB_PASSWORD: ***", "swordfish"),
        ("client_secret=Zm9vYmFy; next", "client_secret=***", "Zm9vYmFy"),
        ("key AKIAIOSFODNN7EXAMPLE used", "key *** used", "AKIAIOSFODNN7EXAMPLE"),
        ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "token ***", "eyJhbGci"),
        ("OPENAI sk-proj-abcdefghijklmnopqrstuvwxyz0123", "OPENAI ***", "sk-proj"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "***", "MIIEow"),
    ],
)
def test_secrets_are_masked(raw, masked, secret):
    result = Redactor().mask_text(raw)
    assert masked in result
    assert secret not in result


@pytest.mark.parametrize(
    "evidence",
    [
        "HikariPool-1 - Connection is not available, request timed out after 30000ms (total=50, active=50, idle=0, waiting=23)",
        "HighCPUUsage, service=payment-service, state=firing, current=92%, duration=25m",
        "Redis timeout on redis-cluster-01:6379 after 2000ms",
        "max_tokens=512 tokenizer: trigram",
    ],
)
def test_ordinary_evidence_is_left_alone(evidence):
    assert Redactor().mask_text(evidence) == evidence


def test_structures_are_masked_recursively_and_keys_kept():
    data = {"logs": [{"message": "password=hunter2", "level": "ERROR"}], "total": 1, "note": ("token: abc",)}
    masked = Redactor().mask(data)
    assert masked == {"logs": [{"message": "password=***", "level": "ERROR"}], "total": 1, "note": ["token: ***"]}


def test_extra_patterns_from_the_environment(monkeypatch):
    monkeypatch.setenv(ENV_EXTRA_PATTERNS, '["ACME-[0-9]{6}"]')
    assert Redactor.from_env().mask_text("ticket ACME-123456 opened") == "ticket *** opened"
    monkeypatch.setenv(ENV_EXTRA_PATTERNS, "not json")
    with pytest.raises(BadInput, match="JSON list"):
        Redactor.from_env()
    monkeypatch.setenv(ENV_EXTRA_PATTERNS, '["(unclosed"]')
    with pytest.raises(BadInput, match="invalid secret pattern"):
        Redactor.from_env()


def test_mask_stream_equals_mask_lines_on_secrets_among_ordinary_lines():
    from tests.adversarial.secrets_corpus import PEM_BLOCK_LINES, SECRETS

    ordinary = [
        f"2026-07-08 10:00:{n % 60:02d}.000 INFO [app-{n % 7}] c.e.Service - order ORD-{n} took {n}ms"
        for n in range(1500)
    ]
    lines = ordinary[:700] + [entry.line for entry in SECRETS] + ordinary[700:1200] + list(PEM_BLOCK_LINES)
    lines += ["İstanbul token=abc123", "x " * 30 + "Zt8vQm2LpR4xW9yB6nK1sD3fH7jC0gA5eU2iO8qT"] + ordinary[1200:]
    redactor = Redactor()
    for start in range(0, 1200, 97):  # batches cut at different places
        window = lines[start : start + 1100]
        assert list(redactor.mask_stream(window)) == redactor.mask_lines(window)
    assert list(redactor.mask_stream(ordinary)) == ordinary
