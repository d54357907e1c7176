"""evcli/httpstatus.py: a number in the HTTP status range is a status only where its context says so."""

from __future__ import annotations

import pytest

from evcli.httpstatus import statuses


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('10.0.0.1 - - [08/Jul/2026:22:41:55 +0000] "GET /cart HTTP/1.1" 503 12 "-" "curl/8.0"', ["503"]),
        ('"POST /api/orders HTTP/2" 502 157', ["502"]),
        ('"GET / HTTP/1.1" 200 12 "Mozilla/5.0 AppleWebKit/537.36"', ["200"]),  # a version is no status
        ("GET /api/v1/orders status=503 took 30012ms", ["503"]),
        ('{"route": "/confirm", "status": 502, "duration_ms": 248}', ["502"]),
        ("request failed code=504 upstream=cart", ["504"]),
        ("span checkout http.status_code=500", ["500"]),
        ("Liveness probe failed: HTTP probe failed with statuscode: 500", ["500"]),
        ("charge failed: shop-api returned 502", ["502"]),
        ("charge failed: shop-api returned 502.", ["502"]),
        ("upstream answered 500 after 3s", ["500"]),
        ("the gateway responded with a 504 for /cart", ["504"]),
        ("HTTP/1.1 503 Service Unavailable", ["503"]),
        ("backend said 500 Internal Server Error", ["500"]),
        ("upstream: 502 bad gateway", ["502"]),
        ("rate limited: HTTP 429 from the payments API", ["429"]),
        ("3 requests ended in 502 errors", ["502"]),
        ("Status 503 from inventory", ["503"]),
        ("status: 404, then status=503", ["404", "503"]),
    ],
)
def test_a_number_with_a_status_context_is_a_status(text: str, expected: list[str]) -> None:
    assert statuses(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "order ORD-7 placed by OrderServiceImpl#548",
        "\tat com.example.shop.Foo.bar(Foo.java:503)",
        "config read at Foo.java:500",
        "unexpected token at line 502",
        "listening on port 5003",
        "user id=5001 logged in",
        "user id=503 logged in",
        "processed batch of 500 records from orders-3",
        "2026-09-14 11:20:09,503 - shop.http - INFO - ok",
        "Background saving started by pid 512",
        "pool active=200/200, queued=503/512, rejected=0",
        "query returned 500 rows in 12ms",
        "cache holds 503 entries",
        "GET /api/v1/orders/503 took 12ms",
        "exit status 1503",
    ],
)
def test_a_number_without_a_status_context_is_none(text: str) -> None:
    assert statuses(text) == []


@pytest.mark.parametrize(
    "text",
    ["2 failed, 500 created", "OrderServiceImpl#548 error handler", "GET /api/v1/orders/503 errors page", "500 found"],
)
def test_a_reason_phrase_names_only_its_own_status_and_a_joined_number_none(text: str) -> None:
    assert statuses(text) == []
