"""What services log when nothing is wrong, and the misleading lines they write all the time.

Normal chatter (requests handled, downstream calls, cache statistics, consumed batches, scheduled
jobs) arrives at a steady rate that follows the load. Habits are noise an on-call engineer learns to
ignore, present before the fault as after it: a deprecated setting warned about at every config
reload, a flaky health check, an occasional slow query, retries that succeed, and for one unrelated
service an ERROR storm about a metrics endpoint that has been down for weeks.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from random import Random

from evcli.evals.incidents.logs import Event, Value
from evcli.evals.incidents.traces import camel, java_frames, java_trace
from evcli.evals.incidents.voice import Voice, moments, url_of
from evcli.evals.incidents.world import World

_HTTP_METHODS = ("GET", "GET", "GET", "POST", "PUT")


def normal_events(voice: Voice, world: World, rng: Random, quiet: frozenset[int]) -> list[Event]:
    events = [_chatter(voice, moment, rng) for _, moment in moments(world, rng, voice.setup.chatter, quiet)]
    if voice.family in ("java", "go", "python") and rng.random() < 0.6:
        period = rng.choice((300, 600, 900, 1800))
        first = world.timeline.start + timedelta(
            seconds=period - world.timeline.start.timestamp() % period + rng.uniform(0, 3)
        )
        moment = first
        while moment < world.timeline.end:
            events.append(_job(voice, moment, rng))
            moment += timedelta(seconds=period)
    return events


def _chatter(voice: Voice, moment: datetime, rng: Random) -> Event:
    if voice.family in ("postgres", "mysql", "kafka", "rabbitmq"):
        return _datastore_chatter(voice, moment, rng)
    ms = round(rng.lognormvariate(2.5, 0.7))
    if voice.role == "consumer" or (voice.callees and rng.random() < 0.2):
        return _batch(voice, moment, rng, ms) if voice.role == "consumer" else _call(voice, moment, rng, ms)
    resource = voice.graph.service(rng.choice(voice.callees)).word if voice.role == "entry" else voice.word
    method, path = rng.choice(_HTTP_METHODS), f"/api/{resource}/{rng.randint(1000, 99999)}"
    if voice.family == "go":
        fields = (("method", method), ("path", path), ("status", 200), ("duration", f"{ms}.{rng.randint(0, 9)}ms"))
        return voice.event(moment, "INFO", "request completed", "server", rng, fields=fields)
    if voice.family == "python":
        return voice.event(moment, "INFO", f'"{method} {path} HTTP/1.1" 200 {ms}ms', "api", rng)
    return voice.event(moment, "INFO", f"Completed {method} {path} with status 200 in {ms} ms", "controller", rng)


def _call(voice: Voice, moment: datetime, rng: Random, ms: int) -> Event:
    callee = rng.choice(voice.callees)
    role, go = voice.graph.service(callee).role, voice.family == "go"
    if role == "cache":
        ratio = f"{rng.uniform(0.8, 0.99):.2f}"
        if go:
            return voice.event(
                moment, "DEBUG", "cache stats", "cache", rng, fields=(("cache", callee), ("hit_ratio", ratio))
            )
        return voice.event(moment, "DEBUG", f"Cache {callee} hit ratio {ratio} over the last minute", "cache", rng)
    if role == "queue":
        topic = f"{voice.word}-events"
        if go:
            return voice.event(
                moment,
                "DEBUG",
                "message published",
                "producer",
                rng,
                fields=(("topic", topic), ("partition", rng.randint(0, 11))),
            )
        return voice.event(
            moment,
            "DEBUG",
            f"Published event to {topic}-{rng.randint(0, 11)} at offset {rng.randint(10**5, 10**8)}",
            "producer",
            rng,
        )
    if role == "database":
        if go:
            return voice.event(
                moment,
                "DEBUG",
                "query executed",
                "store",
                rng,
                fields=(("rows", rng.randint(0, 50)), ("duration", f"{ms}ms")),
            )
        active = rng.randint(0, 8)
        text = (
            f"HikariPool-1 - Pool stats (total=20, active={active}, idle={20 - active}, waiting=0)"
            if voice.family == "java"
            else f"query returned {rng.randint(0, 50)} rows in {ms}ms"
        )
        return voice.event(moment, "DEBUG", text, "pool" if voice.family == "java" else "db", rng)
    if go:
        fields: tuple[tuple[str, Value], ...] = (("upstream", callee), ("status", 200), ("duration", f"{ms}ms"))
        return voice.event(moment, "DEBUG", "upstream call", "client", rng, fields=fields)
    if voice.family == "python":
        return voice.event(
            moment, "DEBUG", f"Starting new HTTP connection (1): {callee}:8080", "urllib3.connectionpool", rng
        )
    return voice.event(moment, "DEBUG", f"GET {url_of(voice.graph, callee, rng)} -> 200 OK ({ms} ms)", "client", rng)


def _batch(voice: Voice, moment: datetime, rng: Random, ms: int) -> Event:
    topic, count, partition = f"{voice.word}-events", rng.randint(1, 500), rng.randint(0, 11)
    if voice.family == "go":
        return voice.event(
            moment,
            "INFO",
            "batch processed",
            "consumer",
            rng,
            fields=(("topic", topic), ("partition", partition), ("count", count)),
        )
    return voice.event(
        moment, "INFO", f"Processed {count} records from {topic}-{partition} in {ms} ms", "consumer", rng
    )


def _job(voice: Voice, moment: datetime, rng: Random) -> Event:
    job, ms, items = f"{camel(voice.word)}SyncJob", rng.randint(80, 4000), rng.randint(10, 5000)
    if voice.family == "go":
        return voice.event(
            moment,
            "INFO",
            "job finished",
            "jobs",
            rng,
            fields=(("job", job), ("duration", f"{ms}ms"), ("items", items)),
        )
    if voice.family == "python":
        return voice.event(
            moment, "INFO", f"Task {voice.word}.tasks.sync succeeded in {ms / 1000:.3f}s: {items}", "tasks", rng
        )
    return voice.event(
        moment, "INFO", f"Scheduled job {job} finished in {ms} ms ({items} items)", "job", rng, thread="scheduling-1"
    )


def _datastore_chatter(voice: Voice, moment: datetime, rng: Random) -> Event:
    client = f"10.0.{rng.randint(1, 9)}.{rng.randint(2, 250)}"
    if voice.family == "postgres":
        message = rng.choice(
            (
                "checkpoint starting: time",
                f"checkpoint complete: wrote {rng.randint(10, 900)} buffers ({rng.uniform(0, 5):.1f}%); write={rng.uniform(1, 30):.3f} s, sync={rng.uniform(0, 1):.3f} s",
                f'automatic vacuum of table "{voice.word}.public.{voice.word}": index scans: 1',
                f"connection received: host={client} port={rng.randint(30000, 60000)}",
            )
        )
        return Event(moment, "INFO", message, thread=str(rng.randint(100, 9999)))
    if voice.family == "mysql":
        return Event(
            moment,
            "INFO",
            f"Aborted connection {rng.randint(100, 99999)} to db: '{voice.word}' user: 'app' host: '{client}' (Got timeout reading communication packets).",
            "MY-010914 Server",
            str(rng.randint(8, 400)),
        )
    if voice.family == "kafka":
        partition = f"{rng.choice(('orders', 'events', 'payments', 'audit'))}-{rng.randint(0, 11)}"
        return Event(
            moment,
            "INFO",
            f"[LocalLog partition={partition}, dir=/var/lib/kafka/data] Rolled new log segment at offset {rng.randint(10**5, 10**8)} in {rng.randint(1, 9)} ms.",
            "kafka.log.LocalLog",
        )
    return Event(
        moment,
        "INFO",
        f"accepting AMQP connection ({client}:{rng.randint(30000, 60000)} -> 10.0.5.9:5672)",
        thread=str(rng.randint(500, 9000)),
    )


def habit_events(voice: Voice, world: World, rng: Random, quiet: frozenset[int]) -> list[Event]:
    events: list[Event] = []
    for habit in voice.setup.habits if voice.family in ("java", "go", "python") else ():
        rate = {
            "deprecated": 1 / 3600,
            "flaky_health": 1 / rng.uniform(300, 1200),
            "slow_query": 1 / rng.uniform(400, 1500),
            "retries": 1 / rng.uniform(200, 900),
            "error_storm": 1 / rng.uniform(5, 30),
        }[habit]
        for _, moment in moments(world, rng, rate, quiet):
            events.extend(_habit(voice, habit, moment, rng))
    return events


def _habit(voice: Voice, habit: str, moment: datetime, rng: Random) -> list[Event]:
    go = voice.family == "go"
    if habit == "deprecated":
        if go:
            return [
                voice.event(
                    moment,
                    "WARN",
                    "deprecated configuration option",
                    "config",
                    rng,
                    fields=(("option", "legacy_routing"), ("use", "routing.mode")),
                )
            ]
        text = (
            "Property 'spring.redis.host' is deprecated: use 'spring.data.redis.host' instead"
            if voice.family == "java"
            else "setting 'VERIFY_SSL' is deprecated, use 'SSL_VERIFY'"
        )
        return [voice.event(moment, "WARN", text, "config", rng)]
    if habit == "flaky_health":
        target = rng.choice(voice.callees)
        later = moment + timedelta(seconds=rng.uniform(1, 5))
        if go:
            failed = voice.event(
                moment,
                "WARN",
                "health probe failed",
                "health",
                rng,
                fields=(("target", target), ("error", "context deadline exceeded"), ("attempt", 1)),
            )
            return [
                failed,
                voice.event(later, "INFO", "health probe recovered", "health", rng, fields=(("target", target),)),
            ]
        failed = voice.event(
            moment, "WARN", f"Health check of {target} failed: timeout after 1000 ms (attempt 1/3)", "health", rng
        )
        return [failed, voice.event(later, "INFO", f"Health check of {target} OK", "health", rng)]
    if habit == "slow_query":
        ms = rng.randint(800, 4000)
        query = f"SELECT * FROM {voice.word.replace('-', '_')} WHERE customer_id = ? ORDER BY created_at DESC LIMIT 50"
        if go:
            return [
                voice.event(
                    moment, "WARN", "slow query", "store", rng, fields=(("duration", f"{ms}ms"), ("query", query))
                )
            ]
        return [voice.event(moment, "WARN", f"Slow query ({ms} ms): {query}", "repository", rng)]
    if habit == "retries":
        callee = rng.choice(voice.callees)
        if go:
            return [
                voice.event(
                    moment,
                    "WARN",
                    "retrying request",
                    "client",
                    rng,
                    fields=(("upstream", callee), ("attempt", 2), ("error", "connection reset by peer")),
                )
            ]
        return [
            voice.event(
                moment,
                "WARN",
                f"Retrying call to {url_of(voice.graph, callee, rng)} (attempt 2 of 3) after 200 ms: Connection reset",
                "client",
                rng,
            )
        ]
    return [_storm(voice, moment, rng)]


def _storm(voice: Voice, moment: datetime, rng: Random) -> Event:
    if voice.family == "go":
        error = f"dial tcp 10.0.9.{rng.randint(2, 9)}:9125: connect: connection refused"
        return voice.event(
            moment,
            "ERROR",
            "failed to push metrics",
            "metrics",
            rng,
            fields=(("endpoint", "statsd-exporter:9125"), ("error", error)),
        )
    if voice.family == "python":
        return voice.event(
            moment,
            "ERROR",
            "Error sending metrics to statsd-exporter:9125: [Errno 111] Connection refused",
            "metrics",
            rng,
        )
    trace = java_trace(
        "java.net.ConnectException: Connection refused",
        ["java.base/sun.nio.ch.Net.pollConnect(Native Method)", *java_frames(voice.package, voice.word, rng, 1)],
    )
    return voice.event(
        moment,
        "ERROR",
        "Failed to export metrics to statsd-exporter:9125",
        "metrics",
        rng,
        trace=trace if rng.random() < 0.3 else (),
    )
