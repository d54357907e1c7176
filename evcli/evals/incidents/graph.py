"""The service call graph of one simulated system.

Invariants of every graph `build` returns:
- `services` is a topological order: a caller always comes before its callees, so the graph is
  acyclic and one pass from the end visits every callee before its callers;
- every business service, queue and datastore is reachable from an entry service;
- async consumers have no callers (a queue feeds them); they call the queue and possibly a datastore
  or a business service;
- `calls[caller][callee]` is how many calls to the callee one request of the caller makes on average
  (an entry's shares over its routes sum to 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from random import Random
from typing import Literal, TypeVar

T = TypeVar("T")
Role = Literal["entry", "business", "consumer", "queue", "cache", "database"]
DATASTORE_ROLES: tuple[Role, ...] = ("queue", "cache", "database")

ENTRY_NAMES = (
    "api-gateway",
    "frontend",
    "web-gateway",
    "edge-proxy",
    "storefront",
    "mobile-bff",
    "web-bff",
    "public-api",
    "ingress-gateway",
)
BUSINESS_WORDS = (
    "cart",
    "checkout",
    "payment",
    "catalog",
    "recommendation",
    "shipping",
    "currency",
    "auth",
    "user",
    "inventory",
    "search",
    "ad",
    "email",
    "notification",
    "order",
    "pricing",
    "review",
    "wishlist",
    "loyalty",
    "fraud",
    "tax",
    "coupon",
    "session",
    "profile",
    "media",
    "geo",
    "delivery",
    "billing",
    "invoice",
    "refund",
    "subscription",
    "product",
    "warehouse",
    "ranking",
    "feed",
    "comment",
    "rating",
    "address",
    "identity",
    "account",
    "promotion",
    "quote",
    "booking",
    "ledger",
    "settlement",
    "kyc",
    "document",
    "translation",
    "config",
    "feature-flag",
    "audit",
    "tracking",
    "label",
    "returns",
    "gift-card",
    "bundle",
    "availability",
    "store-locator",
    "chat",
    "support",
    "survey",
    "analytics",
    "export",
    "import",
    "scheduler",
)
DATABASE_ENGINES = ("postgres", "mysql")
DATABASE_DOMAINS = (
    "orders",
    "users",
    "catalog",
    "payments",
    "inventory",
    "accounts",
    "events",
    "billing",
    "reviews",
    "shipping",
    "products",
    "ledger",
    "audit",
    "bookings",
)
CACHE_NAMES = (
    "redis-cart",
    "redis-session",
    "memcached-catalog",
    "redis-rate-limit",
    "redis-feed",
    "redis-pricing",
    "redis-search",
    "valkey-profile",
)
QUEUE_NAMES = ("kafka", "rabbitmq")
CONSUMER_WORDS = ("email", "notification", "audit", "analytics", "indexer", "fulfillment", "webhook", "reporting")
CONSUMER_SUFFIXES = ("-worker", "-consumer")
# How one system names its services: a bare word, or the word with a suffix.
SUFFIX_STYLES = ("", "-service", "-svc", "-api")


@dataclass(frozen=True)
class Service:
    name: str
    role: Role
    word: str  # the name without suffix or engine: "payment" for "payment-svc", "orders" for "postgres-orders"
    layer: int  # 0 for entries; datastores come after every business layer


@dataclass(frozen=True)
class Graph:
    services: tuple[Service, ...]  # a topological order
    calls: Mapping[str, Mapping[str, float]]  # caller → callee → calls per request

    @cached_property
    def _by_name(self) -> dict[str, Service]:
        return {service.name: service for service in self.services}

    @cached_property
    def _order(self) -> dict[str, int]:
        return {service.name: index for index, service in enumerate(self.services)}

    def service(self, name: str) -> Service:
        return self._by_name[name]

    def names(self, *roles: Role) -> list[str]:
        return [service.name for service in self.services if not roles or service.role in roles]

    def callees(self, name: str) -> list[str]:
        return sorted(self.calls.get(name, {}), key=self.order)

    def callers(self, name: str) -> list[str]:
        return [caller for caller in self.names() if name in self.calls.get(caller, {})]

    def order(self, name: str) -> int:
        return self._order[name]

    def ancestors(self, name: str) -> set[str]:
        """Every service whose requests depend, directly or transitively, on `name`."""
        found: set[str] = set()
        pending = [name]
        while pending:
            for caller in self.callers(pending.pop()):
                if caller not in found:
                    found.add(caller)
                    pending.append(caller)
        return found

    def reachable(self, sources: Iterable[str]) -> set[str]:
        """The sources and every service they call, directly or transitively."""
        found = set(sources)
        pending = list(found)
        while pending:
            for callee in self.calls.get(pending.pop(), {}):
                if callee not in found:
                    found.add(callee)
                    pending.append(callee)
        return found

    @property
    def entries(self) -> list[str]:
        return self.names("entry")


def build(rng: Random) -> Graph:
    """A random system of 10–60 services with the invariants of the module docstring."""
    count = rng.randint(10, 60)
    suffix = rng.choice(SUFFIX_STYLES)
    entries = _entries(rng, count)
    queues = _queues(rng, count)
    consumers = _consumers(rng, queues)
    caches = [
        Service(name, "cache", name.split("-", 1)[1], 99)
        for name in _sample(rng, CACHE_NAMES, _share(rng, count, 0.04, 0.1))
    ]
    databases = _databases(rng, _share(rng, count, 0.08, 0.16))
    business_count = max(4, count - len(entries) - len(queues) - len(consumers) - len(caches) - len(databases))
    business = _business(rng, business_count, suffix)
    services = (*entries, *consumers, *business, *queues, *caches, *databases)
    calls: dict[str, dict[str, float]] = {service.name: {} for service in services}
    _route_entries(rng, calls, entries, business)
    _call_business(rng, calls, business)
    _use_datastores(rng, calls, business, [*caches, *databases])
    _produce_and_consume(rng, calls, business, queues, consumers, databases)
    return Graph(services, {caller: dict(callees) for caller, callees in calls.items() if callees})


def _share(rng: Random, count: int, low: float, high: float) -> int:
    return max(1, round(count * rng.uniform(low, high)))


def _sample(rng: Random, items: Sequence[T], count: int) -> list[T]:
    return rng.sample(list(items), min(count, len(items)))


def _entries(rng: Random, count: int) -> list[Service]:
    names = _sample(rng, ENTRY_NAMES, 2 if count >= 20 and rng.random() < 0.45 else 1)
    return [Service(name, "entry", name, 0) for name in names]


def _queues(rng: Random, count: int) -> list[Service]:
    if count < 14:
        return []
    names = _sample(rng, QUEUE_NAMES, 2 if count >= 40 and rng.random() < 0.3 else 1)
    return [Service(name, "queue", name, 99) for name in names]


def _consumers(rng: Random, queues: Sequence[Service]) -> list[Service]:
    if not queues:
        return []
    words = _sample(rng, CONSUMER_WORDS, rng.randint(1, 3))
    return [Service(word + rng.choice(CONSUMER_SUFFIXES), "consumer", word, 0) for word in words]


def _databases(rng: Random, count: int) -> list[Service]:
    return [
        Service(f"{rng.choice(DATABASE_ENGINES)}-{domain}", "database", domain, 99)
        for domain in _sample(rng, DATABASE_DOMAINS, count)
    ]


def _business(rng: Random, count: int, suffix: str) -> list[Service]:
    words = _sample(rng, BUSINESS_WORDS, count)
    layers = 2 if count < 10 else rng.randint(2, 4)
    # The first layer holds the APIs the entries route to; deeper layers get the rest in turn.
    layer_of = [1 + min(layers - 1, index * layers // len(words)) for index in range(len(words))]
    return [Service(word + suffix, "business", word, layer) for word, layer in zip(words, layer_of, strict=True)]


def _route_entries(
    rng: Random, calls: dict[str, dict[str, float]], entries: Sequence[Service], business: Sequence[Service]
) -> None:
    first = [service.name for service in business if service.layer == 1]
    for entry in entries:
        routes = _sample(rng, first, rng.randint(min(2, len(first)), min(6, len(first))))
        weights = [rng.uniform(0.2, 1.0) for _ in routes]
        for route, weight in zip(routes, weights, strict=True):
            calls[entry.name][route] = round(weight / sum(weights), 3)
    for name in first:
        if not any(name in calls[entry.name] for entry in entries):
            calls[rng.choice(entries).name][name] = round(rng.uniform(0.05, 0.3), 3)


def _call_business(rng: Random, calls: dict[str, dict[str, float]], business: Sequence[Service]) -> None:
    for caller in business:
        deeper = [service.name for service in business if service.layer > caller.layer]
        for callee in _sample(rng, deeper, rng.choice((0, 1, 1, 2, 2, 3))):
            calls[caller.name][callee] = _calls_per_request(rng)
    for service in business:
        callers = [other for other in business if service.name in calls[other.name]]
        if service.layer > 1 and not callers:
            shallower = [other for other in business if other.layer == service.layer - 1]
            calls[rng.choice(shallower).name][service.name] = _calls_per_request(rng)


def _calls_per_request(rng: Random) -> float:
    return 1.0 if rng.random() < 0.35 else round(rng.uniform(0.1, 0.9), 3)


def _use_datastores(
    rng: Random, calls: dict[str, dict[str, float]], business: Sequence[Service], stores: Sequence[Service]
) -> None:
    # Popularity weights make some stores shared by many services and others by one or two.
    popularity = [rng.uniform(0.2, 3.0) for _ in stores]
    for caller in business:
        wanted = rng.choice((0, 1, 1, 1, 2)) if calls[caller.name] else rng.choice((1, 1, 2))
        for store in dict.fromkeys(rng.choices(stores, popularity, k=wanted)):  # a dict: ordered, unlike a set
            calls[caller.name][store.name] = (
                round(rng.uniform(1.0, 3.0), 2) if store.role == "cache" else _calls_per_request(rng)
            )
    for store in stores:
        if not any(store.name in calls[caller.name] for caller in business):
            calls[rng.choice(business).name][store.name] = _calls_per_request(rng)


def _produce_and_consume(
    rng: Random,
    calls: dict[str, dict[str, float]],
    business: Sequence[Service],
    queues: Sequence[Service],
    consumers: Sequence[Service],
    databases: Sequence[Service],
) -> None:
    for queue in queues:
        for producer in _sample(rng, business, rng.randint(1, 3)):
            calls[producer.name][queue.name] = round(rng.uniform(0.1, 1.0), 3)
    for consumer in consumers:
        calls[consumer.name][rng.choice(queues).name] = 1.0
        if databases and rng.random() < 0.6:
            calls[consumer.name][rng.choice(databases).name] = _calls_per_request(rng)
        if rng.random() < 0.4:
            calls[consumer.name][rng.choice(business).name] = _calls_per_request(rng)
