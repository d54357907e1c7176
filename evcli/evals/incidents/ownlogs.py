"""What the faulty service writes about its own fault, and the banners a service writes when it
starts: exceptions for `errors`, "No space left on device" for `disk`, saturation and GC warnings,
a crash soon after every start of a crash loop, the last words before an OOM kill."""

from __future__ import annotations

from datetime import datetime, timedelta
from random import Random

from evcli.evals.incidents.logs import Event
from evcli.evals.incidents.phrases import OWN_LINES
from evcli.evals.incidents.traces import (
    SPRING_WEB_FRAMES,
    STARTUP_FRAMES,
    camel,
    go_panic,
    java_frames,
    java_trace,
    python_trace,
    zap_stack,
)
from evcli.evals.incidents.voice import Voice, moments
from evcli.evals.incidents.world import World

SERVLET_LOGGER = "o.a.c.c.C.[.[.[/].[dispatcherServlet]"  # Tomcat's logger of a servlet's exceptions


def startup(voice: Voice, moment: datetime, rng: Random) -> list[Event]:
    app, later = f"{camel(voice.word)}Application", [moment + timedelta(seconds=0.3 * index) for index in range(6)]
    if voice.family == "java":
        return [
            voice.event(
                later[0],
                "INFO",
                f"Starting {app} v{rng.randint(1, 4)}.{rng.randint(0, 30)}.{rng.randint(0, 9)} using Java 17.0.10 with PID 1",
                "application",
                rng,
                thread="main",
            ),
            voice.event(
                later[1], "INFO", 'The following 1 profile is active: "prod"', "application", rng, thread="main"
            ),
            voice.event(later[2], "INFO", "Tomcat initialized with port 8080 (http)", "webserver", rng, thread="main"),
            voice.event(
                later[4],
                "INFO",
                f"Started {app} in {rng.uniform(6, 25):.3f} seconds (process running for {rng.uniform(7, 27):.3f})",
                "application",
                rng,
                thread="main",
            ),
        ]
    if voice.family == "go":
        return [
            voice.event(
                later[0],
                "INFO",
                "starting server",
                "main",
                rng,
                fields=(("version", f"v1.{rng.randint(0, 40)}.{rng.randint(0, 9)}"), ("addr", ":8080")),
            )
        ]
    if voice.family == "python":
        return [
            voice.event(later[0], "INFO", "Starting gunicorn 21.2.0", "gunicorn.error", rng),
            voice.event(later[1], "INFO", "Listening at: http://0.0.0.0:8000 (1)", "gunicorn.error", rng),
            voice.event(later[2], "INFO", "Booting worker with pid: 7", "gunicorn.error", rng),
        ]
    if voice.family == "postgres":
        return [Event(later[0], "INFO", "database system is ready to accept connections", thread="1")]
    return [Event(later[0], "INFO", "Server started", voice.logger("server"), thread="1")]


def root_events(voice: Voice, world: World, rng: Random, quiet: frozenset[int]) -> list[Event]:
    own, kind, loud = world.own, world.fault.kind, voice.setup.loudness * (0.3 if world.traps.loud_caller else 1)
    rate = world.profiles[voice.name].rate
    if kind == "restarts":  # it crashes at the onset, and again soon after every restart
        crashes = [world.onset] + [
            world.timeline.at(tick) + timedelta(seconds=rng.uniform(5, 12)) for tick in own.restarts
        ]
        return [event for moment in crashes for event in _crash(voice, moment, rng)]
    if kind == "responses":
        if rng.random() < 0.5:
            return []
        first = world.timeline.at(world.fault.start)
        return [
            voice.event(
                first, "INFO", f"Feature flag '{voice.word}.response-v2' is enabled for 100% of requests", "config", rng
            )
        ]
    if kind in ("errors", "disk"):
        rates = [
            loud * min(0.4, 0.03 + errors * rate * 0.005) if errors > 0.001 else 0.0 for errors in own.effect.errors
        ]
    else:
        rates = [loud * 0.04 * r for r in own.intensity]
    events = [_own_line(voice, kind, moment, rng) for _, moment in moments(world, rng, rates, quiet)]
    if kind == "memory" and own.restarts:
        events += _oom(voice, world.timeline.at(min(own.down)) - timedelta(seconds=rng.uniform(1, 5)), rng)
    return events


def _own_line(voice: Voice, kind: str, moment: datetime, rng: Random) -> Event:
    family, ms = voice.family, rng.randint(1200, 9000)
    if family in OWN_LINES:
        lines = OWN_LINES[family]
        level, text, trace = lines.get(kind, lines[""])
        logger = {"mysql": "MY-012639 InnoDB", "kafka": "kafka.server.ReplicaManager"}.get(family, "")
        return Event(moment, level, text.format(ms=ms), logger, str(rng.randint(100, 9999)), trace=trace)
    if kind == "errors":
        return _exception(voice, moment, rng)
    if kind == "disk":
        path = f"/var/lib/{voice.word}/data/{rng.randint(1000, 9999)}.tmp"
        if family == "go":
            return voice.event(
                moment,
                "ERROR",
                "failed to write file",
                "store",
                rng,
                fields=(("error", f"write {path}: no space left on device"),),
            )
        if family == "python":
            return voice.event(
                moment, "ERROR", f"Failed to write {path}: [Errno 28] No space left on device", "storage", rng
            )
        trace = java_trace(
            "java.io.IOException: No space left on device",
            [
                "java.base/java.io.FileOutputStream.writeBytes(Native Method)",
                *java_frames(voice.package, voice.word, rng),
            ],
        )
        return voice.event(moment, "ERROR", f"Failed to write {path}", "storage", rng, trace=trace)
    text = {
        "cpu": f"Request processing took {ms} ms; worker pool saturated (active=200, queued={rng.randint(50, 900)})",
        "memory": f"JVM pause of {rng.randint(300, 3000)} ms detected (heap usage {rng.randint(88, 99)}%)"
        if family == "java"
        else f"memory usage at {rng.randint(88, 99)}% of limit",
        "network": f"Connection reset by peer while writing response ({rng.randint(1, 40)} retransmissions)",
    }[kind]
    return voice.event(moment, "WARN", text, "server", rng)


def _exception(voice: Voice, moment: datetime, rng: Random) -> Event:
    word = camel(voice.word)
    problem = rng.choice(
        (
            f"{word} {rng.randint(10**5, 10**6)} is in state PENDING_REVIEW and cannot be processed",
            f"Rule evaluation for {word} returned null",
            f"Failed to map {word}Dto: currency must not be null",
        )
    )
    if voice.family == "go":
        return voice.event(
            moment,
            "ERROR",
            "request failed",
            "server",
            rng,
            fields=(("error", problem.lower()), ("status", 500)),
            trace=zap_stack(voice.word, rng) if voice.setup.format == "zap" else (),
        )
    if voice.family == "python":
        return voice.event(
            moment,
            "ERROR",
            f"Exception on /api/{voice.word} [POST]",
            "api",
            rng,
            trace=python_trace(voice.word, "result = service.handle(payload)", f"RuntimeError: {problem}", rng),
        )
    trace = java_trace(
        f"java.lang.IllegalStateException: {problem}",
        [*java_frames(voice.package, voice.word, rng), *SPRING_WEB_FRAMES[:4]],
        [
            (
                f'java.lang.NullPointerException: Cannot invoke "{voice.package}.{camel(voice.word)}Rule.apply()" because "rule" is null',
                java_frames(voice.package, voice.word, rng, 2),
            )
        ],
    )
    return voice.event(
        moment,
        "ERROR",
        "Servlet.service() for servlet [dispatcherServlet] threw exception",
        SERVLET_LOGGER,
        rng,
        trace=trace,
    )


def _crash(voice: Voice, moment: datetime, rng: Random) -> list[Event]:
    """A release with a setting it cannot start without."""
    setting = f"{voice.word.upper().replace('-', '_')}_PROVIDER_URL"
    if voice.family == "java":
        trace = java_trace(
            "org.springframework.beans.factory.BeanCreationException: Error creating bean with name 'providerClient'",
            STARTUP_FRAMES,
            [
                (
                    f"java.lang.IllegalArgumentException: Could not resolve placeholder '{setting}' in value \"${{{setting}}}\"",
                    java_frames(voice.package, voice.word, rng, 2),
                )
            ],
        )
        return [voice.event(moment, "ERROR", "Application run failed", "application", rng, trace=trace, thread="main")]
    if voice.family == "go":
        return [
            voice.event(
                moment,
                "ERROR",
                "fatal error during startup",
                "main",
                rng,
                fields=(("error", f"{setting} is not set"),),
                trace=go_panic(voice.word, "runtime error: invalid memory address or nil pointer dereference", rng),
            )
        ]
    if voice.family == "python":
        trace = python_trace(voice.word, f"PROVIDER_URL = os.environ['{setting}']", f"KeyError: '{setting}'", rng)
        return [
            voice.event(moment, "ERROR", "Exception in worker process", "gunicorn.error", rng, trace=trace),
            voice.event(moment, "INFO", "Worker exiting (pid: 7)", "gunicorn.error", rng),
        ]
    if voice.family == "postgres":
        return [Event(moment, "ERROR", 'could not open file "global/pg_filenode.map": Permission denied', thread="1")]
    return [Event(moment, "ERROR", "Fatal error during startup, shutting down", voice.logger("server"), thread="1")]


def _oom(voice: Voice, moment: datetime, rng: Random) -> list[Event]:
    """The last words before the kernel's OOM killer ends the container (a Go service has none)."""
    if voice.family == "java":
        trace = java_trace("java.lang.OutOfMemoryError: Java heap space", java_frames(voice.package, voice.word, rng))
        return [
            voice.event(
                moment,
                "ERROR",
                "Servlet.service() for servlet [dispatcherServlet] threw exception",
                SERVLET_LOGGER,
                rng,
                trace=trace,
            )
        ]
    if voice.family == "python":
        return [
            voice.event(
                moment,
                "ERROR",
                f"Exception on /api/{voice.word} [GET]",
                "api",
                rng,
                trace=python_trace(voice.word, "rows = list(cursor)", "MemoryError", rng),
            )
        ]
    return []
