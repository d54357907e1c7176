"""evcli.backends.addresses: IPv4 addresses in log lines, counted per line."""

from __future__ import annotations

from collections import Counter

import pytest

from evcli.backends.addresses import count_addresses, count_paths, top_counts


@pytest.mark.parametrize(
    ("line", "found"),
    [
        ("Failed password for root from 203.0.113.45 port 47757 ssh2", ["203.0.113.45"]),
        ('10.20.30.40 - - [18/Mar/2026:09:21:45 +0100] "POST /api/login HTTP/1.1" 401 43', ["10.20.30.40"]),
        ("connect to 10.0.3.7:8080 failed; upstream 10.0.3.8:8080", ["10.0.3.7", "10.0.3.8"]),
        ("reverse mapping checking getaddrinfo for ns.example.com [173.234.31.186] failed", ["173.234.31.186"]),
        ("rhost=220-135-151-1.hinet-ip.hinet.net user=root", []),  # a host name, no dotted quad
        ("openssl 1.1.1.1234 and 256.1.1.1", []),  # part of a longer number, an octet over 255
        ("spark 3.5.1.2.7 on 1.2.3", []),
        ("client 10.1.1.1 then 10.1.1.1 again", ["10.1.1.1"]),  # a line counts once per distinct address
    ],
)
def test_addresses_found_in_a_line(line, found):
    assert sorted(count_addresses([line])) == sorted(found)


def test_top_counts_most_lines_first_ties_by_address():
    counts = count_addresses(["a 10.0.0.2", "b 10.0.0.1", "c 10.0.0.2 10.0.0.3", "d 10.0.0.3"])
    assert counts == Counter({"10.0.0.2": 2, "10.0.0.3": 2, "10.0.0.1": 1})
    assert top_counts(counts) == {"10.0.0.2": 2, "10.0.0.3": 2, "10.0.0.1": 1}
    assert list(top_counts(counts, top=2)) == ["10.0.0.2", "10.0.0.3"]
    assert top_counts(Counter()) == {}


def test_a_user_agents_product_version_is_no_address():
    line = (
        '203.0.113.77 - - [14/Jul/2026:14:05:01 -0400] "POST /api/checkout HTTP/1.1" 504 167 "-" '
        '"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"'
    )
    hdfs = "10.40.7.7:50010:Got exception while serving blk_839763372080781545 to /10.40.1.35:"
    assert count_addresses([line, hdfs]) == {"203.0.113.77": 1, "10.40.7.7": 1, "10.40.1.35": 1}


def test_paths_are_counted_by_endpoint_with_ids_as_one():
    lines = [
        '203.0.113.77 - - [14/Jul/2026:14:05:01 -0400] "POST /api/checkout?retry=1 HTTP/1.1" 504 167 "-" "curl/8.5"',
        '198.51.100.7 - - [14/Jul/2026:14:05:02 -0400] "GET /products/8115 HTTP/1.1" 502 157 "-" "curl/8.5"',
        '198.51.100.7 - - [14/Jul/2026:14:05:03 -0400] "GET /products/2300 HTTP/1.1" 502 157 "-" "curl/8.5"',
        '2026/07/14 14:05:04 [error] 31#31: *88 upstream timed out, client: 203.0.113.77, request: "POST /api/checkout HTTP/1.1"',
        '{"level":"error","path":"/api/cart/items","status":500}',
        "time=2026-07-14T18:05:06Z level=error msg=failed route=/api/cart/items",
        "no request here at all / nothing",
    ]
    assert count_paths(lines) == {"/api/checkout": 2, "/products/{id}": 2, "/api/cart/items": 2}


def test_a_line_naming_its_source_counts_the_source_alone():
    ufw = (
        "Jun  4 14:01:02 app-02 kernel: [UFW BLOCK] IN=eth0 OUT= MAC=00:16:3e SRC=45.155.205.233 DST=10.0.3.21 "
        "LEN=40 PROTO=TCP SPT=51234 DPT=22"
    )
    nginx = (
        "2026/07/14 14:05:04 [error] 31#31: *88 upstream timed out, client: 203.0.113.77, server: shop, "
        'request: "POST /api/checkout HTTP/1.1", upstream: "http://10.42.1.15:3000/api/checkout"'
    )
    sshd = "Jun  4 14:01:03 bastion sshd[811]: Failed password for root from 61.177.172.13 port 40222 ssh2"
    assert count_addresses([ufw, nginx, sshd]) == {"45.155.205.233": 1, "203.0.113.77": 1, "61.177.172.13": 1}
