"""Question scope extraction (issue 10, DESIGN §2): what a question asks about, read by code.

`extract_scope` runs the extractors in a fixed order over one `Spans`, each consuming the text it
reads, so every piece of the question is read once: quoted phrases (verbatim, nothing inside them
is read again), the time range, count and alert-state cues, the environment's alert names (before
tokens: the 401 of "high http 401 rate"), distinctive tokens (before names: /api/login is no service
"api"), hosts, service-like names, known services, "service X" names, well-known software named as
the subject (evcli.scope.software: an unknown service that stays a term), CamelCase alert names, levels,
CamelCase/UPPER-CASE tokens, and last the remaining content words.
Deterministic, never raises on any text, never depends on a model.

This package imports nothing itself, so `evcli trace` describes a stored scope (evcli.scope.describe)
without compiling the extractors' patterns; `extract_scope` lives in evcli.scope.extract.
"""
