"""The commented starting file `evcli config init` writes; it loads back as the default settings."""

from __future__ import annotations

TEMPLATE = """\
# evcli configuration. Precedence: command-line flags > environment variables (EVCLI_*) > the
# active profile (--profile NAME or EVCLI_PROFILE) > this file > built-in defaults.
# `evcli config show` prints the effective value of every key and where it came from;
# `evcli doctor` checks that the backends and models it names answer.
# Never write a secret here: name the environment variable (or file) that holds it.

# The default environment: a snapshot directory or a packaged one (demo, cluster, edge, host, mesh).
# Backend URLs below take its place when set (EVCLI_ENV, --env).
env = "demo"

# Runbook directories searched for guidance (EVCLI_RUNBOOKS, --runbooks); relative to this file.
runbooks = []

# One table per live backend: prometheus, alertmanager, loki, jaeger, tempo, kubernetes (EVCLI_PROMETHEUS,
# --prometheus URL, ...).
# [backends.prometheus]
# url = "http://127.0.0.1:9090"
# timeout = 10                 # seconds per request
# retries = 2                  # on connection errors and 429/502/503/504, with backoff
# service_label = "service"    # the label naming a service: service, app, job, app.kubernetes.io/name
# service_aliases = { payments = "payment-service" }
# ca_bundle = "/etc/ssl/certs/internal-ca.pem"
# insecure_skip_verify = false
# [backends.prometheus.auth]
# kind = "bearer"              # or "basic" with username = "..." and password_env / password_file
# token_env = "PROMETHEUS_TOKEN"   # the variable holding the token (or token_file = "PATH")
#
# [backends.loki]
# url = "http://127.0.0.1:3100"
# service_label = "app"
# headers = { "X-Scope-OrgID" = "team-a" }
#
# [backends.jaeger]                       # or [backends.tempo]: spans and call edges for query_traces
# url = "http://127.0.0.1:16686"

# Models per role: "offline" (no model, the default) or a litellm model string
# (EVCLI_MODEL, --model; keys come from the provider's variable, e.g. OPENAI_API_KEY).
[models]
default = "offline"
# api_base = "http://127.0.0.1:8080/v1"   # an OpenAI-compatible server (EVCLI_API_BASE, --api-base)
# timeout = 60                 # seconds per model call
# max_tokens = 1024
# context_tokens = 32000       # a request's input budget: past 60% of it, old evidence is cut to its refs
#                              # (default: the model's input window; EVCLI_CONTEXT_TOKENS)
# retries = 2
# planner = "openai/gpt-4o-mini"          # a role's own model
# [models.verifier]                       # or a role's own table
# model = "ollama/qwen2.5:7b"
# timeout = 120
# context_tokens = 8000        # a small local model's window

# Named profiles hold the same keys and apply on top of the rest of this file.
# [profiles.prod.backends.prometheus]
# url = "https://prometheus.prod.example.com"
# [profiles.prod.backends.prometheus.auth]
# kind = "bearer"
# token_env = "PROD_PROMETHEUS_TOKEN"
"""
