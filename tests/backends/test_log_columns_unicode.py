"""evcli/backends/logshapes_unicode.py and the vectorised reader on lines beyond ASCII: SAFE is exactly the
candidate characters on which Python's re and Rust's regex crate (through polars), Python's string
methods and masking's folding agree for everything the vector path does; `unsafe_lines` decodes UTF-8
as Python does; and logs of every format with non-ASCII messages (SAFE or not), container lines wrapping
them, secret-bearing ones and random characters of every block read exactly as the reference reads them,
whole and in windows as small as one byte."""

from __future__ import annotations

import json
import random
import re
import sys
import unicodedata
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "bench"))  # the bench scripts import each other as top-level modules

import bench_logcolumns  # noqa: E402
import bench_logformats  # noqa: E402

from evcli.backends import logcolumns, logrows, logshapes_screen  # noqa: E402
from evcli.backends.logformats import ParseContext  # noqa: E402
from evcli.backends.logformats.shapes import token_end  # noqa: E402
from evcli.backends.logshapes_unicode import (  # noqa: E402
    CANDIDATE_BLOCKS,
    SAFE,
    SAFE_TEXT,
    in_ascii,
    screened_lines,
    templates,
    unsafe_lines,
)
from evcli.backends.logshapes_values import VARIABLE  # noqa: E402
from evcli.core import redaction  # noqa: E402
from tests.backends.test_log_columns import (  # noqa: E402
    BERLIN,
    CLOCK,
    INNER_LINES,
    SECRET_LINES,
    assert_same,
    cri_line,
    random_line,
    redaction_examples,
    write,
)

SAFE_CHARS = {chr(code) for first, last in SAFE for code in range(first, last + 1)}
# characters of each kind the vector path must leave to Python: special case folding (ſ K Å İ ı ß ẞ ŉ),
# digits beyond ASCII, whitespace beyond ASCII, combining marks, compatibility forms, invisible and
# format characters, controls, emoji, private use
UNSAFE_SAMPLES = (
    "\u017f\u212a\u212b\u0130\u0131\u00df\u1e9e\u0149\uff10\uff19\u0660\u0663\u00b2\u00bd\u00a0\u3000\u2028"
    "\u0085\u0301\u0308\u0345\uff41\uff21\uff50\u00aa\u00b5\ufb01\u200b\u00ad\ufeff\u202e\u0080\u009f\u203f"
    "\U0001f600\U0001f525\ue000\u1100\u1161\u11a8\u0600"
)
WORDS = ("用户登录成功", "データベース接続", "연결 실패", "соединение разорвано", "σφάλμα δικτύου", "échec à l'étape")


def _second_in_composition() -> set[str]:
    """Characters a canonical composition takes second (after them a text's NFKC form may differ)."""
    seconds = set()
    for code in range(0x110000):
        parts = unicodedata.decomposition(chr(code)).split()
        if len(parts) == 2 and not parts[0].startswith("<"):
            seconds.add(chr(int(parts[1], 16)))
    return seconds


def _python_safe(char: str, seconds: set[str]) -> bool:
    """What Python's string methods and masking's folding require of a SAFE character."""
    return (
        unicodedata.category(char)[0] not in "MCZ"
        and unicodedata.combining(char) == 0
        and char not in seconds
        and unicodedata.normalize("NFD", char)[0] not in seconds
        and not char.isspace()
        and not char.isdigit()
        and char.isprintable()
        and unicodedata.normalize("NFKC", char) == char
        and redaction._INVISIBLE.match(char) is None
        and not any(
            part.isascii() for form in (char.upper(), char.lower(), char.casefold(), char.title()) for part in form
        )
    )


def _engines_agree(chars: list[str]) -> np.ndarray:
    """Per character, whether Python's re and polars (Rust's regex) agree on it for every construct the
    vector path uses, and neither reads it as a digit or blank."""
    column = pl.Series(chars, dtype=pl.String)
    agree = np.ones(len(chars), bool)
    for pattern in (r"^\w$", r"^\d$", r"^\s$", r"^.$", r"^[^a]$", r"^[^\s@]$", r"(?i)^[a-z]$", r"(?i)^[\w.-]$", r"\b"):
        compiled = re.compile(pattern)
        python = np.array([compiled.search(char) is not None for char in chars])
        agree &= python == column.str.contains(pattern).to_numpy()
    agree &= ~column.str.contains(r"\d|\s").to_numpy() & (column.str.strip_chars() == column).to_numpy()
    universe = "".join(chr(code) for code in range(0x20, 0x7F)) + "\t" + "".join(chars)
    written = pl.Series([universe])
    position = {char: index for index, char in enumerate(chars)}
    cased = [char for char in chars if len({char, char.lower(), char.upper(), char.casefold()}) > 1]
    for char in cased + [chr(code) for code in range(0x20, 0x7F)]:  # (?i) of one character
        pattern = "(?i)" + re.escape(char)
        python, rust = set(re.findall(pattern, universe)), set(written.str.extract_all(pattern)[0].to_list())
        folded = python | rust if python != rust or char.isascii() else set()
        for other in {char} | folded if python != rust else {other for other in folded if not other.isascii()}:
            if other in position:
                agree[position[other]] = False
    caseless = "(?i)[" + "".join(char for char in chars if char not in set(cased)) + "]"
    assert set(re.findall(caseless, universe)) == set(written.str.extract_all(caseless)[0].to_list())
    return agree


def test_safe_is_every_candidate_both_engines_and_masking_read_alike():
    """Every code point of the candidate blocks tried: SAFE holds exactly those that pass (adding one that
    fails, a combining mark say, or dropping one that passes, fails here)."""
    seconds = _second_in_composition()
    assert not seconds & ({chr(code) for code in range(0x80)} | SAFE_CHARS)
    candidates = [chr(code) for first, last in CANDIDATE_BLOCKS.values() for code in range(first, last + 1)]
    python_safe = [char for char in candidates if _python_safe(char, seconds)]
    agreed = {char for char, agree in zip(python_safe, _engines_agree(python_safe), strict=True) if agree}
    assert SAFE_CHARS - agreed == set()
    assert agreed - SAFE_CHARS == set()
    assert not SAFE_CHARS & set(UNSAFE_SAMPLES)
    assert all(first <= last < 0x10000 for first, last in SAFE)


def test_safe_text_is_the_safe_characters():
    texts = pl.Series(["a\tb ~", "".join(sorted(SAFE_CHARS)), "x" + UNSAFE_SAMPLES[0], "\x7f", "é\u0301", "\x1f"])
    assert texts.str.contains(SAFE_TEXT).to_list() == [True, True, False, False, False, False]


def _atoms(source: str) -> list[str]:
    """The classes, escapes and `.` of a regex (what may match a character beyond ASCII)."""
    atoms, index = [], 0
    while index < len(source):
        end = token_end(source, index)
        if source[index] in "[\\.":
            atoms.append(source[index:end])
        index = end
    return atoms


def test_a_stand_in_matches_every_class_of_the_screen_its_character_matches():
    """in_ascii's premise: each class, escape or `.` of the screen's regexes (redaction's rules made
    readable by Rust, the base64 run), in either case, that a SAFE character matches also matches its
    stand-in; the stand-in is `\\w` exactly where the character is."""
    chars = sorted(SAFE_CHARS)
    stand_ins = in_ascii(pl.Series(chars)).to_list()
    assert set(stand_ins) == {"_", "~"}
    sources = [logshapes_screen.relaxed(rule.source) for rule in redaction._RULES] + [redaction._BASE64_RUN.pattern]
    atoms = {atom for source in sources for atom in _atoms(source)} | {r"\w", r"\W", r"\b"}
    assert len(atoms) > 30
    for atom in sorted(atoms):
        for pattern in (re.compile(atom), re.compile(atom, re.IGNORECASE)):
            missed = [c for c, s in zip(chars, stand_ins, strict=True) if pattern.search(c) and not pattern.search(s)]
            assert missed == [], (atom, missed[:5])
    word = re.compile(r"\w")
    assert all(bool(word.match(c)) == (s == "_") for c, s in zip(chars, stand_ins, strict=True))


@pytest.mark.parametrize("seed", range(3))
def test_templates_of_safe_text_are_the_template_regexs(seed):
    """templates (its `\\b` read as ASCII but where a run of word characters beyond ASCII meets a digit or
    `-`) equals logrows' template regex on random texts of SAFE characters (word and other), digits, hex
    letters and the characters the regex's parts consume, glued in every order."""
    rng = random.Random(seed)
    safe = sorted(SAFE_CHARS)
    pieces = ["0", "7", "42", "a", "f", "x", "0x1f", "g", ".", ":", "/", "-", "_", " ", '"', "'", "1.2.3.4", "é", "中"]
    texts = [
        "".join(rng.choice(safe) if rng.random() < 0.3 else rng.choice(pieces) for _ in range(rng.randrange(1, 14)))
        for _ in range(6000)
    ]
    texts += ["中1", "1中", "é-1", "deadbeef-dead-beef-dead-beefdeadbeef中", "中deadbeef-dead-beef-dead-beefdeadbeef"]
    found = templates(pl.Series(texts, dtype=pl.String), VARIABLE).to_list()
    assert found == [logrows._VARIABLE.sub("<*>", text) for text in texts]


def _python_unsafe(line: bytes) -> bool:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return any(not char.isascii() and char not in SAFE_CHARS for char in text)


@pytest.mark.parametrize("seed", range(3))
def test_unsafe_lines_decode_utf8_as_python_does(seed):
    """Random lines of SAFE characters, other characters and broken UTF-8 (stray continuation bytes,
    overlong forms, surrogates, cut sequences, bytes Python never decodes)."""
    rng = random.Random(seed)
    broken = [
        b"\x80",
        b"\xbf",
        b"\xc0\xaf",
        b"\xc1\xbf",
        b"\xe0\x80\xaf",
        b"\xed\xa0\x80",
        b"\xe4\xb8",
        b"\xc3",
        b"\xf0\x9f\x98",
        b"\xf8\x88\x80\x80\x80",
        b"\xff",
        b"\xfe",
        b"\xc3\xa9\xa9",
        b"\xe4\xb8\xad\xad",
    ]
    safe = sorted(SAFE_CHARS)
    lines = []
    for _ in range(3000):
        pieces = []
        for _ in range(rng.randrange(0, 6)):
            roll = rng.random()
            if roll < 0.5:
                pieces.append(rng.choice(safe).encode())
            elif roll < 0.7:
                pieces.append(rng.choice("ab 09\t=\r").encode())
            elif roll < 0.85:
                pieces.append(rng.choice(UNSAFE_SAMPLES).encode("utf-8", "surrogatepass"))
            else:
                pieces.append(rng.choice(broken))
        lines.append(b"".join(pieces))
    data = b"\n".join(lines) + b"\n" * rng.randrange(2)
    starts = np.array([0] + [index + 1 for index, byte in enumerate(data) if byte == 10][: len(lines) - 1], np.int64)
    found = unsafe_lines(np.frombuffer(data, np.uint8), starts)
    assert found.tolist() == [_python_unsafe(line) for line in lines]


def test_safe_lines_take_the_vector_path_and_others_do_not():
    """odd_lines (the lines left to Python for what they hold) flags no line of SAFE characters, and every
    line holding another character beyond ASCII or broken UTF-8; the column holds a SAFE line as written."""
    lines = [f"2026-07-08 10:00:00 INFO {word} {index}" for index, word in enumerate(WORDS)]
    odd = [f"2026-07-08 10:00:00 INFO {char} x" for char in UNSAFE_SAMPLES]
    data = "\n".join(lines + odd).encode("utf-8", "surrogatepass") + b"\n2026 \xe4\xb8 broken\n"
    source = logcolumns._Source(data)
    assert source.odd_lines().tolist() == [False] * len(lines) + [True] * (len(odd) + 1)
    assert source.column.to_list()[: len(lines)] == lines


def unicode_message(rng: random.Random) -> str:
    """Words of SAFE characters, now and then one of another kind (or a digit, blank or case form that
    only Python reads as Python does)."""
    words = [rng.choice(WORDS) for _ in range(rng.randrange(1, 3))]
    if rng.random() < 0.25:
        words.insert(rng.randrange(len(words) + 1), rng.choice(UNSAFE_SAMPLES) + rng.choice(["", "1", "x"]))
    if rng.random() < 0.1:
        words.append(rng.choice(["ınfo", "ERRОR", "ｅｒｒｏｒ", "ᏔARN", "ſevere", "warn\u0131ng"]))
    return " ".join(words)


def with_unicode(line: str, rng: random.Random) -> str:
    """`line` with a SAFE word in place of one of its ASCII words of letters (any of them: message, level,
    key, host, month name), or a message appended; the line's structure (quotes, brackets) is kept."""
    words = [match.span() for match in re.finditer(r"[A-Za-z]{2,}", line)]
    if not words or rng.random() < 0.2:
        return line + " " + unicode_message(rng)
    start, end = rng.choice(words)
    return line[:start] + unicode_message(rng) + line[end:]


@pytest.mark.parametrize("fmt", sorted(bench_logformats.LINES))
def test_every_format_with_non_ascii_messages(tmp_path, fmt):
    """The bench's --unicode lines of each format (its message word in another script), and lines with a
    random word of theirs written in other scripts, mixed with its ASCII lines."""
    rng = random.Random(fmt)
    lines = [bench_logcolumns.unicode_line(fmt, index) for index in range(600)]
    lines += [with_unicode(bench_logformats.LINES[fmt](index), rng) for index in range(600, 1200)]
    lines[7:7] = ["\tat 例子.Foo.bar(Foo.java:12)", "Caused by: java.io.IOException: сбой", "行 garbage"]
    context = ParseContext(bench_logformats._at(1200) + timedelta(hours=1), BERLIN)
    assert assert_same(write(tmp_path, lines), context).format == fmt


def docker_raw(inner: str, index: int) -> str:
    """A json-file line as Docker writes one: its text's characters beyond ASCII as they are."""
    stamp = (datetime(2026, 7, 8, 10, tzinfo=UTC) + timedelta(milliseconds=7 * index)).isoformat()
    log = json.dumps(inner + "\n", ensure_ascii=False)
    return f'{{"log":{log},"stream":"stderr","time":"{stamp.replace("+00:00", "Z")}"}}'


@pytest.mark.parametrize("wrapper", ["docker", "cri"])
def test_container_lines_wrapping_non_ascii_lines(tmp_path, wrapper):
    rng = random.Random(wrapper)
    wrap = docker_raw if wrapper == "docker" else cri_line
    inner = [with_unicode(line, rng) for line in INNER_LINES * 8]
    lines = [wrap(text, index) for index, text in enumerate(inner)]
    found = assert_same(write(tmp_path, "\n".join(lines).encode("utf-8", "surrogatepass")), ParseContext(CLOCK, BERLIN))
    assert found.format == ("container_json" if wrapper == "docker" else "cri")


SECRET_ABROAD = [
    "2026-07-08 10:00:00.010 INFO [pod-1] c.e.Pay - 用户登录 password=秘密口令 token=abc123",
    "2026-07-08 10:00:00.011 INFO [pod-1] c.e.Pay - пароль: password: хантер22",
    "2026-07-08 10:00:00.012 INFO [pod-1] c.e.Pay - Authorization: Bearer 日本語0123456789abcdef01234567",
    "2026-07-08 10:00:00.013 INFO [pod-1] c.e.Pay - ｐａｓｓｗｏｒｄ=hunter22 全角の鍵",
    "2026-07-08 10:00:00.014 INFO [pod-1] c.e.Pay - παράδειγμα AKIAABCDEFGHIJKLMNOP σφάλμα",
    "2026-07-08 10:00:00.015 INFO [pod-1] c.e.Pay - url=postgres://χρήστης:κωδικός@db:5432/shop",
    "2026-07-08 10:00:00.016 INFO [pod-1] c.e.Pay - 세션 sessionid=가나다라마바사 끝",
    '2026-07-08 10:00:00.017 INFO [pod-1] c.e.Pay - {\\"pass\\/word\\": \\"é\\"} données',
    "2026-07-08 10:00:00.018 INFO [pod-1] c.e.Pay - pass\u200bword=hunter22 不可视",
    "2026-07-08 10:00:00.019 INFO [pod-1] c.e.Pay - QWxhZGRpbjpvcGVuIHNlc2FtZQxAAAAAAAAAAAAAAAAAAAAAAAAA 数据",
    'ts=2026-07-08T10:00:00Z level=info msg="ログイン" secret="パスワード123"',
    '{"ts":"2026-07-08T10:00:00Z","level":"info","msg":"вход","password":"секрет"}',
]


def test_secret_bearing_non_ascii_lines(tmp_path, monkeypatch):
    """Masked lines beyond ASCII (written, NFKC-folded, escaped, invisible characters) equal the
    reference's, with an extra pattern written in Cyrillic too."""
    monkeypatch.setenv(redaction.ENV_EXTRA_PATTERNS, json.dumps(["секрет-[0-9]+"]))
    lines = [line for line in SECRET_ABROAD for _ in range(3)] + ["2026-07-08 10:00:01 INFO код секрет-42 утёк"]
    lines += [f"2026-07-08 10:00:02.{index:03d} INFO {WORDS[index % len(WORDS)]} {index}" for index in range(200)]
    random.Random(5).shuffle(lines)
    found = assert_same(write(tmp_path, lines), ParseContext(CLOCK, BERLIN))
    assert not any("hunter22" in text or "секрет-42" in text or "秘密口令" in text for text in found.text.values())


def test_the_screens_flag_every_non_ascii_line_masking_changes():
    """Redaction's examples and the bench's secret lines with SAFE words around and inside them (keywords
    in any case, escaped): every line of SAFE characters masking changes is flagged, by the screen and by
    the keyword screen of lines beyond ASCII."""
    rng = random.Random(11)
    examples = [line for text in redaction_examples() + SECRET_LINES + SECRET_ABROAD for line in text.split("\n")]
    lines = [f"{rng.choice(WORDS)} {line} {rng.choice(WORDS)}" for line in examples]
    lines += [with_unicode(line, rng) for line in examples for _ in range(3)]
    lines += [line.upper() for line in lines] + [line.replace('"', '\\"').replace("/", "\\/") for line in lines]
    changed = [line for line in lines if redaction.Redactor().mask_line(line) != line]
    safe = [line for line in changed if "\\u" not in line and pl.Series([line]).str.contains(SAFE_TEXT)[0]]
    assert len(safe) > 100
    assert logshapes_screen.screened(pl.Series(safe, dtype=pl.String), redaction.Redactor()).all()
    unchanged = [f"2026-07-08 10:00:00 INFO {word} {index}" for index, word in enumerate(WORDS * 20)]
    column = pl.Series(safe + unchanged + [line for line in changed if line.isascii()], dtype=pl.String)
    flagged = screened_lines(column, redaction.Redactor())
    assert flagged[: len(safe)].all() and flagged[len(safe) + len(unchanged) :].all()
    assert not flagged[len(safe) : len(safe) + len(unchanged)].any()  # no keyword, no base64 run


def random_character(rng: random.Random) -> str:
    """A character of a candidate block (SAFE or not), of UNSAFE_SAMPLES, or ASCII."""
    roll = rng.random()
    if roll < 0.5:
        first, last = rng.choice(list(CANDIDATE_BLOCKS.values()))
        return chr(rng.randint(first, last))
    if roll < 0.7:
        return rng.choice(UNSAFE_SAMPLES)
    if roll < 0.75:
        return chr(rng.randint(0xD800, 0xDFFF))  # written as the bytes of a surrogate: invalid UTF-8
    return rng.choice("aZ09 -_./:[]{}\"'=\\\t")


def fuzzed_line(rng: random.Random, index: int) -> str:
    """A random line (any format, stack traces, secrets, junk) with random characters put in it."""
    line = random_line(rng, index) if rng.random() < 0.8 else with_unicode(random_line(rng, index), rng)
    for _ in range(rng.randrange(3)):
        at = rng.randrange(len(line) + 1)
        line = line[:at] + "".join(random_character(rng) for _ in range(rng.randrange(1, 4))) + line[at:]
    return line


@pytest.mark.parametrize("seed", range(4))
def test_random_characters_of_every_block(tmp_path, seed):
    rng = random.Random(seed)
    text = "\n".join(fuzzed_line(rng, index) for index in range(1500)).encode("utf-8", "surrogatepass")
    assert_same(write(tmp_path, text), ParseContext(CLOCK, BERLIN))


@pytest.mark.parametrize("window", [1, 7, 333])
def test_non_ascii_lines_in_windows(tmp_path, window):
    """Windows as small as one byte end inside no character: a window holds whole lines."""
    rng = random.Random(window)
    lines = [
        fuzzed_line(rng, index) if index % 3 else with_unicode(random_line(rng, index), rng) for index in range(300)
    ]
    path = write(tmp_path, "\n".join(lines).encode("utf-8", "surrogatepass"))
    assert_same(path, ParseContext(CLOCK, BERLIN), window)


def test_the_json_file_layout_of_a_non_ascii_line_is_sliced_by_character():
    from evcli.backends.logshapes_container import _json_file

    inner = ["2026-07-08 10:00:00 ERROR 连接池 exhausted", "пароль неверен", "ascii only"]
    lines = pl.Series("line", [docker_raw(text, index) for index, text in enumerate(inner)])
    log, stamp = _json_file(lines)  # not left to the slower flat-JSON reading
    assert log.to_list() == [text + "\\n" for text in inner]
    assert stamp.to_list() == ["2026-07-08T10:00:00Z", "2026-07-08T10:00:00.007000Z", "2026-07-08T10:00:00.014000Z"]
