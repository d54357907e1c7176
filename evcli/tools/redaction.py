"""Masking secrets before anything is stored, indexed, shown to a model or printed.

Tool outputs, runbooks, alert payloads, imported sessions and questions are
data from the outside world: log lines carry JDBC URLs with passwords, HTTP
headers with bearer tokens, cloud keys. Every such string goes through
`Redactor.mask` / `mask_text` first (the runner, the knowledge index, alert
parsing, session creation and session documents read from disk all call it).

The rules are gitleaks-style: each has keywords (lowercase literals) and a
regex whose `s…` groups are the secret. A rule runs only when one of its
keywords occurs in the line, so an ordinary log line costs a few substring
checks rather than ~35 regex scans. Measured on the demo logs on one machine:
~60-75 µs a line, against ~160-250 µs for the previous 10-regex list and
~900 µs for detect-secrets 1.5 `scan_line`, which also reports a secret's
presence rather than its span and missed the GCP JSON, `IDENTIFIED BY` and
Docker `auth` shapes of the corpus. Two rules have no keyword: a long
mixed-case base64 word, and a dict value whose key names a secret
(`{"token": "…"}`).

Invariants: masking is idempotent (`mask(mask(x)) == mask(x)`); a key name is
kept so a reader still knows what was there; text is masked line by line, and
the body lines of a private key written over several lines (or over several
strings of one structure, as log lines are) are masked from the BEGIN line to
the END line.
"""

from __future__ import annotations

import json
import os
import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache, cached_property
from itertools import islice
from typing import Any

import ahocorasick

MASK = "***"

ENV_EXTRA_PATTERNS = "EVCLI_REDACT_PATTERNS"

# Key names whose value is a secret; the name must END with one of these
# (`max_tokens=512` and `tokenizer:` are left alone).
_KEY = (
    r"[\w.-]*(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|accountkey"
    r"|private[_-]?key|credentials?|auth|sig)"
)
_KEY_WORDS = ("pass", "pwd", "secret", "token", "key", "credential", "auth", "sig")
# Prose after "secret:" ("the renewed secret: a secret that…") is not a value (after "=" it is).
_PROSE = r"(?:a|an|the|is|was|are|not|no|none|null|true|false|to|of|for|and|or|in|on|it|this|that|be|has|set)"
_QUOTED = r"(?P<q>[\"'])(?P<s>(?:(?!(?P=q))[^\n])+)(?P=q)"


@dataclass(frozen=True)
class _Rule:
    name: str
    keywords: tuple[str, ...]  # lowercase literals; the rule runs only if one occurs in the line
    source: str  # the regex; groups named s… are the secret; without one the whole match is

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        """Compiled on the rule's first use (all rules at import cost ~15 ms of every command's start)."""
        return re.compile(self.source)


def _rule(name: str, keywords: tuple[str, ...], pattern: str) -> _Rule:
    return _Rule(name, keywords, pattern)


_RULES: tuple[_Rule, ...] = (
    # PEM keys on one line (or with literal "\n" as in service-account JSON).
    _rule(
        "private-key",
        ("private key",),
        r"-----BEGIN[ A-Z0-9_-]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[ A-Z0-9_-]*PRIVATE KEY(?: BLOCK)?-----|$)",
    ),
    # scheme://user:password@host — the password may hold '/' and '@' (the host follows the last '@').
    _rule(
        "url-credentials",
        ("://",),
        r"(?i)\b[a-z][a-z0-9+.-]*://[^:/\s@]*:(?P<s>[^\s@]*(?:@[^\s@]*)*?)@(?=[^\s@]+(?:\s|$))",
    ),
    _rule(
        "slack-webhook", ("hooks.slack.com",), r"hooks\.slack\.com/(?:services|workflows)/(?P<s>[A-Za-z0-9+/_-]{16,})"
    ),
    # Token shapes (gitleaks rule ids in brackets), masked whole.
    _rule(
        "aws-access-key-id",
        ("akia", "asia", "agpa", "aida", "aroa", "anpa", "anva", "abia", "acca"),
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}\b",
    ),
    _rule("jwt", ("eyj",), r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    _rule("github-token", ("gh", "github_pat_"), r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
    _rule("gitlab-token", ("gl",), r"\bgl(?:pat|dt|rt|ptt|soat|cbt|ft|imt|agent)-[A-Za-z0-9_-]{20,}"),
    _rule("slack-token", ("xox",), r"\bxox[abprse]-[A-Za-z0-9-]{10,}"),
    _rule("stripe-key", ("_live_", "_test_"), r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}"),
    _rule("openai-anthropic-key", ("sk-",), r"\bsk-(?:proj-|ant-[a-z]+\d*-)?[A-Za-z0-9_-]{20,}"),
    _rule("npm-token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b"),
    _rule("pypi-token", ("pypi-",), r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{40,}"),
    _rule("huggingface-token", ("hf_",), r"\bhf_[A-Za-z0-9]{30,}\b"),
    _rule("sendgrid-key", ("sg.",), r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"),
    _rule("twilio-api-key", ("sk",), r"\bSK[0-9a-fA-F]{32}\b"),
    _rule("google-api-key", ("aiza",), r"\bAIza[0-9A-Za-z_-]{35,}"),
    _rule("digitalocean-token", ("_v1_",), r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    _rule("shopify-token", ("shp",), r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    _rule("vault-token", ("hvs.", "hvb."), r"\bhv[sb]\.[A-Za-z0-9_-]{24,}"),
    _rule("telegram-bot-token", (":aa",), r"\b\d{8,10}:AA[0-9A-Za-z_-]{33}\b"),
    # Headers and schemes.
    _rule(
        "authorization",
        ("authorization",),
        r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[=:][ \t]*[\"']?(?:(?:bearer|basic|token|digest|negotiate|apikey|sso-key)[ \t]+)?"
        r"(?P<s>[^\s\"',;]+)",
    ),
    _rule(
        "bearer",
        ("bearer",),
        r"(?i)\bbearer[ \t]+(?P<s>(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{6,}=*|[A-Za-z0-9._~+/-]{20,}=*)",
    ),
    _rule("cookie-header", ("cookie",), r"(?i)\b(?:set-)?cookie[ \t]*:[ \t]*(?P<s>[^\s\"']+)"),
    # SQL: IDENTIFIED BY '…', PASSWORD '…'.
    _rule(
        "sql-password",
        ("identified", "password"),
        r"(?i)\b(?:identified(?:[ \t]+with[ \t]+\S+)?[ \t]+by|password)[ \t]+" + _QUOTED,
    ),
    # Command lines: --password X, -p X (database clients), redis-cli -a X, .netrc.
    _rule(
        "password-flag",
        ("-p", "--t", "--s", "--a"),
        r"(?i)(?<![\w-])--?(?:password|passwd|pass|pwd|token|secret|api-key)(?:[ \t]+|=)"
        r"(?:(?P<q>[\"'])(?P<s1>(?:(?!(?P=q))[^\n])+)(?P=q)|(?P<s2>[^\s\"'-][^\s\"']*))",
    ),
    _rule(
        "db-client-p-flag",
        ("mysql", "mariadb", "mongo", "sshpass", "psql"),
        r"\b(?:mysql\w*|mariadb\w*|mongo\w*|sshpass|psql)\b[^\n]*?[ \t]-p[ \t]?(?P<s>[^\s-]\S*)",
    ),
    _rule(
        "redis-auth",
        ("redis-cli", "requirepass", "masterauth"),
        r"(?i)(?:\bredis-cli\b[^\n]*?[ \t]-a|\b(?:requirepass|masterauth))[ \t]+(?P<s>\S+)",
    ),
    _rule("netrc", ("login",), r"(?i)\blogin[ \t]+\S+[ \t]+password[ \t]+(?P<s>\S+)"),
    # key=value, key: value, "key": "value" for secret-looking keys.
    _rule("keyed-quoted", _KEY_WORDS, r"(?i)\b" + _KEY + r"[\"']?[ \t]*[=:][ \t]*" + _QUOTED),
    _rule(
        "keyed-value",
        _KEY_WORDS,
        r"(?i)\b" + _KEY + r"[\"']?[ \t]*(?:=[ \t]*|:[ \t]*(?!" + _PROSE + r"\b))(?![\"'])(?P<s>[^\s\"',;&)}\]]+)",
    ),
)

# Each keyword once, with the rules it triggers: one substring test per keyword
# (a generator per rule costs several times more).
_KEYWORD_RULES: tuple[tuple[str, tuple[_Rule, ...]], ...] = tuple(
    (keyword, tuple(rule for rule in _RULES if keyword in rule.keywords))
    for keyword in sorted({keyword for rule in _RULES for keyword in rule.keywords})
)

# A word that is a long run of mixed-case base64 (upper, lower and digits; hex
# digests and ids have no upper case): the body line of a PEM key seen without
# its BEGIN line, or another encoded secret.
_BASE64_WORD = re.compile(r"(?<![^\s\"'=:,(\[{])[A-Za-z0-9+][A-Za-z0-9+/]{39,}={0,2}(?![^\s\"',;)\]}])")
_HAS_CLASSES = (re.compile(r"[A-Z]"), re.compile(r"[a-z]"), re.compile(r"[0-9]"))
# A dict key naming a secret: its string value is masked whole (alert labels, JSON configs).
_SECRET_KEY = re.compile(r"(?i)" + _KEY)
_KEY_BEGIN = re.compile(r"-----BEGIN[ A-Z0-9_-]*PRIVATE KEY(?: BLOCK)?-----")
_KEY_END = re.compile(r"-----END[ A-Z0-9_-]*PRIVATE KEY(?: BLOCK)?-----")
_KEY_BODY = re.compile(r"[A-Za-z0-9+/=]{16,}")
# A BEGIN line whose END never comes masks at most this many following lines.
MAX_KEY_BLOCK_LINES = 200
_STREAM_BATCH = 512  # lines `mask_stream` screens at once (memory: a few copies of a batch)


_BASE64_RUN = re.compile(r"[A-Za-z0-9+/]{40}")  # where a _BASE64_WORD may be (a superset)
_BASE64_BYTES = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", b"a" * 64)
_RUN_OF_40 = b"a" * 40


@cache
def _keyword_automaton() -> ahocorasick.Automaton:
    """Every rule keyword in one Aho-Corasick automaton: one pass over a text finds them all."""
    automaton = ahocorasick.Automaton()
    for keyword, _ in _KEYWORD_RULES:
        automaton.add_word(keyword, keyword)
    automaton.make_automaton()
    return automaton


def _base64_runs(text: str) -> Iterator[int]:
    """Offsets in `text` where a run of 40 base64 characters starts (every _BASE64_WORD holds
    one); an ASCII text is screened as bytes with every base64 character translated to `a`."""
    if not text.isascii():
        yield from (match.start() for match in _BASE64_RUN.finditer(text))
        return
    screened = text.encode().translate(_BASE64_BYTES)
    found = screened.find(_RUN_OF_40)
    while found != -1:
        yield found
        line_end = screened.find(b"\n", found)  # one offset per line is enough
        found = -1 if line_end == -1 else screened.find(_RUN_OF_40, line_end)


def _replace(match: re.Match[str]) -> str:
    spans = [match.span(name) for name in match.re.groupindex if name.startswith("s") and match.group(name) is not None]
    if not spans:
        return MASK
    start, end = spans[0]
    text = match.group(0)
    return text[: start - match.start()] + MASK + text[end - match.start() :]


def _mask_base64_word(match: re.Match[str]) -> str:
    word = match.group(0)
    return MASK if all(pattern.search(word) for pattern in _HAS_CLASSES) else word


def _secret_value(key: Any, value: Any) -> bool:
    return isinstance(key, str) and isinstance(value, str) and bool(value) and bool(_SECRET_KEY.fullmatch(key))


class _KeyBlock:
    """Whether an earlier line opened a private key block that has not ended yet.

    Inside a block every line of a text is masked; among the strings of a
    structure only those that are nothing but base64 (body lines) are, so a log
    item's timestamp, level and source stay readable.
    """

    def __init__(self, *, lines: bool) -> None:
        self.lines = lines
        self.remaining = 0

    def line(self, redactor: Redactor, text: str) -> str:
        if self.remaining:
            end = _KEY_END.search(text)
            if end:
                self.remaining = 0
                return (MASK if text[: end.start()].strip() else "") + text[end.start() :]
            if self.lines or _KEY_BODY.fullmatch(text.strip()):
                self.remaining -= 1
                return MASK
            return redactor.mask_line(text)
        begin = _KEY_BEGIN.search(text)
        if begin and not _KEY_END.search(text, begin.end()):
            self.remaining = MAX_KEY_BLOCK_LINES
        return redactor.mask_line(text)


class Redactor:
    def __init__(self, extra_patterns: Iterable[str] = ()) -> None:
        extra = []
        for pattern in extra_patterns:
            try:
                extra.append(re.compile(pattern))
            except re.error as exc:
                from evcli.errors import BadInput

                raise BadInput(f"invalid secret pattern {pattern!r}: {exc}") from exc
        self._extra = tuple(extra)

    @classmethod
    def from_env(cls) -> Redactor:
        """Built-in rules plus a JSON list of regexes in $EVCLI_REDACT_PATTERNS."""
        raw = os.environ.get(ENV_EXTRA_PATTERNS, "").strip()
        if not raw:
            return cls()
        try:
            extra = json.loads(raw)
        except json.JSONDecodeError:
            extra = None
        if not isinstance(extra, list) or not all(isinstance(p, str) for p in extra):
            from evcli.errors import BadInput

            raise BadInput(f"${ENV_EXTRA_PATTERNS} must be a JSON list of regular expressions")
        return cls(extra)

    def mask_line(self, text: str) -> str:
        """One line (no key-block state): every rule whose keyword occurs, then the extra patterns."""
        text = _BASE64_WORD.sub(_mask_base64_word, text)
        lowered = text.lower()
        triggered = {rule for keyword, rules in _KEYWORD_RULES if keyword in lowered for rule in rules}
        for rule in _RULES:
            if rule in triggered:
                text = rule.pattern.sub(_replace, text)
        for pattern in self._extra:
            text = pattern.sub(MASK, text)
        return text

    def mask_lines(self, lines: Iterable[str]) -> list[str]:
        block = _KeyBlock(lines=True)
        return [block.line(self, line) for line in lines]

    def mask_stream(self, lines: Iterable[str]) -> Iterator[str]:
        """`mask_lines` over a stream of lines (no line endings), the same result at a fraction of
        the cost when secrets are rare: a batch of lines is joined once, each keyword and the
        base64 shape are searched in the whole batch, and only the lines holding one go through
        `mask_line`. A batch that is in or opens a key block, that meets extra patterns, or whose
        lower-casing changes its length (offsets would shift) is masked line by line."""
        block = _KeyBlock(lines=True)
        source = iter(lines)
        while batch := list(islice(source, _STREAM_BATCH)):
            yield from self._mask_batch(batch, block)

    def _mask_batch(self, batch: list[str], block: _KeyBlock) -> list[str]:
        joined = "\n".join(batch)
        lowered = joined.lower()
        if block.remaining or self._extra or len(lowered) != len(joined) or _KEY_BEGIN.search(joined):
            return [block.line(self, line) for line in batch]
        starts = [0] * (len(batch) + 1)  # starts[i]: offset of line i in `joined`
        for index, line in enumerate(batch):
            starts[index + 1] = starts[index] + len(line) + 1
        suspects = {bisect_right(starts, end) - 1 for end, _ in _keyword_automaton().iter(lowered)}
        suspects.update(bisect_right(starts, start) - 1 for start in _base64_runs(joined))
        masked = batch.copy()
        for index in suspects:
            masked[index] = self.mask_line(batch[index])
        return masked

    def mask_text(self, text: str) -> str:
        if "\n" not in text:
            return self.mask_line(text)
        return "\n".join(self.mask_lines(text.split("\n")))

    def mask(self, value: Any) -> Any:
        """The same structure with every string masked (dict keys kept).

        Strings are visited in order with one key-block state, so a private key
        spread over consecutive log items is masked whole.
        """
        return self._mask(value, _KeyBlock(lines=False))

    def _mask(self, value: Any, block: _KeyBlock) -> Any:
        if isinstance(value, str):
            return self.mask_text(value) if "\n" in value else block.line(self, value)
        if isinstance(value, dict):
            return {key: MASK if _secret_value(key, item) else self._mask(item, block) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._mask(item, block) for item in value]
        return value
