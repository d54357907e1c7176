from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from evcli.core.errors import BadInput
from evcli.core.redaction import ENV_EXTRA_PATTERNS, Redactor


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


@pytest.mark.parametrize(
    ("raw", "masked", "secret"),
    [
        ("DB_PASS=Canary50Q", "DB_PASS=***", "Canary50Q"),
        ("redis_pass: Canary50Q", "redis_pass: ***", "Canary50Q"),
        ("MYSQL_PWD=Canary50Q mysql -h db-01", "MYSQL_PWD=*** mysql", "Canary50Q"),
        ("PGPASSWORD=Canary50Q psql -h db-01", "PGPASSWORD=*** psql", "Canary50Q"),
        ("curl -u admin:s3cretPw https://api/x", "curl -u admin:*** https://api/x", "s3cretPw"),
        ("curl -sSu admin:s3cretPw https://api/x", "-sSu admin:*** https", "s3cretPw"),
        ("curl --user admin:s3cretPw https://api/x", "--user admin:*** https", "s3cretPw"),
        ("curl https://api/x --user='admin:s3cret Pw'", "--user='admin:***'", "cret Pw"),
        ("GET /r?to=%2Flogin%3Fpassword%3DCanary50Q%26next%3D1", "password%3D***%26next%3D1", "Canary50Q"),
        ("q=%7B%22password%22%3A%22Canary50Q%22%7D", "%22password%22%3A%22***%22", "Canary50Q"),
        ("dsn=postgres%3A%2F%2Fuser%3ACanary50Q%40db-01%3A5432", "postgres%3A%2F%2Fuser%3A***%40db-01", "Canary50Q"),
        ("GET /a.csv?X-Amz-Date=1&X-Amz-Signature=9f86d081884c7d65&x=1", "X-Amz-Signature=***&x=1", "9f86d081884c7d65"),
        ("GET /o?X-Goog-Signature=9f86d081884c7d65 200", "X-Goog-Signature=*** 200", "9f86d081884c7d65"),
        ("GET /b?sv=2022&sig=Canary50Q&sp=r", "sig=***&sp=r", "Canary50Q"),
        ("GET /b?signature=Canary50Q&sp=r", "signature=***&sp=r", "Canary50Q"),
        ("redis-cli -h cache-01 -a Canary50Q ping", "-a *** ping", "Canary50Q"),
        ("127.0.0.1:6379> AUTH Canary50Q", "> AUTH ***", "Canary50Q"),
        ("AUTH default Canary50Q", "AUTH default ***", "Canary50Q"),
        ('1719410000.1 [0 10.0.0.7:50412] "auth" "Canary50Q"', '"auth" "***"', "Canary50Q"),
        ("Cookie: theme=dark; sessionid=Canary50Q", "sessionid=***", "Canary50Q"),
        ("GET /cart?session_id=Canary50Q HTTP/1.1", "session_id=*** HTTP", "Canary50Q"),
        ("PHPSESSID=Canary50Q; path=/", "PHPSESSID=***; path=/", "Canary50Q"),
        ("GET /shop;jsessionid=Canary50Q HTTP/1.1", ";jsessionid=*** HTTP", "Canary50Q"),
        ("password: Is-Fine-123", "password: ***", "Is-Fine-123"),
        ("secret: the.key.v2", "secret: ***", "the.key.v2"),
        ('body="{\\"user\\":\\"app\\",\\"password\\":\\"hunter2\\"}"', '\\"password\\":\\"***\\"', "hunter2"),
        ('cfg {\\"token\\": \\"abc123tok\\"}', '\\"token\\": \\"***\\"', "abc123tok"),
        ('{"p\\u0061ssword": "Canary50Q"}', '"p\\u0061ssword": "***"', "Canary50Q"),
        ("login ｐａｓｓｗｏｒｄ=Canary50Q ok", "ｐａｓｓｗｏｒｄ=*** ok", "Canary50Q"),
        ("login ｐａｓｓｗｏｒｄ：Canary50Q", "ｐａｓｓｗｏｒｄ：***", "Canary50Q"),
        ("login pass\u200bword=Canary50Q ok", "pass\u200bword=*** ok", "Canary50Q"),
        ("DB_\ufeffPASS=Canary50Q", "DB_\ufeffPASS=***", "Canary50Q"),
    ],
)
def test_shapes_found_by_the_security_review_are_masked(raw, masked, secret):
    redactor = Redactor()
    result = redactor.mask_text(raw)
    assert masked in result
    assert secret not in result
    assert redactor.mask_text(result) == result  # idempotent
    assert list(redactor.mask_stream([raw])) == [result]


@pytest.mark.parametrize(
    "line",
    [
        'FATAL:  password authentication failed for user "app"',
        "sshd[812]: Failed password for root from 1.2.3.4 port 22 ssh2",
        "sshd[812]: Accepted password for deploy from 10.0.0.5 port 51234 ssh2",
        "ratelimit: token bucket refilled (capacity=100)",
        "pam_unix(sshd:session): session opened for user root(uid=0) by (uid=0)",
        "suite done: pass=3 fail=0 skip=1",
        "PasswordAuthentication no",
        "the renewed secret: a secret that rotates daily",
        "password: none",
        "redis: AUTH failed for user default",
        "redis: AUTH OK",
        "smtp: AUTH LOGIN",
        "SASL PLAIN authentication failed",
        "signature verification failed for release v2",
        "docker run --user 1000:1000 app",
        "pip install --user evcli",
        "curl -sS -o /dev/null https://api.internal/health",
        "session closed after 30s (session 42)",
        "连接池已满，等待超时：30 秒（重试 3 次）",
        "ｗａｒｎｉｎｇ： ｄｉｓｋ ８５％",
        'msg="cfg {\\"retries\\": \\"3\\"}"',
    ],
)
def test_ordinary_log_text_is_not_masked(line):
    redactor = Redactor()
    assert redactor.mask_text(line) == line
    assert list(redactor.mask_stream([line])) == [line]


def test_a_dict_value_under_a_pass_suffixed_key_is_masked_and_a_bare_pass_is_not():
    assert Redactor().mask({"DB_PASS": "Canary50Q", "pass": "3"}) == {"DB_PASS": "***", "pass": "3"}


def test_a_query_logs_pattern_shows_its_example_masked(tmp_path):
    """The example of a pattern is the indexed (masked) line: a value the template hides as `<*>`
    must be masked in the example too."""
    from evcli.backends.snapshot import demo_env_dir
    from tests.cli._util import evcli

    env = tmp_path / "env"
    shutil.copytree(demo_env_dir(), env)
    stamp = "2026-07-08 23:05:{:02d}.000 ERROR [payment-service-7d9f8b6c4-x2k9p] c.e.payment.Db - leakcheck {}"
    lines = [stamp.format(n, "datasource password: Is-Fine-123") for n in range(3)]
    with (env / "logs" / "payment-service.log").open("a", encoding="utf-8") as log:
        log.write("\n".join(lines) + "\n")

    run = evcli(
        "tool",
        "query_logs",
        "--service",
        "payment-service",
        "--query",
        "leakcheck",
        "--window",
        "2h",
        "--env",
        env,
        "--json",
    )

    assert run.exit_code == 0, run
    assert "Is-Fine-123" not in run.stdout
    patterns = [pattern for pattern in run.json()["output"]["patterns"] if "leakcheck" in pattern["template"]]
    assert patterns and all("password: ***" in pattern["example"] for pattern in patterns), patterns


def test_a_secret_in_the_question_is_masked_before_it_is_stored_or_searched(tmp_path):
    """The question enters the pipeline masked: the stored question, its scope and its keywords."""
    from tests.cli._util import evcli

    db = tmp_path / "q.db"
    run = evcli("ask", "Why is payment-service CPU high? DB_PASS=Canary50Q", "--db", db, "--json")

    assert run.exit_code in (0, 3), run
    assert "canary50q" not in (run.stdout + run.stderr).lower()
    with sqlite3.connect(db) as conn:
        question, config = conn.execute("SELECT question, config FROM diagnosis_run").fetchone()
        dump = "\n".join(conn.iterdump())
    assert question.endswith("DB_PASS=***")
    assert "canary50q" not in dump.lower()  # keywords are lower-cased
    assert json.loads(config)["scope"]  # the scope was read from the masked question


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
