"""Stack traces as each runtime prints them: Java (with `Caused by:` chains), Python tracebacks,
Go panics and zap's stacktrace field. Application frames are built from the service's own package
and word, framework frames from the libraries such services run on."""

from __future__ import annotations

from collections.abc import Sequence
from random import Random

SPRING_WEB_FRAMES = (
    "org.springframework.web.servlet.FrameworkServlet.processRequest(FrameworkServlet.java:1014)",
    "org.springframework.web.servlet.DispatcherServlet.doDispatch(DispatcherServlet.java:1089)",
    "org.springframework.web.servlet.FrameworkServlet.service(FrameworkServlet.java:885)",
    "jakarta.servlet.http.HttpServlet.service(HttpServlet.java:658)",
    "org.apache.catalina.core.ApplicationFilterChain.doFilter(ApplicationFilterChain.java:166)",
    "org.apache.tomcat.util.threads.ThreadPoolExecutor$Worker.run(ThreadPoolExecutor.java:659)",
    "java.base/java.lang.Thread.run(Thread.java:840)",
)
HTTP_CLIENT_FRAMES = (
    "java.base/sun.nio.ch.NioSocketImpl.timedRead(NioSocketImpl.java:288)",
    "java.base/sun.nio.ch.NioSocketImpl.implRead(NioSocketImpl.java:314)",
    "java.base/java.net.Socket$SocketInputStream.read(Socket.java:1099)",
    "org.apache.hc.core5.http.impl.io.SessionInputBufferImpl.fillBuffer(SessionInputBufferImpl.java:149)",
    "org.springframework.web.client.RestTemplate.doExecute(RestTemplate.java:915)",
)
JDBC_FRAMES = (
    "org.postgresql.core.v3.QueryExecutorImpl.receiveErrorResponse(QueryExecutorImpl.java:2713)",
    "org.postgresql.jdbc.PgPreparedStatement.executeWithFlags(PgPreparedStatement.java:152)",
    "com.zaxxer.hikari.pool.HikariProxyPreparedStatement.executeUpdate(HikariProxyPreparedStatement.java)",
    "org.hibernate.engine.jdbc.internal.ResultSetReturnImpl.executeUpdate(ResultSetReturnImpl.java:194)",
)
STARTUP_FRAMES = (
    "org.springframework.boot.SpringApplication.refreshContext(SpringApplication.java:456)",
    "org.springframework.boot.SpringApplication.run(SpringApplication.java:334)",
)
_METHODS = ("handle", "process", "create", "update", "load", "apply", "resolve", "submit", "lookup", "validate")


def camel(word: str) -> str:
    return "".join(part.capitalize() for part in word.replace("_", "-").split("-"))


def abbreviate(logger: str, width: int = 40) -> str:
    """logback's %logger{40}: leading package names shrink to their first letter, left to right,
    until the name fits; the class name stays whole."""
    parts = logger.split(".")
    for index in range(len(parts) - 1):
        if len(".".join(parts)) <= width:
            break
        parts[index] = parts[index][0]
    return ".".join(parts)


def java_frames(package: str, word: str, rng: Random, depth: int = 3) -> list[str]:
    """Application frames of a Spring service, innermost first."""
    classes = (
        f"{camel(word)}Service",
        f"{camel(word)}Controller",
        f"{camel(word)}Repository",
        f"{camel(word)}Validator",
    )
    frames = []
    for _ in range(depth):
        name = rng.choice(classes)
        frames.append(
            f"{package}.{word.replace('-', '')}.{name}.{rng.choice(_METHODS)}({name}.java:{rng.randint(30, 620)})"
        )
    return frames


def java_trace(
    exception: str,
    frames: Sequence[str],
    causes: Sequence[tuple[str, Sequence[str]]] = (),
) -> tuple[str, ...]:
    """`exception` is "type: message"; each cause is ("type: message", its frames)."""
    lines = [exception, *(f"\tat {frame}" for frame in frames)]
    for depth, (cause, cause_frames) in enumerate(causes):
        lines.append(f"Caused by: {cause}")
        lines.extend(f"\tat {frame}" for frame in cause_frames)
        lines.append(f"\t... {len(frames) + 40 + depth * 3} common frames omitted")
    return tuple(lines)


def python_trace(word: str, call: str, exception: str, rng: Random) -> tuple[str, ...]:
    module = word.replace("-", "_")
    return (
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.11/site-packages/flask/app.py", line 1484, in full_dispatch_request',
        "    rv = self.dispatch_request()",
        f'  File "/app/{module}/views.py", line {rng.randint(20, 300)}, in {rng.choice(_METHODS)}',
        f"    {call}",
        f'  File "/app/{module}/service.py", line {rng.randint(20, 300)}, in {rng.choice(_METHODS)}',
        "    raise",
        exception,
    )


def go_panic(word: str, message: str, rng: Random) -> tuple[str, ...]:
    return (
        f"panic: {message}",
        f"[signal SIGSEGV: segmentation violation code=0x1 addr=0x{rng.randrange(16, 256):x} pc=0x{rng.randrange(0x400000, 0x9FFFFF):x}]",
        "goroutine 1 [running]:",
        f"main.(*{camel(word)}Server).{rng.choice(('loadConfig', 'connect', 'start'))}(0xc000{rng.randrange(0x100000, 0xFFFFFF):06x})",
        f"\t/src/cmd/{word}/main.go:{rng.randint(40, 200)} +0x{rng.randrange(16, 512):x}",
        "main.main()",
        f"\t/src/cmd/{word}/main.go:{rng.randint(20, 40)} +0x{rng.randrange(16, 512):x}",
    )


def zap_stack(word: str, rng: Random) -> tuple[str, ...]:
    return (
        f"{word.replace('-', '')}/internal/server.(*Handler).ServeHTTP",
        f"\t/src/internal/server/handler.go:{rng.randint(40, 300)}",
        "net/http.serverHandler.ServeHTTP",
        "\t/usr/local/go/src/net/http/server.go:3137",
    )
