"""The access log of a proxying entry (nginx, Envoy): a sample of the requests it passed on.

Each request goes to one route (a callee) with the entry's routing shares. When the entry's effect
says a share of its requests fails, those failures fall on the route the effect came through
(`blame`): its requests fail with probability errors / share, the other routes stay healthy, so
the access log shows 5xx on exactly one upstream. nginx also writes its error-log line for a
timed-out or refused upstream, naming the upstream by address, not by name.
"""

from __future__ import annotations

from datetime import datetime
from random import Random

from evcli.evals.incidents.logs import Event, Request
from evcli.evals.incidents.voice import Voice, moments
from evcli.evals.incidents.world import World

USER_AGENTS = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1",
    "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0",
    "okhttp/4.12.0",
)
_STATUS = {"timeout": 504, "refused": 502, "status": 500, "parse": 502}
_PROXY_TIMEOUT_MS = {"nginx": 60000.0, "envoy": 15000.0}
_NGINX_ERRORS = {
    504: "upstream timed out (110: Connection timed out) while reading response header from upstream",
    502: "connect() failed (111: Connection refused) while connecting to upstream",
}


def access_events(voice: Voice, world: World, rng: Random, quiet: frozenset[int]) -> list[Event]:
    routes = world.graph.calls.get(voice.name, {})
    names, shares = list(routes), list(routes.values())
    addresses = {name: f"10.0.{4 + index % 5}.{10 + index * 7 % 240}" for index, name in enumerate(names)}
    effect = world.effects.get(voice.name)
    profile = world.profiles[voice.name]
    events = []
    for tick, moment in moments(world, rng, voice.setup.chatter, quiet):
        route = rng.choices(names, shares)[0]
        failing, added = 0.0, 0.0
        if effect and (effect.blame == route or effect.blame is None):
            share = routes[route] if effect.blame else 1.0
            failing, added = min(1.0, effect.errors[tick] / share), effect.latency[tick] / share
        failed = rng.random() < failing or rng.random() < (100 - profile.success) / 100
        mode = effect.mode if effect and failing else "status"
        request = _request(voice, world, route, addresses[route], failed, mode, added, rng)
        events.append(Event(moment, "INFO", "", request=request))
        if failed and voice.setup.format == "nginx" and request.status in _NGINX_ERRORS:
            events.append(_nginx_error(moment, request, rng))
    return events


def _request(
    voice: Voice, world: World, route: str, address: str, failed: bool, mode: str, added: float, rng: Random
) -> Request:
    service = world.graph.service(route)
    normal = world.profiles[voice.name].latency * rng.lognormvariate(0, 0.5)
    status = _STATUS.get(mode, 500) if failed else rng.choices((200, 200, 200, 304, 404), (60, 20, 10, 5, 1))[0]
    duration = _PROXY_TIMEOUT_MS[voice.setup.format] if status == 504 else normal + added * rng.uniform(0.5, 1.5)
    return Request(
        client=f"10.{rng.randint(1, 3)}.{rng.randint(0, 255)}.{rng.randint(2, 254)}",
        method=rng.choices(("GET", "POST", "PUT"), (80, 15, 5))[0],
        path=f"/api/{service.word}/{rng.randint(1000, 99999)}",
        status=status,
        size=rng.randint(150, 400) if status >= 500 else rng.randint(300, 40000),
        duration_ms=duration if status != 502 else rng.uniform(0.5, 3),
        upstream=f"{route}:8080",
        upstream_ip=f"{address}:8080",
        user_agent=rng.choice(USER_AGENTS),
        request_id=f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-{8 + rng.getrandbits(2):x}{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}",
    )


def _nginx_error(moment: datetime, request: Request, rng: Random) -> Event:
    text = (
        f"*{rng.randint(10000, 999999)} {_NGINX_ERRORS[request.status]}, client: {request.client}, server: _, "
        f'request: "{request.method} {request.path} HTTP/1.1", upstream: "http://{request.upstream_ip}{request.path}", host: "shop.example.com"'
    )
    return Event(moment, "ERROR", text)
