"""Network addresses in log lines, counted: what "which IP had the most failed passwords?" asks.

`count_by="address"` on a log query adds `stats.by_address`: the TOP_ADDRESSES addresses found in
the most matching lines (a line counts once for each distinct address it holds), most lines first,
ties by address (`count_by="path"`: per requested path, `stats.by_path`). IPv4 dotted quads only (each octet 0-255, not part of a longer dotted number such
as a version `1.2.3.4.5`, nor a product version such as a user agent's `Chrome/126.0.0.0`); IPv6 and
host names are not counted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable

TOP_ADDRESSES = 10
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
# not inside a word or a longer dotted number, nor a product's version (`Chrome/126.0.0.0`); `to /10.40.1.35`
# (HDFS writes addresses after a slash) is one
ADDRESS = re.compile(rf"(?<![\w.])(?<!\w/){_OCTET}(?:\.{_OCTET}){{3}}(?![\d]|\.\d)")


# an address a line names as where the traffic came from (`SRC=` of a firewall, nginx's `client:`, sshd's
# `from`, `rhost=`): in such a line the others (`DST=`, `upstream:`, the host itself) are not what sent it
SOURCE_NAMED = r"(?:\bSRC=|\bsrc[=:]\s?|\bclient[=:]\s?|\bclient_ip[=:]\s?|\brhost=|\bremote_addr[=:]\s?|\bfrom\s)"
SOURCE = re.compile(rf"{SOURCE_NAMED}({ADDRESS.pattern})")


def count_addresses(lines: Iterable[str]) -> Counter[str]:
    """Per address, the number of lines holding it; in a line that names where it came from, that address."""
    return _per_line(lines, ".", lambda line: SOURCE.findall(line) or ADDRESS.findall(line))


def _per_line(lines: Iterable[str], mark: str, names: Callable[[str], list[str]]) -> Counter[str]:
    """Per name, the number of lines (holding `mark`, a cheap first test) that `names` finds it in."""
    counts: Counter[str] = Counter()
    for line in lines:
        if mark in line:
            counts.update(set(names(line)))
    return counts


# the path a line requests: an access log's request line (also quoted in nginx's error log, `request: "…"`), or
# a structured `path`/`url`/`uri`/`route` field; the query string left out, so one endpoint counts as one
REQUEST = re.compile(r'"(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS|CONNECT|TRACE) (/[^\s"?]*)[^\s"]* HTTP/')
PATH_FIELD = re.compile(r'(?:^|[\s{,])"?(?:path|url|uri|route|request_uri)"?\s*[=:]\s*"?(/[^\s"?,}]*)')


# a path segment that is an id (`/products/8115`, a UUID, a hash) stands for every id: one endpoint
_ID_SEGMENT = re.compile(r"(?<=/)(?:\d+|[0-9a-fA-F]{8}-[0-9a-fA-F-]{27}|[0-9a-fA-F]{16,})(?=/|$)")


def count_paths(lines: Iterable[str]) -> Counter[str]:
    """Per requested path (an endpoint: `/api/checkout`, `/products/{id}`), the number of lines requesting it."""
    return _per_line(lines, "/", _requested)


def _requested(line: str) -> list[str]:
    found = REQUEST.search(line) or PATH_FIELD.search(line)
    return [endpoint(found.group(1))] if found else []


def endpoint(path: str) -> str:
    """A requested path with each id segment written `{id}`."""
    return _ID_SEGMENT.sub("{id}", path)


def top_counts(counts: Counter[str], top: int = TOP_ADDRESSES) -> dict[str, int]:
    """The `top` addresses (or instances) in the most lines, most first, ties by name: `stats.by_*`."""
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top])
