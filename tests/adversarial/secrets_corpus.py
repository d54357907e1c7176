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
