"""evcli/backends/logcolumns.py: the vectorised reader returns exactly the reference reading
(evcli.backends.logtable.reference_table) on every format, the bench logs, hand-made edge cases and
seeded random mixes, whole and in windows small enough that their boundaries fall everywhere (inside
stack traces and records, before the first timestamp, next to key blocks); its template regex equals
logrows.mask; its masking screen misses no line that masking changes."""

from __future__ import annotations

import json
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import polars as pl
import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "bench"))  # the bench scripts import each other as top-level modules

import bench_logformats  # noqa: E402
import bench_tools  # noqa: E402

from evcli.backends import logcolumns, logshapes_container, logshapes_screen, logshapes_values  # noqa: E402
from evcli.backends.logformats import ParseContext, cri, shapes  # noqa: E402
from evcli.backends.logrows import mask  # noqa: E402
from evcli.backends.logtable import LogTable, reference_table  # noqa: E402
from evcli.core import files, redaction  # noqa: E402
from tests.core import test_redaction  # noqa: E402

BERLIN = ZoneInfo("Europe/Berlin")
CLOCK = datetime(2026, 7, 9, tzinfo=UTC)
SECRET_LINES = [
    "2026-07-08 10:00:00.000 ERROR [pod-1] c.e.Pay - url=jdbc:mysql://app:0123456789@db:3306/shop",
    "2026-07-08 10:00:00.001 INFO [pod-1] c.e.Pay - Authorization: Bearer 0123456789abcdef01234567",
    "2026-07-08 10:00:00.002 INFO [pod-1] c.e.Pay - token=abc123 password: hunter22",
    "2026-07-08 10:00:00.003 INFO [pod-1] c.e.Pay - blob QWxhZGRpbjpvcGVuIHNlc2FtZQxAAAAAAAAAAAAAAAAAAAAAAAAA end",
    '2026-07-08 10:00:00.004 INFO [pod-1] c.e.Pay - {\\"pass\\/word\\": \\"x\\"} s:\\/\\/u:p@h',
    "2026-07-08 10:00:00.005 INFO [pod-1] c.e.Pay - AKIAABCDEFGHIJKLMNOP ghp_" + "a" * 36,
]
KEY_BLOCK = [
    "2026-07-08 10:00:01.000 ERROR [pod-2] c.e.Tls - loaded -----BEGIN RSA PRIVATE KEY-----",
    "MIIEowIBAAKCAQEAx1y2z3AbCdEfGhIjKlMnOpQrStUvWxYz",
    "",
    "   Zm9vYmFyYmF6cXV4",
    "-----END RSA PRIVATE KEY----- done",
    "2026-07-08 10:00:02.000 INFO [pod-2] c.e.Tls - after the key",
]


def assert_same(path: Path, context: ParseContext, window: int = logcolumns.WINDOW_BYTES) -> LogTable:
    expected = reference_table(path, path.parent, context)
    found = logcolumns.read_table(path, path.parent, context, window)
    for name in ("lineno", "start", "end", "record", "template", "instance"):  # codes numbered by first row
        np.testing.assert_array_equal(getattr(found, name), getattr(expected, name), err_msg=name)
    assert found.rows() == expected.rows()
    for name in ("templates", "instances", "text", "unescaped", "lines", "size", "format", "cut"):
        assert getattr(found, name) == getattr(expected, name), name
    return found


def among_host_lines(lines: list[str], seed: int) -> list[str]:
    """`lines` shuffled among three times as many ISO 8601 host lines: the format detected is iso8601, and
    the lines' own format is reached only where LineReader tries it."""
    mixed = [f"2026-07-08T09:{index % 60:02d}:00Z INFO host line {index}" for index in range(3 * len(lines))] + lines
    random.Random(seed).shuffle(mixed)
    return mixed


def write(tmp_path: Path, lines: list[str] | bytes, name: str = "edge.log") -> Path:
    path = tmp_path / name
    path.write_bytes(lines if isinstance(lines, bytes) else ("\n".join(lines) + "\n").encode())
    return path


@pytest.mark.parametrize("fmt", sorted(bench_logformats.LINES))
def test_every_format(tmp_path, fmt):
    make = bench_logformats.LINES[fmt]
    lines = [make(index) for index in range(2000)]
    lines[7:7] = ["\tat com.example.Foo.bar(Foo.java:12)", "Caused by: java.io.IOException: x", "garbage line 1"]
    context = ParseContext(bench_logformats._at(2000) + timedelta(hours=1), BERLIN)
    assert assert_same(write(tmp_path, lines), context).format == fmt


def test_mixed_and_secret_bearing_bench_logs(tmp_path):
    bench_tools.write_mixed_log(tmp_path / "mixed.log", 6000)
    assert_same(tmp_path / "mixed.log", ParseContext(CLOCK, BERLIN))
    bench_tools.write_log(tmp_path / "app.log", 6000, "checkout", 5)
    assert_same(tmp_path / "app.log", ParseContext(CLOCK, ZoneInfo("UTC")))


EDGES: dict[str, str | bytes] = {
    "blank_crlf_nul_utf8": b"\r\n  \n2026-07-08 10:00:00 INFO a\r\n2026-07-08 10:00:01 WARN b\x00c\n"
    b"2026-07-08 10:00:02 ERROR bad \xff\xfe utf8\n\n2026-07-08 10:00:03 INFO caf\xc3\xa9 \xe2\x85\xa8 \xd9\xa3x\n"
    b"2026-07-08 10:00:04 INFO no newline",
    "leading_continuation": "\tat a.B(B.java:1)\nCaused by: x.YException: boom\nnot a log line\n"
    "2026-07-08 10:00:00 INFO [w-1] first\n\tat c.D(D.java:2)\nstray text after\n2026-07-08 10:00:01 debug lower\n",
    "unrecognised_first": "hello world\nanother 12 ids 0x1f\n2026-07-08 10:00:00 INFO x instance=i-9 y\n",
    "json_escapes": '2026-07-08 10:00:00 INFO {"msg":"caf\\u00e9 \\u003cb\\u003e"}\n'
    '{"ts":"2026-07-08T10:00:00Z","level":"info","msg":"q \\u0070assword=hunter2"}\n',
    "containers": '{"log":"2026-07-08 10:00:00,120 ERROR [main] Db: timeout\\n","stream":"stderr",'
    '"time":"2026-07-08T10:00:00.12Z"}\n2026-07-08T10:00:01.5Z stderr F WARN inner text 5\n'
    "2026-07-08T10:00:02.5Z stdout P \tat x.Y(Y.java:3)\n",
    "odd_times": "2026-02-30 10:00:00 INFO bad day\n2026-07-08 24:00:00 INFO bad hour\n"
    "2026-07-08T10:00:00+24:00 INFO bad zone\n2026-07-08T10:00:00.1234567 +0100 INFO space zone\n"
    "2026-07-08 10:00:00x INFO glued\n2026-07-08T10:00 INFO short\nFeb 30 10:00:00 h p: no such day\n"
    "Feb 29 10:00:00 h p: leap day\n",
    "levels": "2026-07-08 10:00:00 WARNING: w\n2026-07-08 10:00:00 [Error] e\n2026-07-08 10:00:00 - INFO x\n"
    "2026-07-08 10:00:00 svc ERROR y\n2026-07-08 10:00:00 level=warn z\n2026-07-08 10:00:00 INFORMATION i\n"
    "2026-07-08 10:00:00 TRACE\n<11>Jul  8 10:00:00 h p[1]: pri\nJul  8 10:00:00 h p: error: worded\n"
    "Jul  8 10:00:00 h p: [WARN] upper\nJul  8 10:00:00 h p: x level=debug\n",
    "json_odd": '{"ts":"2026-07-08T10:00:00.5+02:00","level":"warning","msg":"a \\"q\\" b\\\\c\\/d\\n\\te","pod":"p-1"}\n'
    '{"time":1783500000,"lvl":30,"message":"epoch s"}\n{"ts":1783500000123,"level":50,"msg":"ms"} \n'
    '{"ts":"1783500000.25","severity":"ERR","msg":"x","host":""}\n{"ts":1783500000123456789,"msg":"ns"}\n'
    '{"ts":"2026-07-08 10:00:01","level":true,"msg":5}\n{"ts":"yesterday","level":"info","msg":"[w-2] y"}\n'
    '{"ts":"2026-02-30T10:00:00","msg":"bad day"}\n{"ts":null,"time":"2026-07-08T10:00:02Z","msg":"null ts"}\n'
    '{"ts":"","t":"2026-07-08T10:00:03Z","msg":"","message":"second"}\n{"msg":"a","msg":"b","ts":false}\n'
    '{}\n{"log.level":"debug","msg":"ecs","node":7}\n{"log":{"level":"info"},"msg":"nested"}\n'
    '{"a":[1,2],"msg":"array"}\n{"ts":1.5e9,"level":60.7,"msg":"float"}\n{"a":}\n'
    '{"@timestamp":"2026-07-08T10:00:04.123456789Z","loglevel":"Information","event":"e","thread":"t1"}\n'
    '{"ts":"2026-07-08T10:00:05","level":"x","msg":"x instance=i-3 z"}\n',
    "logfmt_odd": 'ts=2026-07-08T10:00:00Z level=info msg="a \\"q\\" b\\\\c" host=h1\n'
    "time=1783500000.5 lvl=WARN msg=plain instance=i-2  \na=1 b=2\nlevel= msg= ts=\nts=2026-07-08T10:00:01 ts=\n"
    'msg="unterminated\nlevel=error level=debug msg=dup\nts=2026-07-08T10:00:02+01:00 t=1 msg=[w-9] rest\n'
    "ts=2026-02-30T10:00:00 msg=bad\nts=now level=fatal\nk=v=w msg=x\n@timestamp=2026-07-08T10:00:03Z message=m\n",
    "regex_formats": '<34>1 2026-07-08T10:00:00.003Z - su - ID47 - no host\n<34>1 - h app 1 - [a x="1"] no stamp\n'
    "<200>1 2026-07-08T10:00:00Z h a - - - pri too big\n<13>1 2026-07-08T10:00:00+02:00 h a p m [x][y] sd\n"
    '2026/07/08 10:00:00 [error] 1#0: *5 oops, client: 1.2.3.4, host: "api.x", request: "GET /"\n'
    "2026/07/08 10:00:01 [crit] 1#0: no conn\n2026/02/30 10:00:01 [warn] 1#0: bad day\n"
    "[Wed Jul 08 10:00:00 2026] [error] [client 1.2.3.4] old style\n"
    "[Wed Jul 08 10:00:00.12 2026] [ssl:trace3] [pid 1] new\n[Wed Feb 30 10:00:00 2026] [info] bad\n"
    "E0708 10:00:00.123456 12 main.go:1] glog\nW0229 10:00:00.000001 12 a.go:2] leap\nI0230 10:00:00.000001 1 a.go:2] bad\n"
    "nova-api.log.1 2026-07-08 10:00:00.008 25746 AUDIT nova.x [req-1 - -] a\n"
    "2026-07-08 10:00:00.123 EDT [1] ERROR:  e\n2026-07-08 10:00:00 +02 [2] DETAIL:  d \n"
    "2026-07-08 10:00:00.5 -04:00 [3]-1 u@db LOG:  l\n2026-07-08 10:00:00 XYZ [4] WARNING:  w\n"
    "1783500000 INFO s\n1783500000123 ERROR ms\n[1783500000123456] x\n1783500000123456789,warn ns\n"
    "1783500000.5|DEBUG d\n17835000001 not epoch\n"
    "260708 100000 1 WARN a.B: hdfs\n991231 235959 2 INFO a.B: old\n260708 10:00:00 x\n"
    "26/07/08 10:00:00,123 ERROR a.B: spark\n26/02/30 10:00:00 INFO a.B: bad\n"
    "2026-07-08 10:00:00.123  1000  2000 E Tag  : year\n07-08 10:00:00.123 W/Tag( 12): time form\n"
    "07-08 10:00:00.123  system  1 2 I T: uid\n20260708-1:2:3:45|C|1|health\n20260230-1:2:3:4|C|1|bad\n"
    "- 1783500000 2026.07.08 R1 2026-07-08-10.00.00.123456 R1 RAS KERNEL FAILURE bgl\n"
    "KERNDTLB 1783500001 2026.07.08 R1 2026-07-08-10.00.59.123456 R1 RAS KERNEL INFO\n"
    "- 1783500002 2026.07.08 dn1 Jul 8 10:00:02 dn1/dn1 crond[1]: error: syslog branch\n"
    "- 1783500003 2026.07.08 dn1 rest only\n1 node-1 c s 1783500000 1 hpc\n2 node-2 c s 1783500000 1\n"
    "2026-07-08 10:00:00, Perf    CBS    cbs\n2026-07-08 10:00:00, Error CSI x\n"
    "[07.08 10:00:00] a.exe - h:1 error : refused\n[07.08 10:00:00] no program\n[02.30 10:00:00] x - bad\n",
}


@pytest.mark.parametrize("name", sorted(EDGES))
def test_edge_cases(tmp_path, name):
    content = EDGES[name]
    assert_same(
        write(tmp_path, content if isinstance(content, bytes) else content.encode()), ParseContext(CLOCK, BERLIN)
    )


def test_secrets_key_block_and_extra_pattern(tmp_path, monkeypatch):
    monkeypatch.setenv(redaction.ENV_EXTRA_PATTERNS, '["ACME-[0-9]{6}"]')
    lines = [*SECRET_LINES, *KEY_BLOCK, "2026-07-08 10:00:03.000 INFO [pod-3] c.e.X - order ACME-123456 ok"]
    found = assert_same(write(tmp_path, lines), ParseContext(CLOCK, BERLIN))
    assert all("hunter22" not in text and "ACME-123456" not in text for text in found.text.values())


def test_an_extra_pattern_polars_cannot_read_sends_every_line_to_python(tmp_path, monkeypatch):
    monkeypatch.setenv(redaction.ENV_EXTRA_PATTERNS, '["(?<=order )ORD-[0-9]+"]')
    assert_same(write(tmp_path, SECRET_LINES + ["2026-07-08 10:00:00 INFO order ORD-1 x"]), ParseContext(CLOCK, BERLIN))


def test_lines_longer_than_the_longest_line(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "LIMITS", files.ReadLimits(max_line_chars=64))
    lines = ["2026-07-08 10:00:00 INFO " + "x" * 100, "2026-07-08 10:00:01 INFO short", "y" * 63, "z" * 64, "é" * 40]
    assert assert_same(write(tmp_path, lines), ParseContext(CLOCK, BERLIN)).cut == 2


def test_dst_change_in_a_zoned_environment(tmp_path):
    start = datetime(2026, 10, 25, 0, 30)  # Europe/Berlin leaves summer time at 03:00 local
    lines = [f"{start + timedelta(minutes=7 * index):%Y-%m-%d %H:%M:%S} INFO tick {index}" for index in range(60)]
    assert_same(write(tmp_path, lines), ParseContext(CLOCK, BERLIN))


def test_year_less_formats_across_a_year_end(tmp_path):
    lines = ["Dec 31 23:59:58 h p[1]: last", "Jan  1 00:00:01 h p[1]: first", "Jan  2 00:00:01 h p[1]: x"]
    context = ParseContext(datetime(2027, 1, 1, 12, tzinfo=UTC), BERLIN)
    found = assert_same(write(tmp_path, lines), context)
    assert found.ts[0] < found.ts[1]


def random_line(rng: random.Random, index: int) -> str:
    roll = rng.random()
    if roll < 0.55:
        return bench_logformats.LINES[rng.choice(sorted(bench_logformats.LINES))](index)
    if roll < 0.65:
        return rng.choice(["\tat a.b.C.d(C.java:9)", "Caused by: java.lang.IllegalStateException: x", "  ... 3 more"])
    if roll < 0.72:
        return rng.choice(SECRET_LINES + KEY_BLOCK)
    if roll < 0.80:
        return rng.choice(["", "   ", "\r", "x\x00y", "caf\u00e9 12", "\u0661\u0662 ab", "[i-1] z", "a=1 b=2"])
    return "".join(rng.choice("aZ09 -_./:[]{}\"'=\\\t") for _ in range(rng.randrange(1, 40)))


INNER_LINES = [
    "2026-07-08 10:00:00,120 ERROR [main] Db: timeout",
    "2026-07-08 10:00:00.5 [http-1] WARN c.e.Pay - slow 300ms",
    "2026-07-08 10:00:00,5 - app.db - WARNING - query 7 done",
    "2026-07-08T10:00:00+02:00 [error] own zone",
    "2026-07-08 10:00:00 INFO instance=i-7 started",
    "2026-02-30 10:00:00 INFO impossible inner date",
    '{"ts":"2026-07-08T10:00:00Z","level":"error","msg":"zap \\"q\\"","pod":"p-1"}',
    '{"level":50,"msg":"pino","host":"h-2"}',
    '{"a":{"b":1},"msg":"nested"}',
    'ts=2026-07-08T10:00:01Z level=warn msg="logfmt inner" host=h-3',
    "level=error msg=no-time",
    '10.0.0.1 - - [08/Jul/2026:10:00:00 +0000] "GET / HTTP/1.1" 503 12 "-" "curl"',
    "E0708 10:00:00.123456 12 main.go:1] glog inner",
    "Jul  8 10:00:00 web-1 sshd[2]: Accepted",
    "1783500000.5 WARN epoch inner",
    "ERROR plain first word",
    "[warn] bracketed",
    "WARNING: colon",
    "svc ERROR second token",
    "[pod-9] leading instance",
    "just text 12 ids",
    "",
    "\tat com.example.Foo.bar(Foo.java:12)",
    "Caused by: java.io.IOException: x",
    "   ... 3 more",
    "java.lang.IllegalStateException: boom",
    "Traceback (most recent call last):",
    "--------- beginning of main",
    "2026-07-08T10:00:01.5Z stdout F cri inside",
    "tab\there",
    "caf\u00e9 non-ASCII",
    "line\nwith newline",
    'back\\slash / slash "quoted"',
    "cr at end\r",
    "bell \x07 control",
    "token=abc123 password: hunter22",
]
DOCKER_ODD = [
    r'{"log":"ERROR no time\n","stream":"stdout"}',
    r'{"log":"bad time\n","stream":"stdout","time":"yesterday"}',
    r'{"log":"naive time\n","stream":"stdout","time":"2026-07-08T10:00:00"}',
    r'{"log":"epoch time\n","stream":"stdout","time":1783500000}',
    r'{"log":"empty time","stream":"stdout","time":""}',
    r'{"log":7,"stream":"stdout","time":"2026-07-08T10:00:00Z"}',
    r'{"log":"a","log":"WARN twice","time":"2026-07-08T10:00:00Z"}',
    r'{"time":"2026-07-08T10:00:00Z","stream":"stderr","log":"ERROR keys reordered\n"}',
    r'{ "log" : "INFO spaced\n" , "stream" : "stdout" , "time" : "2026-07-08T10:00:00.123456789Z" }  ',
    r'{"log":"WARN extra key\n","stream":"stdout","time":"2026-07-08T10:00:00Z","attrs":{"k":"v"}}',
    r'{"log":"WARN extra flat\n","stream":9,"time":"2026-07-08T10:00:00Z","tag":null}',
    '{"log":"raw\ttab","stream":"stdout","time":"2026-07-08T10:00:00Z"}',
    r'{"log":"WARN \/ \\n \b\f escapes\n\n","stream":"stdout","time":"2026-07-08T10:00:00Z"}',
    r'{"log":"ERROR\r\n","stream":"stdout","time":"2026-07-08T10:00:00+01:00"}',
    r'{"log":"x","stream":"stdout","time":"2026-13-08T10:00:00Z"}',
    r'{"log":"broken',
    r'{"msg":"plain json, no log","ts":"2026-07-08T10:00:00Z"}',
    r'{"stream":"stdout","log":"sniffed late","time":"2026-07-08T10:00:00Z"}',
]
CRI_ODD = [
    "2026-07-08T10:00:00Z stdout F",
    "2026-07-08T10:00:00Z stdout F ",
    "2026-07-08T10:00:00Z stdout Fx",
    "2026-07-08T10:00:00Z stdout P ERROR partial part",
    "2026-07-08T10:00:00.123456789+02:00 stderr F WARN offset",
    "2026-13-08T10:00:00Z stdout F bad month",
    "2026-07-08T10:00:00 stdout F no zone",
    "2026-07-08T10:00:00Z stdin F wrong stream",
    r"2026-07-08T10:00:00Z stdout F caf\u00e9 written escape",
]


def docker(inner: str, index: int) -> str:
    """A json-file line writing `inner` as Docker escapes it (`\\uXXXX` for what is not ASCII)."""
    stamp = (datetime(2026, 7, 8, 10, tzinfo=UTC) + timedelta(milliseconds=7 * index)).isoformat()
    return f'{{"log":{json.dumps(inner + chr(10))},"stream":"stderr","time":"{stamp.replace("+00:00", "Z")}"}}'


def cri_line(inner: str, index: int) -> str:
    """A CRI line writing `inner` (a newline in it as the two characters `\\n`), full or partial."""
    stamp = datetime(2026, 7, 8, 10, tzinfo=UTC) + timedelta(microseconds=7001 * index)
    text = inner.replace("\n", "\\n")
    return f"{stamp.isoformat().replace('+00:00', 'Z')} {('stdout', 'stderr')[index % 2]} {'FP'[index % 3 == 2]} {text}"


@pytest.mark.parametrize("wrapper", ["docker", "cri"])
@pytest.mark.parametrize("first", [True, False])
def test_container_lines(tmp_path, wrapper, first):
    """Every kind of inner line and odd runtime lines; the runtime's format detected, or another one (the
    container lines then read where LineReader reaches their format)."""
    wrap, odd = (docker, DOCKER_ODD) if wrapper == "docker" else (cri_line, CRI_ODD)
    lines = [wrap(inner, index) for index, inner in enumerate(INNER_LINES * 3)] + odd
    if not first:
        lines = among_host_lines(lines, seed=3)
    found = assert_same(write(tmp_path, lines), ParseContext(CLOCK, BERLIN))
    assert (found.format == ("container_json" if wrapper == "docker" else "cri")) == first


@pytest.mark.parametrize("seed", range(4))
def test_random_container_lines(tmp_path, seed):
    """Random inner lines (every bench format, stack traces, secrets, junk) in both runtimes' lines."""
    rng = random.Random(seed)
    inner = [random_line(rng, index) for index in range(1200)]
    lines = [docker(text, index) if rng.random() < 0.5 else cri_line(text, index) for index, text in enumerate(inner)]
    assert_same(write(tmp_path, "\n".join(lines).encode("utf-8", "surrogatepass")), ParseContext(CLOCK, BERLIN))


@pytest.mark.parametrize("seed", range(6))
def test_random_mix(tmp_path, seed):
    rng = random.Random(seed)
    text = "\n".join(random_line(rng, index) for index in range(1500)).encode("utf-8", "surrogatepass")
    assert_same(write(tmp_path, text + b"\xc3\n" * (seed % 2)), ParseContext(CLOCK, BERLIN))


def redaction_examples() -> list[str]:
    examples = []
    for name in dir(test_redaction):
        for mark in getattr(getattr(test_redaction, name), "pytestmark", []):
            if mark.name == "parametrize":
                for case in mark.args[1]:
                    values = case.values if hasattr(case, "values") else case if isinstance(case, tuple) else (case,)
                    examples += [value for value in values if isinstance(value, str)]
    return examples


def test_the_screen_flags_every_line_masking_changes():
    lines = [line for text in redaction_examples() + SECRET_LINES + KEY_BLOCK for line in text.split("\n")]
    bench_lines = [line for line in SECRET_LINES]
    changed = [line for line in lines + bench_lines if redaction.Redactor().mask_line(line) != line]
    ascii_changed = [line for line in changed if line.isascii() and "\\u" not in line]
    flagged = logshapes_screen.screened(pl.Series(ascii_changed, dtype=pl.String), redaction.Redactor())
    assert len(ascii_changed) > 20 and flagged.all()


@pytest.mark.parametrize(
    "message",
    ['a "q 1" b', "x'1'", "id 550e8400-e29b-41d4-a716-446655440000 ok", "10.0.0.1:80 /a/b1/c 0x1F 0xZ",
     "order ORD-7113541 453ms v1.2-rc3", "caf\u00e9 \u0663\u0664 \u2168 x\u00b2 \u0101bc1", "-5 a.b-1 _9_"],
)  # fmt: skip
def test_the_template_regex_is_mask(message):
    found = pl.Series([message]).str.replace_all(logcolumns.VARIABLE, "<*>")[0]
    if message.isascii():
        assert found == mask(message)


@pytest.mark.parametrize(
    ("pattern", "split"),
    [(r"^(?:(?P<a>\d+) (?:x|y) )(?P<rest>.*)", (r"^(?:(?P<a>\d+) (?:x|y) )", "rest")),
     (r"^(?:a(?P<m>.*)|(?P<r>.*))", None), (r"^(?:[|)] (?P<m>.*))", (r"^(?:[|)] )", "m")),
     (r"^(?:a(?P<m>.*))?", None), (r"^a|(?P<m>.*)", None), (r"^(?:a (?P<m>.*)$)", None)],
)  # fmt: skip
def test_a_last_group_taking_the_rest_of_the_line_is_split_off_only_where_every_match_takes_it(pattern, split):
    assert shapes.split_rest(pattern) == split


def test_a_split_pattern_reads_every_shape_as_its_whole_pattern():
    lines = pl.Series([make(index) for make in bench_logformats.LINES.values() for index in range(200)])
    for shape in shapes.SHAPES.values():
        for pattern in (shape.pattern, *shape.branches):
            whole = lines.str.extract_groups("^(?P<m_>)" + pattern[1:]).struct.unnest()
            assert logcolumns._extracted(lines, pattern).equals(whole), pattern


# --- windows ----------------------------------------------------------------------------------------

WINDOWED = [
    "not a log line before any timestamp",
    "\tat a.Frame(Frame.java:1)",
    "another 12 unrecognised 0x1f",
    "2026-07-08 10:00:00.000 ERROR [pod-1] c.e.Pay - payment 1 failed",
    "java.lang.IllegalStateException: pool closed",
    "\tat com.example.Pool.get(Pool.java:500)",
    "\tat com.example.Pay.run(Pay.java:7)",
    "",
    "stray text inside the record",
    "2026-07-08 10:00:01.000 WARN [pod-2] c.e.Pay - payment 2 slow",
    *KEY_BLOCK,
    "2026-07-08 10:00:03.000 INFO [pod-3] c.e.Pay - loaded -----BEGIN PRIVATE KEY----- never ended",
    *[f"  body line {index} of an open key block" for index in range(3)],
    *SECRET_LINES,
    "2026-07-08 10:00:04.000 INFO [pod-1] c.e.Pay - payment 3 failed",
    "\tat com.example.Pool.get(Pool.java:500)",
]


@pytest.mark.parametrize("window", [1, 40, 333, 4096])
def test_windows_anywhere(tmp_path, window):
    """Window boundaries at every line (1 byte: each window is a line, but near a key block) or every few:
    inside stack traces and records, before the first timestamp, between a parsed line and its
    continuation, next to key blocks; templates and instances repeating across windows."""
    assert_same(write(tmp_path, WINDOWED * 3), ParseContext(CLOCK, BERLIN), window)


@pytest.mark.parametrize("seed", range(3))
def test_random_mix_in_windows(tmp_path, seed):
    rng = random.Random(seed)
    text = "\n".join(random_line(rng, index) for index in range(1500)).encode("utf-8", "surrogatepass")
    assert_same(write(tmp_path, text), ParseContext(CLOCK, BERLIN), 2000 + 700 * seed)


def test_mixed_bench_log_in_windows(tmp_path):
    bench_tools.write_mixed_log(tmp_path / "mixed.log", 6000)
    assert_same(tmp_path / "mixed.log", ParseContext(CLOCK, BERLIN), 50_000)


def test_no_window_starts_where_a_key_block_may_be_open(tmp_path):
    """A window starts more than MAX_KEY_BLOCK_LINES lines after any `PRIVATE KEY`; the others at the
    first line start after `window` bytes."""
    lines = [f"2026-07-08 10:00:00 INFO line {index}" for index in range(1000)]
    lines[300] = "2026-07-08 10:00:00 INFO -----BEGIN RSA PRIVATE KEY----- never ended"
    data = ("\n".join(lines) + "\n").encode()
    ends = list(logcolumns._window_ends(data, 1000))
    starts_at = [data.count(b"\n", 0, end) for end in ends]  # the line each window after it starts at
    assert ends[-1] == len(data) and ends == sorted(set(ends))
    assert not any(300 < line <= 300 + redaction.MAX_KEY_BLOCK_LINES + 1 for line in starts_at)
    assert 300 + redaction.MAX_KEY_BLOCK_LINES + 2 in starts_at
    assert list(logcolumns._window_ends(b"", 1000)) == [0]


@pytest.mark.parametrize("window", [1, 64, 1 << 20])
def test_a_cut_whose_kept_part_ends_in_a_carriage_return_reads_as_the_reference_reads_it(tmp_path, monkeypatch, window):
    monkeypatch.setattr(files, "LIMITS", files.ReadLimits(max_line_chars=64))
    lines = ["2026-07-08 10:00:00 INFO a", "x" * 63 + "\r" + "y" * 10, "2026-07-08 10:00:01 INFO b\r", "z" * 64 + "\r"]
    path, context = write(tmp_path, lines), ParseContext(CLOCK, BERLIN)
    found = logcolumns.joined(list(logcolumns.read_windows(path, tmp_path, context, window)))  # not read whole
    expected = reference_table(path, tmp_path, context)
    for name in ("lineno", "start", "end", "record", "template"):
        np.testing.assert_array_equal(getattr(found, name), getattr(expected, name), err_msg=name)
    assert found.rows() == expected.rows() and found.text == expected.text
    assert found.cut == expected.cut == 2 and list(found.lineno) == [1, 2, 3, 4]


# --- the json-file layout sliced, CRI texts sliced, ISO stamps read off their bytes, the screen's folded
# pass only where folding changes a line, odd lines found in the bytes

JSON_FILE_READ = [  # the json-file layout: `log` and `time` sliced off the line (a `\u` escape: the Python path)
    r'{"log":"2026-07-08 10:00:00,120 ERROR [main] Db: say \"hi\" to C:\\tmp\/x\n","stream":"stdout","time":"2026-07-08T10:00:00.123456789Z"}',
    r'{"log":"WARN caf\u00e9 unicode escape\n","stream":"stderr","time":"2026-07-08T10:00:00Z"}',
    r'{"log":"ERROR windows line\r\n","stream":"stderr","time":"2026-07-08T10:00:00+01:00"}',
    r'{"log":"INFO tab\tescape and bell\b\n","stream":"stdout","time":"2026-07-08T10:00:00-05:30"}',
    r'{"log":"INFO two\nlines\n","stream":"stdout","time":"2026-07-08T10:00:00.5+0130"}',
    r'{"log":"2026-07-08 10:00:00 INFO password=hunter22 token=abc123\n","stream":"stdout","time":"2026-07-08T10:00:01Z"}',
    r'{"log":"INFO fake keys \",\"stream\":\"stdout\",\"time\":\"x\"}\n","stream":"stdout","time":"2026-07-08T10:00:02Z"}',
    r'{"log":"ends in a backslash \\\n","stream":"stdout","time":"2026-07-08T10:00:03Z"}',
    r'{"log":"","stream":"stdout","time":"2026-07-08T10:00:04Z"}',
    r'{"log":"\n","stream":"stdout","time":"2026-07-08T10:00:04.000001Z"}',
    r'{"log":"\\n is not a newline","stream":"stderr","time":"2026-07-08T10:00:05,5Z"}',
    r'{"log":"INFO bad time\n","stream":"stdout","time":"2026-07-08T10:00:61Z"}',
]
JSON_FILE_OTHER = [  # not the layout: read as a flat JSON object, by Python, or rejected
    r'{"log":"bare " quote\n","stream":"stdout","time":"2026-07-08T10:00:06Z"}',
    r'{"log":"bad escape \q\n","stream":"stdout","time":"2026-07-08T10:00:06Z"}',
    r'{"log":"dangling \","stream":"stdout","time":"2026-07-08T10:00:06Z"}',
    '{"log":"raw\ttab\\n","stream":"stdout","time":"2026-07-08T10:00:06Z"}',
    r'{"log":"INFO stdin\n","stream":"stdin","time":"2026-07-08T10:00:07Z"}',
    r'{"log":"INFO escaped time\n","stream":"stdout","time":"2026-07-08T10:00:08\/Z"}',
    r'{"log":"INFO short","stream":"stdout","time":"}',
    r'{"log":"INFO unclosed\n","stream":"stdout","time":"2026-07-08T10:00:09Z"',
    r'{"log":"INFO trailing blank\n","stream":"stdout","time":"2026-07-08T10:00:09Z"} ',
    r'{"stream":"stderr","log":"ERROR keys in another order\n","time":"2026-07-08T10:00:10Z"}',
    r'{"log":"WARN extra key\n","stream":"stdout","time":"2026-07-08T10:00:11Z","tag":"x"}',
    r'{"log":"INFO capital stream\n","stream":"Stdout","time":"2026-07-08T10:00:12Z"}',
    r'{"log" : "INFO spaced\n","stream":"stdout","time":"2026-07-08T10:00:13Z"}',
]
ISO_STAMPS = [
    "2026-07-08T10:00:00Z", "2026-07-08 10:00", "2026-07-08T10:00Z", "2026-07-08T10:00-07", "2026-07-08T10:00+01:00",
    "2026-07-08T10:00:00.1+01", "2026-07-08T10:00:00,123456789-0130", "2024-02-29T23:59:59.999999+23:59",
    "2026-07-08T10:00:00.000001-00:30", "0001-01-01T00:00:00+00:00", "9999-12-31 23:59:59.9999999Z",
    "2026-07-08T10:00:00", "2026-07-08T10:00:00.5", "2026-07-08T10:00:00+0000", "2026-12-31T23:59:59-1159",
]  # fmt: skip


def json_file_line(inner: str, stamp: str, stream: str = "stdout") -> str:
    return f'{{"log":{json.dumps(inner + chr(10))},"stream":"{stream}","time":"{stamp}"}}'


@pytest.mark.parametrize("first", [True, False])
def test_json_file_lines(tmp_path, first):
    """Escaped quotes and backslashes, `\\u`, `\\r`, control escapes, a secret, keys written inside the
    log string, wrappers out of the layout, and every kind of ISO time, with the detected format or not."""
    stamps = ISO_STAMPS + ["2026-07-08T10:00:00.1234567890Z", "2026-07-08T25:00:00Z", "2026-07-08T10:00:00+24:00"]
    timed = [json_file_line(f"WARN at {stamp}", stamp, "stderr") for stamp in stamps]
    lines = (JSON_FILE_READ + JSON_FILE_OTHER + timed) * 2
    if not first:
        lines = among_host_lines(lines, seed=5)
    found = assert_same(write(tmp_path, lines), ParseContext(CLOCK, BERLIN))
    assert (found.format == "container_json") == first
    assert not any("hunter22" in text or "abc123" in text for text in found.text.values())


def test_the_json_file_layout_is_sliced_exactly_where_it_is_written():
    lines = pl.Series(JSON_FILE_READ + JSON_FILE_OTHER)
    log, stamp = logshapes_container._json_file(lines)
    sliced = ["\\u" not in line for line in JSON_FILE_READ]  # a `\u` escape: the Python path's
    contents = [line[len('{"log":"') : line.index('","stream":"')] for line in JSON_FILE_READ]
    times = [json.loads(line)["time"] for line in JSON_FILE_READ]
    others = [None] * len(JSON_FILE_OTHER)
    assert log.to_list() == [text if ok else None for text, ok in zip(contents, sliced, strict=True)] + others
    assert stamp.to_list() == [text if ok else None for text, ok in zip(times, sliced, strict=True)] + others


def test_docker_lines_unwrap_to_what_parse_reads():
    """Each line read gives json.loads' `log` without its line end and the time's µs; the inner lines that
    are not printable ASCII (from `\\n`, `\\r`, `\\b` escapes) are marked for Python."""
    lines = JSON_FILE_READ + JSON_FILE_OTHER + [json_file_line("x", stamp) for stamp in ISO_STAMPS]
    ascii_lines = [line for line in lines if "\\u" not in line]
    unwrapped = logshapes_container.unwrap_docker(pl.Series(ascii_lines), UTC, sniff=True)
    assert len(unwrapped.read) >= len(JSON_FILE_READ) - 2 + len(ISO_STAMPS)
    for position, text, micros, odd in zip(
        unwrapped.read, unwrapped.texts, unwrapped.micros, unwrapped.odd, strict=True
    ):
        obj = json.loads(ascii_lines[position])
        assert text == obj["log"].rstrip("\r\n")
        assert odd == (not all(char == "\t" or " " <= char <= "~" for char in text))
        moment = datetime.fromisoformat(obj["time"])
        moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
        assert micros == (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def test_iso_stamps_are_read_as_fromisoformat_reads_them():
    """Every stamp the byte reading reads has fromisoformat's wall time and offset; the usual layouts are
    all read. Seeded mutations of them too."""
    rng = random.Random(7)
    stamps = list(ISO_STAMPS)
    for _ in range(20_000):
        chars = list(rng.choice(ISO_STAMPS))
        for _ in range(rng.randrange(1, 3)):
            place = rng.randrange(len(chars) + 1)
            char = rng.choice("0123456789:.,+-ZT x")
            if rng.random() < 0.5 and place < len(chars):
                chars[place] = char
            else:
                chars.insert(place, char)
        stamps.append("".join(chars))
    naive, offsets = logshapes_values._iso_naive(pl.Series(stamps + [None]))
    assert not np.isnan(naive[: len(ISO_STAMPS)]).any() and np.isnan(naive[-1])
    epoch = datetime(1970, 1, 1)
    for stamp, wall, offset in zip(stamps, naive.tolist(), offsets.tolist(), strict=False):
        if np.isnan(wall) or offset == -np.inf:  # not read, or an offset out of range: the Python path's
            continue
        moment = datetime.fromisoformat(stamp)
        assert wall == float((moment.replace(tzinfo=None) - epoch) // timedelta(microseconds=1)), stamp
        zone = moment.utcoffset()
        assert (np.isnan(offset) and zone is None) or offset == zone // timedelta(microseconds=1), stamp
    assert (~np.isnan(naive)).sum() > 1500  # mutated stamps read: the check above meets many


def test_cri_lines_unwrap_to_what_their_regex_reads():
    lines = CRI_ODD[:-1] + [
        "2026-07-08T10:00:00Z stderr F  two blanks",
        "2026-07-08T10:00:00Z stderr F\ttab after the tag",
        "2026-07-08T10:00:00Z  stdout F two blanks before",
        "2026-07-08T10:00:00.5+01:00 stdout P",
        "2026-07-08T10:00:00Z stdout F 2026-07-08T10:00:01Z stdout F nested",
    ]
    unwrapped = logshapes_container.unwrap_cri(pl.Series(lines), UTC)
    matches = [cri._LINE.match(line) for line in lines]
    assert unwrapped.rejected.tolist() == [match is None for match in matches]
    assert unwrapped.texts.to_list() == [matches[position]["text"] or "" for position in unwrapped.read]
    assert not unwrapped.odd.any() and unwrapped.read.tolist() == [0, 1, 3, 4, 8, 11, 12]  # 5: a bad month


def test_the_screen_folds_only_lines_an_escape_it_folds_is_in():
    """A secret seen only once `\\"`, `\\/`, `\\\\` or `\\'` are folded is flagged, also beside `\\n`; a
    line holding only other escapes is screened as written."""
    folded_secrets = [
        r"{\"pass\/word\": \"x\"} s:\/\/u:p@h\n",
        r"mysql:\/\/root:hunter22@db\/shop\n\t",
        r"curl -u admin:hunter22 http:\/\/x\n",
        r"{\'password\': \'hunter22\'}\n",
    ]
    plain = [r"INFO request 7 served\n", r"WARN a\tb\n\r", r"ERROR \\n not a secret\n"]
    redactor = redaction.Redactor()
    assert all(redactor.mask_line(line) != line for line in folded_secrets)
    flagged = logshapes_screen.screened(pl.Series(folded_secrets + plain), redactor)
    assert flagged.tolist() == [True] * len(folded_secrets) + [False] * len(plain)


def test_odd_lines_are_found_in_the_bytes():
    data = (
        b"crlf ok\r\nmid\rcr\nbell\x07\ncaf\xc3\xa9\nnul\x00\ndel\x7f\ntab\tok\nwrites \\u0041\nend\r\n"
        b"cafe\xcc\x81 (a combining mark)\nbad \xff utf-8\n\xe4\xb8\xad\xe6\x96\x87\n"
    )
    flagged = logcolumns._Source(data).odd_lines()  # a SAFE character (logshapes_unicode) is no odd byte
    assert flagged.tolist() == [False, True, True, False, True, True, False, True, False, True, True, False]
