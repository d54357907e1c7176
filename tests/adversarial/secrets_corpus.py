"""A corpus of secrets as they show up in logs, runbooks and alerts (issue 11).

Each entry is (kind, line, secret): `line` is a realistic line carrying the
secret, `secret` the substring that must never appear in anything evcli
stores, indexes, sends to a model or prints. The values are made up but have
the real shapes (lengths, prefixes, alphabets), so a rule set tuned to real
tokens must catch them. Every path of tests/adversarial/test_secrets.py runs
the same corpus.
"""

from __future__ import annotations

from typing import NamedTuple


class Secret(NamedTuple):
    kind: str
    line: str
    secret: str


_PEM_BODY = (
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKB",
    "wQIDAQABAoIBAFkTAwDcmhtRPhu2pVPd0RYsQz2kPbH8rVbHrDHjfT0cR9LxYJKe",
    "Zq3Jt1eSvrkL0pVHxJ8Wy6nP2fXAjqz1Wc2E7hT9QmV3sdkDuY4lXkq8aGZbN0Mp",
)

SECRETS: tuple[Secret, ...] = (
    Secret(
        "aws-access-key-id", "boto: using aws_access_key_id AKIAQ3EGRZLT7XKPQW2M for s3 upload", "AKIAQ3EGRZLT7XKPQW2M"
    ),
    Secret(
        "aws-secret-access-key",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY",
    ),
    Secret(
        "aws-secret-bare-env",
        "export AWS_SECRET_ACCESS_KEY=Zt8vQm2LpR4xW9yB6nK1sD3fH7jC0gA5eU2iO8qT",
        "Zt8vQm2LpR4xW9yB6nK1sD3fH7jC0gA5eU2iO8qT",
    ),
    Secret(
        "gcp-service-account-json",
        '{"type": "service_account", "project_id": "shop-prod", "private_key_id": "3f9a2c", '
        '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDGcpZ7\\n'
        '-----END PRIVATE KEY-----\\n", "client_email": "etl@shop-prod.iam.gserviceaccount.com"}',
        "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDGcpZ7",
    ),
    Secret(
        "azure-storage-connection-string",
        "DefaultEndpointsProtocol=https;AccountName=shopblobs;AccountKey=q8Xv2LmP9rT4wZ6yB1nK3sD7fH0jC5gA8eU2iO4qTb"
        "Rz9x1YcW3vN6mL0pK8jH2gF5dS7aQ4wE9rT1yU3iO6p==;EndpointSuffix=core.windows.net",
        "q8Xv2LmP9rT4wZ6yB1nK3sD7fH0jC5gA8eU2iO4qTbRz9x1YcW3vN6mL0pK8jH2gF5dS7aQ4wE9rT1yU3iO6p==",
    ),
    Secret(
        "azure-sas-signature",
        "GET https://shopblobs.blob.core.windows.net/exports/a.csv?sv=2022-11-02&se=2025-01-01&sig=Hk3%2Bq9ZpL7wX2vB8nM4cR1tY6uE0oI5aS3dF9gJ2kLq%3D",
        "Hk3%2Bq9ZpL7wX2vB8nM4cR1tY6uE0oI5aS3dF9gJ2kLq",
    ),
    Secret(
        "slack-webhook",
        "alert sink: https://hooks.slack.com/services/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",
        "k9Zr2XwP7vLq4NtB8mY1cD6e",
    ),
    Secret(
        "slack-bot-token",
        "slack client init token xoxb-2401987435-5529874123987-Q7wErTyUiOpAsDfGhJkLzXcV",
        "Q7wErTyUiOpAsDfGhJkLzXcV",
    ),
    Secret(
        "stripe-live-key",
        "charge failed with key sk_live_51H8kLm2eZvKYlo2CqT9wX3yB7nP4rS6dF1gH8jK0",
        "51H8kLm2eZvKYlo2CqT9wX3yB7nP4rS6dF1gH8jK0",
    ),
    Secret(
        "stripe-restricted-key",
        "STRIPE_KEY: rk_live_51Mz0qRtY7uI9oP3aS5dF7gH9jK1lZ3xC5vB7nM",
        "51Mz0qRtY7uI9oP3aS5dF7gH9jK1lZ3xC5vB7nM",
    ),
    Secret(
        "gitlab-pat",
        "git clone https://gitlab.example.com/shop/api.git using glpat-Xq7vR2mKp9LzT4wB8nY1",
        "Xq7vR2mKp9LzT4wB8nY1",
    ),
    Secret(
        "github-fine-grained-pat",
        "GITHUB_TOKEN set from github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01234",
        "11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ01234",
    ),
    Secret(
        "github-classic-pat",
        "pushing with ghp_R8vK2mXq7LpT9wZ4nB6yC1dF3gH5jK0sA2eU",
        "ghp_R8vK2mXq7LpT9wZ4nB6yC1dF3gH5jK0sA2eU",
    ),
    Secret(
        "npm-token",
        "//registry.npmjs.org/:_authToken=npm_Zk8Lq2Wv9Rt4Xy6Bn1Mc3Sd7Fg0Hj5Ka8Pe2",
        "npm_Zk8Lq2Wv9Rt4Xy6Bn1Mc3Sd7Fg0Hj5Ka8Pe2",
    ),
    Secret(
        "npm-token-bare",
        "publish failed for token npm_Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5",
        "npm_Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5",
    ),
    Secret(
        "pem-private-key-one-line",
        "loaded key -----BEGIN RSA PRIVATE KEY----- MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2Gq8 -----END RSA PRIVATE KEY-----",
        "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2Gq8",
    ),
    Secret(
        "jwt",
        "auth ok user=42 session=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0MiIsIm5hbWUiOiJhZG1pbiJ9."
        "Sfl5KxwRJSMeKKF2QT4fwpMeJf36POk6yJVadQssw5c",
        "Sfl5KxwRJSMeKKF2QT4fwpMeJf36POk6yJVadQssw5c",
    ),
    Secret(
        "url-password-with-slash-and-at",
        "connecting to postgres://app:Tr0ub4dor/x@3@db-01.internal:5432/orders",
        "Tr0ub4dor/x@3",
    ),
    Secret("url-password-plain", "redis url redis://default:Kq9vX2pLm7@cache-01:6379/0", "Kq9vX2pLm7"),
    Secret(
        "authorization-basic",
        "GET /api/v1/orders Authorization: Basic YWRtaW46UzNjcjN0UGFzc3dvcmQh",
        "YWRtaW46UzNjcjN0UGFzc3dvcmQh",
    ),
    Secret("authorization-bearer-short", "upstream call header Bearer x9Kq2Lm7 rejected with 401", "x9Kq2Lm7"),
    Secret("x-api-key-header", "request headers: X-Api-Key: 7f3kQ9zL2mX8vB4nW6pR1tY5", "7f3kQ9zL2mX8vB4nW6pR1tY5"),
    Secret(
        "password-flag-long", "exec: pg_dump --host db-01 --password Hunt3r2Secret --dbname orders", "Hunt3r2Secret"
    ),
    Secret("password-flag-short", "exec: mysql -h db-01 -u root -p Sw0rdf1shQ orders", "Sw0rdf1shQ"),
    Secret("password-flag-attached", "exec: mysqldump -uroot -pPl4ntPassw0rdZ shop", "Pl4ntPassw0rdZ"),
    Secret("pgpassword-env", "cron: PGPASSWORD=Qz8mW2vL5xR7 psql -h db-01 -U report -c 'select 1'", "Qz8mW2vL5xR7"),
    Secret("mysql-identified-by", "ALTER USER 'app'@'%' IDENTIFIED BY 'M4r1aDB-s3cret!';", "M4r1aDB-s3cret!"),
    Secret("netrc-password", "machine api.example.com login deploy password N3trcP4ssw0rd", "N3trcP4ssw0rd"),
    Secret(
        "docker-auths-json",
        '{"auths": {"registry.example.com": {"auth": "ZGVwbG95OkQwY2tlclJlZ2lzdHJ5UGFzcw=="}}}',
        "ZGVwbG95OkQwY2tlclJlZ2lzdHJ5UGFzcw==",
    ),
    Secret(
        "sendgrid-key",
        "mailer: 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 sent 0",
        "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",
    ),
    Secret(
        "twilio-api-key",
        "sms gateway key SK2a4f6b8c0d1e3f5a7b9c2d4e6f8a0b1c auth failed",
        "SK2a4f6b8c0d1e3f5a7b9c2d4e6f8a0b1c",
    ),
    Secret(
        "google-api-key",
        "maps geocode key=AIzaSyD3x9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz quota exceeded",
        "AIzaSyD3x9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz",
    ),
    Secret(
        "google-api-key-bare",
        "maps client created with AIzaSyB7c6d5e4f3g2h1i0jKlMnOpQrStUvWxYz for tiles",
        "AIzaSyB7c6d5e4f3g2h1i0jKlMnOpQrStUvWxYz",
    ),
    Secret("password-single-quoted", "config: password='Wh1sk3y-T4ngo' loaded", "Wh1sk3y-T4ngo"),
    Secret(
        "password-quoted-with-spaces",
        'datasource password="correct horse battery staple" user=app',
        "horse battery staple",
    ),
    Secret("password-json", '{"user": "app", "password": "J50nP4ss!word", "host": "db-01"}', "J50nP4ss!word"),
    Secret("client-secret-yaml", "  client_secret: oauth2-Cl13ntS3cr3tV4lu3", "oauth2-Cl13ntS3cr3tV4lu3"),
    Secret(
        "openai-key",
        "llm call with sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z failed",
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
    ),
    Secret(
        "anthropic-key",
        "ANTHROPIC key sk-ant-api03-Zx8Cv7Bn6Mq5Wr4Et3Yu2Io1Pa0Sd9Fg8Hj7Kl6 rejected",
        "Zx8Cv7Bn6Mq5Wr4Et3Yu2Io1Pa0Sd9Fg8Hj7Kl6",
    ),
    Secret(
        "huggingface-token",
        "hub download with 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",
        "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",
    ),
    Secret(
        "pypi-token",
        "twine upload -u __token__ pypi-AgEIcHlwaS5vcmcCJGE4ZTVmNjc4LWExYjItNGMzZC1iZjBlLTRhNTY3ODkwMTIzNAACKlsz",
        "AgEIcHlwaS5vcmcCJGE4ZTVmNjc4LWExYjItNGMzZC1iZjBlLTRhNTY3ODkwMTIzNAACKlsz",
    ),
    Secret("redis-cli-auth", "healthcheck: redis-cli -h cache-01 -a R3d1sAuthP4ss ping", "R3d1sAuthP4ss"),
    Secret("pem-body-line", _PEM_BODY[1], _PEM_BODY[1]),
    # Shapes a security review found unmasked (appended: test_secrets.py names entries by index).
    Secret("pass-suffixed-env", "worker env DB_PASS=Canary50Qx7 loaded from vault", "Canary50Qx7"),
    Secret("pass-suffixed-yaml", "  REDIS_PASS: R3disP4ssVal", "R3disP4ssVal"),
    Secret("pwd-suffixed-env", "cron: MYSQL_PWD=MyPwdV4lue9 mysqldump shop", "MyPwdV4lue9"),
    Secret("curl-user-short", "exec: curl -sS -u admin:CurlUs3rPw https://api.internal/v1/orders", "CurlUs3rPw"),
    Secret("curl-user-long", "exec: curl --user deploy:CurlL0ngPw -X POST https://api.internal/deploy", "CurlL0ngPw"),
    Secret(
        "url-encoded-password",
        "GET /redirect?to=%2Flogin%3Fuser%3Dbob%26password%3DPctEnc0dedPw HTTP/1.1",
        "PctEnc0dedPw",
    ),
    Secret("url-encoded-dsn", "config dsn=postgres%3A%2F%2Freport%3APctDsnPw9%40db-01%3A5432%2Forders", "PctDsnPw9"),
    Secret(
        "aws-presigned-signature",
        "GET https://exports.s3.amazonaws.com/a.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20250101T000000Z"
        "&X-Amz-SignedHeaders=host&X-Amz-Signature=5b1d3f0e9a8c7b6a5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c",
        "5b1d3f0e9a8c7b6a5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c",
    ),
    Secret(
        "gcs-signed-signature",
        "download https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature=7e2a9c4f1b3d5e6f"
        "&X-Goog-Expires=900",
        "7e2a9c4f1b3d5e6f",
    ),
    Secret(
        "presigned-signature-param",
        "GET /blob/a.csv?sv=2022-11-02&sp=r&signature=Pr3s1gnedS1g HTTP/1.1",
        "Pr3s1gnedS1g",
    ),
    Secret("redis-auth-command", "replica sync: sent AUTH R3disAuthCmdPw", "R3disAuthCmdPw"),
    Secret("redis-monitor-auth", '1719410000.123456 [0 10.0.0.7:50412] "AUTH" "default" "R3disMonPw"', "R3disMonPw"),
    Secret("session-cookie", "Cookie: theme=dark; sessionid=S3ssionCook1eVal", "S3ssionCook1eVal"),
    Secret("session-id-param", "GET /cart?session_id=S3ssIdParamVal HTTP/1.1", "S3ssIdParamVal"),
    Secret("phpsessid", "php session PHPSESSID=phpS3ss1dV4lue expired", "phpS3ss1dV4lue"),
    Secret("jsessionid", "GET /shop;jsessionid=JS3ss10nV4lue0 HTTP/1.1", "JS3ss10nV4lue0"),
    Secret("password-word-hyphen", "datasource password: Is-Fine-123", "Is-Fine-123"),
    Secret("escaped-json-password", 'payload="{\\"user\\":\\"app\\",\\"password\\":\\"EscJs0nPw\\"}"', "EscJs0nPw"),
    Secret("escaped-json-token", 'msg="cfg {\\"token\\": \\"EscT0kenVal\\"}"', "EscT0kenVal"),
    Secret("fullwidth-key", "login \uff50\uff41\uff53\uff53\uff57\uff4f\uff52\uff44=Fu11w1dthPw ok", "Fu11w1dthPw"),
    Secret("zero-width-key", "login pass\u200bword=Z3r0w1dthPw ok", "Z3r0w1dthPw"),
)

# A private key written over several lines, as a log file or a runbook holds it
# (each line processed on its own): every body line must be masked.
PEM_BLOCK_LINES: tuple[str, ...] = ("-----BEGIN PRIVATE KEY-----", *_PEM_BODY, "-----END PRIVATE KEY-----")
PEM_BLOCK_SECRETS: tuple[str, ...] = _PEM_BODY

ALL_SECRET_VALUES: tuple[str, ...] = tuple(entry.secret for entry in SECRETS) + PEM_BLOCK_SECRETS


def leaked(text: str) -> list[str]:
    """The corpus kinds whose secret appears in `text`."""
    kinds = [entry.kind for entry in SECRETS if entry.secret in text]
    if any(body in text for body in PEM_BLOCK_SECRETS):
        kinds.append("pem-multi-line-body")
    return kinds
