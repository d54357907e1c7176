"""bench/bench_engines.py: the checks its numbers rest on, at a tiny size. Counts and line numbers are grep's
(a real grep process on the same file), parsed columns are evcli's LineReader's, and masking through the
screen + overlay gives mask_stream's lines and hides a secret from a keyword search that grep finds.
numpy_re always runs (numpy is evcli's dependency); the other engines only where they import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "bench"))  # the bench scripts import each other as top-level modules

import _engines as eng  # noqa: E402
import bench_engines as bench  # noqa: E402
from bench_tools import write_mixed_log  # noqa: E402

from evcli.backends.base import LEVELS  # noqa: E402
from evcli.core.redaction import Redactor  # noqa: E402

PRESENT = eng.available()
PARSERS = [name for name in eng.PARSERS if PRESENT[name]]
SCANNERS = [name for name in eng.ENGINES if PRESENT[name]]
SCREENS = [name for name in bench.SCREENS if PRESENT[name]]


def grep(*argv: str) -> str:
    return subprocess.run(["grep", *argv], capture_output=True, text=True, check=False).stdout


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("mixed") / "mixed.log"
    write_mixed_log(path, 4000)
    return path


@pytest.mark.parametrize("engine", PARSERS)
def test_a_built_store_counts_what_grep_counts(engine, mixed, tmp_path):
    source = eng.open_source(mixed)
    found = eng.parse(engine, source, eng.MIXED_SHAPES, bench.MIXED_CLOCK, bench.MIXED_TZ)
    store = bench.STORES[engine](tmp_path / "store")
    store.write(found, source.starts, {})

    assert store.level_count(LEVELS.index("ERROR")) == int(grep("-c", "-E", bench.LEVEL_GREP, str(mixed)))
    pipe = f"grep -oE '{bench.ADDRESS_GREP}' '{mixed}' | sort | uniq -c"
    counted = subprocess.run(["bash", "-c", pipe], capture_output=True, text=True, check=True).stdout
    assert store.address_counts() == {word: int(n) for n, word in (row.split() for row in counted.splitlines())}
    assert np.array_equal(np.asarray(store.column("starts")), source.starts)


@pytest.mark.parametrize("engine", SCANNERS)
def test_keyword_lines_are_grep_n_lines(engine, mixed):
    source = eng.open_source(mixed)
    expected = [int(line.split(":", 1)[0]) for line in grep("-n", "-i", "-F", "ORD-1", str(mixed)).splitlines()]
    rows = bench.keyword_rows(engine, source, "ORD-1", {}, slice(0, source.lines))
    assert expected and [int(row) + 1 for row in rows] == expected
    inner = bench.keyword_rows(engine, source, "ORD-1", {}, slice(1000, 2000))  # a span: only its lines
    assert [int(row) + 1 for row in inner] == [line for line in expected if 1000 < line <= 2000]


@pytest.mark.parametrize("name", ["java", "rfc3164", "access_log", "json", "glog", "healthapp", "cfdr"])
def test_parsed_columns_agree_with_line_reader(name, tmp_path):
    from datetime import timedelta
    from zoneinfo import ZoneInfo

    from bench_logformats import LINES, _at

    from evcli.backends.logformats import ParseContext

    lines = [LINES[name](index) for index in range(600)]
    path = tmp_path / f"{name}.log"
    path.write_text("\n".join(lines) + "\n")
    context = ParseContext(_at(600) + timedelta(hours=1), ZoneInfo("Europe/Berlin"))
    expected = bench._baseline(lines, name, context)
    for engine in PARSERS:
        found = eng.parse(engine, eng.open_source(path), (eng.SHAPES[name],), context.clock, context.tz)
        assert bench._agreement(found, expected) == {"ts": 1.0, "level": 1.0, "template": 1.0}, engine


SECRET = "9f3c2a7b1e5d4c8a0b6f2e1d"
LOG_WITH_SECRETS = [
    "2026-07-08 10:00:00.000 INFO [app-1] c.e.Service - order ORD-1 took 12ms",
    f"2026-07-08 10:00:01.000 ERROR [app-1] c.e.Pay - call failed, Authorization: Bearer {SECRET}",
    "2026-07-08 10:00:02.000 WARN [app-2] c.e.Db - url=jdbc:mysql://app:hunter2secret@db-primary:3306/shop",
    "2026-07-08 10:00:03.000 INFO [app-2] c.e.Cfg - ｐａｓｓｗｏｒｄ=Zq8wvXr2 loaded",
    "-----BEGIN RSA PRIVATE KEY-----",
    "MIIEowIBAAKCAQEAtestbodylineoftheprivatekeyabcdefghij",
    "-----END RSA PRIVATE KEY-----",
    "2026-07-08 10:00:04.000 INFO [app-1] c.e.Service - order ORD-2 took 3ms",
    "2026-07-08 10:00:05.000 INFO [app-1] c.e.Login - login ok password=CorrectHorseBattery",
]


@pytest.mark.parametrize("engine", SCREENS)
def test_screen_and_overlay_mask_as_mask_stream_and_hide_secrets(engine, tmp_path):
    path = tmp_path / "secrets.log"
    path.write_text("\n".join(LOG_WITH_SECRETS) + "\n", encoding="utf-8")
    source = eng.open_source(path)
    redactor = Redactor()
    overlay, flagged = bench.masked_overlay(engine, source, redactor)
    expected = list(redactor.mask_stream(LOG_WITH_SECRETS))
    assert [overlay.get(row, line) for row, line in enumerate(LOG_WITH_SECRETS)] == expected
    assert set(overlay) == {1, 2, 3, 4, 5, 8}  # token, passwords (one folded), the key's lines, a password
    assert grep("-c", "-F", SECRET, str(path)).strip() == "1"
    if engine in bench.SCANNERS:
        assert len(bench.keyword_rows(engine, source, SECRET, overlay, slice(0, source.lines))) == 0
        assert list(bench.keyword_rows(engine, source, "***", overlay, slice(0, source.lines))) == [1, 2, 3, 4, 5, 8]


def test_a_store_keeps_no_unmasked_word(tmp_path):
    """Templates and words of the lines masking changed come from their masked text: no stored byte holds
    a secret (the numpy store's files are uncompressed, so a byte search is a real check)."""
    path = tmp_path / "secrets.log"
    path.write_text("\n".join(LOG_WITH_SECRETS) + "\n", encoding="utf-8")
    bench.build_store("numpy_re", path, tmp_path / "store", Redactor(), {})
    stored = b"".join(file.read_bytes() for file in (tmp_path / "store").iterdir())
    assert b"order <*> took <*>" in stored and b"login ok password=***" in stored
    for secret in (b"CorrectHorseBattery", SECRET.encode(), b"hunter2secret", b"Zq8wvXr2"):
        assert secret not in stored
