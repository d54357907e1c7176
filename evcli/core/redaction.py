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

A line is matched as written and, when it differs, folded: compatibility
characters normalised (NFKC: `ｐａｓｓｗｏｒｄ` is `password`), invisible ones
dropped (`pass\\u200bword`) and JSON string escapes decoded (`{\\"password\\":
…}` written inside a string, `p\\u0061ssword`). A secret found only in the
folded line is masked in the line as written, which keeps its other characters.

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
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cache, cached_property
from itertools import islice
from typing import Any

import ahocorasick

from evcli.core.errors import BadInput

MASK = "***"

ENV_EXTRA_PATTERNS = "EVCLI_REDACT_PATTERNS"

# Key names whose value is a secret; the name must END with one of these
# (`max_tokens=512` and `tokenizer:` are left alone). A bare `pass` is a test counter
# (`pass=3 fail=0`); after a separator it is a password (`DB_PASS`, `REDIS_PASS`).
_KEY = (
    r"[\w.-]*(?:password|passwd|passphrase|[_.-]pass|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|accountkey"
    r"|private[_-]?key|credentials?|auth|sig)"
)
_KEY_WORDS = ("pass", "pwd", "secret", "token", "key", "credential", "auth", "sig")
# Prose after "secret:" ("the renewed secret: a secret that…") is not a value (after "=" it is):
# a prose word that is the whole value token (`Is-Fine-123` is a value, not the word `is`).
_PROSE = (
    r"(?:a|an|the|is|was|are|not|no|none|null|true|false|to|of|for|and|or|in|on|it|this|that|be|has|set)"
    r"[.!?:]*(?![^\s\"',;&)}\]])"
)
_QUOTED = r"(?P<q>[\"'])(?P<s>(?:(?!(?P=q))[^\n])+)(?P=q)"
# Words after a bare AUTH that are no password (`AUTH failed`, SMTP `AUTH LOGIN`).
_AUTH_STATUS = r"(?i:ok|fail\w*|err\w*|success\w*|required|denied|rejected|login|plain|cram-md5|xoauth2|gssapi|ntlm)\b"


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
        "url-credentials-encoded",
        ("%3a%2f%2f",),
        r"(?i)\b[a-z][a-z0-9+.-]*%3A%2F%2F(?:(?!%3A|%40|%2F)[^\s/?#&@:])*%3A(?P<s>(?:(?!%40|%2F|%3F)[^\s&/?#])+)%40",
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
    # Session cookies and parameters (PHPSESSID, JSESSIONID, sessionid, session_id); only after `=`:
    # `"session_id": "…"` names evcli's own sessions.
    _rule(
        "session-id",
        ("sessid", "sessionid", "session_id", "session-id"),
        r"(?i)\b[\w.-]*?sess(?:ion)?[_-]?id(?:=|%3D)(?P<s>[^\s\"',;&)}\]]+)",
    ),
    # Presigned URLs: X-Amz-Signature, X-Goog-Signature, signature= (sig= is a _KEY).
    _rule("url-signature", ("signature",), r"(?i)\b[\w-]*signature(?:=|%3D)(?P<s>[^\s&\"',;#)}\]]+)"),
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
    # Redis AUTH [user] password, typed (upper case: `auth failed` is prose) or as MONITOR quotes
    # it (`"auth" "pw"`); a user name is read only when the password ends the line.
    _rule(
        "redis-auth-command",
        ("auth",),
        r"(?<![\w.-])(?:AUTH|\"(?i:auth)\")[ \t]+(?!" + _AUTH_STATUS + r")"
        r"(?:\"?[^\s\"]+\"?[ \t]+(?=\"?[^\s\"]+\"?[ \t]*$))?\"?(?P<s>[^\s\"]+)",
    ),
    # curl -u user:password (after `curl`: `docker run -u 1000:1000` is a uid), --user user:password.
    _rule(
        "user-password-option",
        ("curl", "--user", "--proxy-user"),
        r"(?i)(?:\bcurl\b[^\n]*?[ \t]-[a-z]*u[ \t]*|(?<![\w-])--(?:proxy-)?user(?:[ \t]+|=))(?!\d+:\d+\b)"
        r"(?:(?P<q>[\"'])[^:\n]*?:(?P<s1>(?:(?!(?P=q))[^\n])+)(?P=q)|[^\s:\"']+:(?P<s2>[^\s\"']+))",
    ),
    _rule("netrc", ("login",), r"(?i)\blogin[ \t]+\S+[ \t]+password[ \t]+(?P<s>\S+)"),
    # key=value, key: value, "key": "value" for secret-looking keys.
    _rule("keyed-quoted", _KEY_WORDS, r"(?i)\b" + _KEY + r"[\"']?[ \t]*[=:][ \t]*" + _QUOTED),
    _rule(
        "keyed-value",
        _KEY_WORDS,
        r"(?i)\b" + _KEY + r"[\"']?[ \t]*(?:=[ \t]*|:[ \t]*(?!" + _PROSE + r"))(?![\"'])(?P<s>[^\s\"',;&)}\]]+)",
    ),
    # URL-encoded: `password%3D…`, `%22token%22%3A%22…%22`; %26 (`&`) and %22 (`"`) end the value.
    _rule(
        "keyed-encoded",
        ("%3a", "%3d"),
        r"(?i)\b" + _KEY + r"(?:%22)?%3[AD](?:%22)?(?P<s>(?:[^\s\"',;&%)}\]]|%(?!26|22))+)",
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


# Folding reads a JSON `\uXXXX` escape or escaped quote, backslash or slash as the character,
# then every character through _FOLD_TABLE. Invisible characters are Unicode's default-ignorable
# code points (zero-width space and joiners, bidi controls, soft hyphen, BOM, variation selectors…).
_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|[\"'\\/])")
_UNIT = re.compile(_ESCAPE.pattern + "|.", re.DOTALL)  # what folds as one: an escape or a character
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)

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


_FOLD_TABLE_SIZE = 1 << 16


class _FoldTable(dict[int, str]):
    """The `str.translate` table of folding: a character to its NFKC form, an invisible one to
    nothing; filled as characters are met (a lookup of a known one costs no Python call), up to
    _FOLD_TABLE_SIZE of them."""

    def __missing__(self, code: int) -> str:
        char = chr(code)
        folded = "" if _INVISIBLE.match(char) else unicodedata.normalize("NFKC", char)
        if len(self) < _FOLD_TABLE_SIZE:
            self[code] = folded
        return folded


_FOLD_TABLE = _FoldTable()


def _unescape(escape: str) -> str:
    """The character a _ESCAPE stands for; a control character reads as a space (folding never
    makes a new line)."""
    char = chr(int(escape[2:], 16)) if escape[1] == "u" else escape[1]
    return char if char >= " " else " "


def _foldable(text: str) -> bool:
    """Whether folding may change `text`: a quick test that spares folding most lines."""
    return "\\" in text or not (
        text.isascii() or (unicodedata.is_normalized("NFKC", text) and not _INVISIBLE.search(text))
    )


def _fold(text: str) -> str:
    """`text` as the rules also read it (see the module docstring); as many lines as `text`."""
    if "\\" in text:
        text = _ESCAPE.sub(lambda match: _unescape(match.group()), text)
    return text if text.isascii() else text.translate(_FOLD_TABLE)  # ASCII folds to itself


def _fold_unit(unit: str) -> str:
    """What one _UNIT match folds to (`_fold` folds a whole text the same way, faster)."""
    return (_unescape(unit) if len(unit) > 1 else unit).translate(_FOLD_TABLE)


def _unfold(text: str, masked: str, kept: list[int]) -> str:
    """`text` masked as its folded form was: `masked` is that form masked, `kept` says which
    folded character each of its characters is (-1: one of a mask's). A unit of `text` (a
    character or an escape) whose folded characters are all kept is written as in `text`;
    the other characters as in `masked`."""
    firsts: list[int] = []  # for each folded character: the first folded character of its unit,
    nexts: list[int] = []  # the one after its unit,
    starts: list[int] = []  # and where its unit's part of `text` starts (then len(text))
    start = 0  # an invisible character's part is that of the next unit
    for unit in _UNIT.finditer(text):
        width = len(_fold_unit(unit.group()))
        if width:
            firsts += [len(firsts)] * width
            nexts += [len(nexts) + width] * width
            starts += [start] * width
            start = unit.end()
    starts.append(len(text))
    pieces = []
    position = 0
    while position < len(masked):
        index = kept[position]
        width = nexts[index] - index if index >= 0 and firsts[index] == index else 0
        if width and kept[position : position + width] == list(range(index, index + width)):
            pieces.append(text[starts[index] : starts[index + width]])
            position += width
        else:
            pieces.append(masked[position])
            position += 1
    return "".join(pieces)


def _suspect_lines(joined: str) -> set[int] | None:
    """The lines of a batch (joined by newlines) where a rule keyword or a base64 run occurs; None
    when lower-casing changes the batch's length (the offsets would shift)."""
    lowered = joined.lower()
    if len(lowered) != len(joined):
        return None
    starts = [0]  # starts[i]: offset of line i in `joined`
    for line in joined.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    suspects = {bisect_right(starts, end) - 1 for end, _ in _keyword_automaton().iter(lowered)}
    suspects.update(bisect_right(starts, start) - 1 for start in _base64_runs(joined))
    return suspects


def _secret_span(match: re.Match[str]) -> tuple[int, int]:
    """What a rule's match masks: its first `s…` group that matched, else the whole match."""
    for name in match.re.groupindex:
        if name.startswith("s") and match.group(name) is not None:
            return match.span(name)
    return match.span()


def _base64_span(match: re.Match[str]) -> tuple[int, int] | None:
    word = match.group(0)
    return match.span() if all(pattern.search(word) for pattern in _HAS_CLASSES) else None


def _whole_match(match: re.Match[str]) -> tuple[int, int]:
    return match.span()


def _mask_matches(
    pattern: re.Pattern[str],
    span_of: Callable[[re.Match[str]], tuple[int, int] | None],
    text: str,
    kept: list[int] | None,
) -> str:
    """`text` with the span `span_of` gives for each match of `pattern` replaced by MASK. `kept`,
    if given, says for each character of `text` which folded character it is (-1: one of a
    mask's), and is updated to say it of the result."""
    pieces: list[str] = []
    kept_pieces: list[list[int]] = []
    done = 0
    for match in pattern.finditer(text):
        span = span_of(match)
        if span is None:
            continue
        pieces += (text[done : span[0]], MASK)
        if kept is not None:
            kept_pieces += (kept[done : span[0]], [-1] * len(MASK))
        done = span[1]
    if not pieces:
        return text
    if kept is not None:
        kept[:] = [index for piece in kept_pieces for index in piece] + kept[done:]
    return "".join(pieces) + text[done:]


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
            raise BadInput(f"${ENV_EXTRA_PATTERNS} must be a JSON list of regular expressions")
        return cls(extra)

    def mask_line(self, text: str) -> str:
        """One line (no key-block state), as written and then folded."""
        masked = self._mask_written(text)
        folded = _fold(masked) if _foldable(masked) else masked
        if folded == masked or (not self._extra and _suspect_lines(folded) == set()):
            return masked  # folding changed nothing, or brought no keyword or base64 run to light
        kept = list(range(len(folded)))
        masked_folded = self._mask_written(folded, kept)
        return masked if masked_folded == folded else _unfold(masked, masked_folded, kept)

    def _mask_written(self, text: str, kept: list[int] | None = None) -> str:
        """Every rule whose keyword occurs, then the extra patterns (`kept`: see `_mask_matches`)."""
        text = _mask_matches(_BASE64_WORD, _base64_span, text, kept)
        lowered = text.lower()
        triggered = {rule for keyword, rules in _KEYWORD_RULES if keyword in lowered for rule in rules}
        for rule in _RULES:
            if rule in triggered:
                text = _mask_matches(rule.pattern, _secret_span, text, kept)
        for pattern in self._extra:
            text = _mask_matches(pattern, _whole_match, text, kept)
        return text

    def mask_lines(self, lines: Iterable[str]) -> list[str]:
        block = _KeyBlock(lines=True)
        return [block.line(self, line) for line in lines]

    def mask_stream(self, lines: Iterable[str]) -> Iterator[str]:
        """`mask_lines` over a stream of lines (no line endings), the same result at a fraction of
        the cost when secrets are rare: a batch of lines is joined once, each keyword and the
        base64 shape are searched in the whole batch, and only the lines holding one go through
        `mask_line`; so do those whose folded form holds one. A batch that is in or opens a key
        block, that meets extra patterns, or whose lower-casing changes its length (offsets would
        shift) is masked line by line."""
        block = _KeyBlock(lines=True)
        source = iter(lines)
        while batch := list(islice(source, _STREAM_BATCH)):
            yield from self._mask_batch(batch, block)

    def _mask_batch(self, batch: list[str], block: _KeyBlock) -> list[str]:
        joined = "\n".join(batch)
        if block.remaining or self._extra or _KEY_BEGIN.search(joined):
            return [block.line(self, line) for line in batch]
        # Folding keeps every run of ASCII characters but the escapes: without one, what the
        # written batch holds its folded form holds too, and only the folded form is screened.
        folded = _fold(joined) if _foldable(joined) else joined
        suspects = _suspect_lines(folded)
        if suspects is not None and "\\" in joined:
            written_suspects = _suspect_lines(joined)
            suspects = None if written_suspects is None else suspects | written_suspects
        if suspects is None:
            return [block.line(self, line) for line in batch]
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
