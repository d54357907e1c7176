"""What client libraries and datastores say when something fails: data, read by `symptoms`.

`FAILURES[(mode, target)][family]` is (named, anonymous) for Java and Python, the first naming the
callee (URL, host, address) and the second not; for Go it is (message, error value), the callee
going to an `upstream=` field when named. Placeholders: {callee} {url} {method} {port} {ip} {detail}.
`DETAILS[target][fault kind]` is what a failing datastore answers its clients; `OWN_LINES[engine]`
what the datastore itself logs, as (level, message, continuation lines).
"""

from __future__ import annotations

from collections.abc import Mapping

Phrases = Mapping[str, tuple[str, str]]

FAILURES: Mapping[tuple[str, str], Phrases] = {
    ("timeout", "http"): {
        "java": (
            'I/O error on {method} request for "{url}": Read timed out',
            "Request processing failed: java.net.SocketTimeoutException: Read timed out",
        ),
        "python": (
            "HTTPConnectionPool(host='{callee}', port={port}): Read timed out. (read timeout=3.0)",
            "upstream call timed out after 3.0s",
        ),
        "go": ("upstream request failed", "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"),
    },
    ("refused", "http"): {
        "java": (
            'I/O error on {method} request for "{url}": Connection refused',
            "Request processing failed: java.net.ConnectException: Connection refused",
        ),
        "python": (
            "HTTPConnectionPool(host='{callee}', port={port}): Max retries exceeded (Caused by NewConnectionError('[Errno 111] Connection refused'))",
            "[Errno 111] Connection refused",
        ),
        "go": ("upstream request failed", "dial tcp {ip}:{port}: connect: connection refused"),
    },
    ("status", "http"): {
        "java": (
            '500 Internal Server Error on {method} request for "{url}"',
            "Request processing failed: 500 Internal Server Error from upstream",
        ),
        "python": ("500 Server Error: Internal Server Error for url: {url}", "upstream returned HTTP 500"),
        "go": ("upstream returned an error", "unexpected status 500"),
    },
    ("parse", "http"): {
        "java": (
            'Failed to read response of {url}: JSON parse error: Cannot deserialize value of type `java.math.BigDecimal` from String "N/A"',
            "Validation failed for response: field 'amount' must not be null",
        ),
        "python": (
            "Invalid response from {url}: could not convert string to float: 'N/A'",
            "KeyError: 'price' in upstream response",
        ),
        "go": (
            "failed to decode response",
            "json: cannot unmarshal string into Go struct field Quote.amount of type float64",
        ),
    },
    ("timeout", "postgres"): {
        "java": (
            "Could not open JDBC Connection for transaction: connection to {callee}:{port} timed out",
            "HikariPool-1 - Connection is not available, request timed out after 30000ms.",
        ),
        "python": (
            '(psycopg2.OperationalError) connection to server at "{callee}" ({ip}), port {port} failed: timeout expired',
            "QueuePool limit of size 5 overflow 10 reached, connection timed out, timeout 30.00",
        ),
        "go": ("query failed", "context deadline exceeded"),
    },
    ("refused", "postgres"): {
        "java": (
            "Connection to {callee}:{port} refused. Check that the hostname and port are correct and that the postmaster is accepting TCP/IP connections.",
            "HikariPool-1 - Connection is not available, request timed out after 30000ms.",
        ),
        "python": (
            '(psycopg2.OperationalError) connection to server at "{callee}" ({ip}), port {port} failed: Connection refused',
            "could not connect to the database",
        ),
        "go": ("query failed", "dial tcp {ip}:{port}: connect: connection refused"),
    },
    ("status", "postgres"): {
        "java": (
            "Query on {url} failed: {detail}",
            "could not execute statement; nested exception is org.postgresql.util.PSQLException: {detail}",
        ),
        "python": (
            "query on {callee} failed: (psycopg2.errors.DatabaseError) {detail}",
            "(psycopg2.errors.DatabaseError) {detail}",
        ),
        "go": ("query failed", "pq: {detail}"),
    },
    ("timeout", "mysql"): {
        "java": (
            "Communications link failure to {url}: The last packet successfully received from the server was 30,012 milliseconds ago.",
            "HikariPool-1 - Connection is not available, request timed out after 30000ms.",
        ),
        "python": (
            "(pymysql.err.OperationalError) (2013, 'Lost connection to MySQL server at {callee}:{port} during query ([Errno 110] Connection timed out)')",
            "(pymysql.err.OperationalError) (2013, 'Lost connection to MySQL server during query')",
        ),
        "go": ("query failed", "invalid connection: i/o timeout"),
    },
    ("refused", "mysql"): {
        "java": (
            "Could not create connection to database server at {url}: Connection refused",
            "Communications link failure: The last packet sent successfully to the server was 0 milliseconds ago.",
        ),
        "python": (
            "(pymysql.err.OperationalError) (2003, \"Can't connect to MySQL server on '{callee}' ([Errno 111] Connection refused)\")",
            '(pymysql.err.OperationalError) (2003, "Can\'t connect to MySQL server")',
        ),
        "go": ("query failed", "dial tcp {ip}:{port}: connect: connection refused"),
    },
    ("status", "mysql"): {
        "java": (
            "Query on {url} failed: java.sql.SQLException: {detail}",
            "could not execute statement; nested exception is java.sql.SQLException: {detail}",
        ),
        "python": (
            "query on {callee} failed: (pymysql.err.OperationalError) {detail}",
            "(pymysql.err.OperationalError) {detail}",
        ),
        "go": ("query failed", "Error: {detail}"),
    },
    ("timeout", "redis"): {
        "java": (
            "Command timed out after 1 second(s) on {callee}:{port}",
            "io.lettuce.core.RedisCommandTimeoutException: Command timed out after 1 second(s)",
        ),
        "python": ("Timeout reading from {callee}:{port}", "Timeout reading from socket"),
        "go": ("cache call failed", "i/o timeout"),
    },
    ("refused", "redis"): {
        "java": ("Unable to connect to {callee}:{port}", "Connection refused: no further information"),
        "python": ("Error 111 connecting to {callee}:{port}. Connection refused.", "Connection refused"),
        "go": ("cache call failed", "dial tcp {ip}:{port}: connect: connection refused"),
    },
    ("status", "redis"): {
        "java": ("Command failed on {callee}:{port}: {detail}", "{detail}"),
        "python": ("{detail} ({callee}:{port})", "{detail}"),
        "go": ("cache call failed", "{detail}"),
    },
    ("timeout", "kafka"): {
        "java": ("Failed to send record to {callee}:{port}: {detail}", "{detail}"),
        "python": (
            "KafkaTimeoutError: Failed to update metadata after 60.0 secs (bootstrap {callee}:{port})",
            "KafkaTimeoutError: Failed to update metadata after 60.0 secs.",
        ),
        "go": ("publish failed", "kafka server: Request exceeded the user-specified time limit in the request"),
    },
    ("refused", "kafka"): {
        "java": (
            "Connection to node -1 ({callee}/{ip}:{port}) could not be established. Broker may not be available.",
            "Bootstrap broker disconnected",
        ),
        "python": ("NoBrokersAvailable (bootstrap {callee}:{port})", "NoBrokersAvailable"),
        "go": ("publish failed", "kafka: client has run out of available brokers to talk to"),
    },
    ("status", "kafka"): {
        "java": ("Failed to send record to {callee}:{port}: {detail}", "{detail}"),
        "python": ("KafkaError from {callee}: {detail}", "KafkaError: {detail}"),
        "go": ("publish failed", "{detail}"),
    },
    ("timeout", "rabbitmq"): {
        "java": (
            "Publish to {callee}:{port} timed out: org.springframework.amqp.AmqpTimeoutException",
            "org.springframework.amqp.AmqpTimeoutException: java.util.concurrent.TimeoutException",
        ),
        "python": ("AMQPConnectionError: timed out connecting to {callee}:{port}", "AMQPConnectionError: timed out"),
        "go": ("publish failed", "amqp: i/o timeout"),
    },
    ("refused", "rabbitmq"): {
        "java": (
            "Attempting to connect to: [{callee}:{port}] failed: Connection refused",
            "org.springframework.amqp.AmqpConnectException: java.net.ConnectException: Connection refused",
        ),
        "python": (
            "AMQPConnectionError: [Errno 111] Connection refused ({callee}:{port})",
            "AMQPConnectionError: [Errno 111] Connection refused",
        ),
        "go": ("publish failed", "dial tcp {ip}:{port}: connect: connection refused"),
    },
    ("status", "rabbitmq"): {
        "java": ("Publish to {callee}:{port} failed: {detail}", "{detail}"),
        "python": ("{detail} ({callee})", "{detail}"),
        "go": ("publish failed", "{detail}"),
    },
}
# The target a callee is for its clients: its engine, or "http" for an application service.
ENGINE_TARGETS = {
    "postgres": "postgres",
    "mysql": "mysql",
    "redis": "redis",
    "valkey": "redis",
    "memcached": "redis",
    "kafka": "kafka",
    "rabbitmq": "rabbitmq",
}

DETAILS: Mapping[str, Mapping[str, str]] = {
    "postgres": {
        "disk": 'ERROR: could not extend file "base/16384/2619": No space left on device',
        "errors": "ERROR: deadlock detected",
        "": "ERROR: canceling statement due to statement timeout",
    },
    "mysql": {
        "disk": "(1021, 'Disk full (/var/lib/mysql/#sql-ib1284); waiting for someone to free some space... (errno: 28 - No space left on device)')",
        "errors": "(1213, 'Deadlock found when trying to get lock; try restarting transaction')",
        "": "(1205, 'Lock wait timeout exceeded; try restarting transaction')",
    },
    "redis": {
        "disk": "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.",
        "errors": "ERR Error running script",
        "": "LOADING Redis is loading the dataset in memory",
    },
    "kafka": {
        "disk": "org.apache.kafka.common.errors.KafkaStorageException: Disk error when trying to access log file on the disk.",
        "errors": "org.apache.kafka.common.errors.NotLeaderOrFollowerException: this server is not the leader for that topic-partition",
        "": "org.apache.kafka.common.errors.TimeoutException: Expiring 12 record(s) for orders-3: 120000 ms has passed since batch creation",
    },
    "rabbitmq": {
        "disk": "connection blocked by the broker: low on disk space",
        "errors": "channel error; protocol method: #method<channel.close>(reply-code=541, reply-text=INTERNAL_ERROR)",
        "": "channel error; protocol method: #method<channel.close>(reply-code=406, reply-text=PRECONDITION_FAILED)",
    },
}

JAVA_EXCEPTIONS = {
    "timeout": "java.net.SocketTimeoutException: Read timed out",
    "refused": "java.net.ConnectException: Connection refused",
    "status": "org.springframework.web.client.HttpServerErrorException$InternalServerError: 500 Internal Server Error",
    "parse": 'com.fasterxml.jackson.databind.exc.InvalidFormatException: Cannot deserialize value of type `java.math.BigDecimal` from String "N/A"',
}

OWN_LINES: Mapping[str, Mapping[str, tuple[str, str, tuple[str, ...]]]] = {
    "postgres": {
        "disk": (
            "ERROR",
            'could not extend file "base/16384/2619": No space left on device',
            ("HINT:  Check free disk space.",),
        ),
        "errors": (
            "ERROR",
            "deadlock detected",
            ("DETAIL:  Process 4172 waits for ShareLock on transaction 98122; blocked by process 4170.",),
        ),
        "": ("INFO", "duration: {ms}.214 ms  statement: UPDATE stock SET qty = qty - 1 WHERE sku = $1", ()),
    },
    "mysql": {
        "disk": (
            "ERROR",
            "Write to file ./ibdata1 failed at offset 1048576, 16384 bytes should have been written, only 0 were written. Operating system error number 28.",
            (),
        ),
        "errors": ("ERROR", "Transactions deadlock detected, dumping detailed information.", ()),
        "": ("WARN", "Slow query: {ms} ms for SELECT on the largest table", ()),
    },
    "kafka": {
        "disk": (
            "ERROR",
            "Error while appending records to orders-3 in dir /var/lib/kafka/data",
            (
                "java.io.IOException: No space left on device",
                "\tat java.base/sun.nio.ch.FileDispatcherImpl.write0(Native Method)",
            ),
        ),
        "errors": (
            "ERROR",
            "[ReplicaManager broker=1] Error processing append operation on partition orders-3",
            ("org.apache.kafka.common.errors.CorruptRecordException: Record is corrupt",),
        ),
        "": (
            "WARN",
            "[ReplicaFetcher replicaId=1, leaderId=2, fetcherId=0] Error in response for fetch request after {ms} ms",
            (),
        ),
    },
    "rabbitmq": {
        "disk": (
            "ERROR",
            "disk resource limit alarm set on node rabbit@rabbitmq-0. **** Publishers will be blocked until this alarm clears ****",
            (),
        ),
        "errors": (
            "ERROR",
            "Channel error on connection <0.812.0>: operation basic.publish caused a channel exception internal_error",
            (),
        ),
        "": ("WARN", "closing AMQP connection <0.812.0>: missed heartbeats from client, timeout: 60s ({ms} ms)", ()),
    },
}
