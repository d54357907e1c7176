"""The offline engine searches for what the question scope names (issue 10), seen from its answers: each
question runs through the whole chain (`evcli ask --json`) on the packaged host environment or a small
snapshot written here, and each test asserts what the answer states and what its claims cite (the cited
search's service, keywords, level and range), never the calls the engine made to get there.

`holds` (whether a line holds a status class) is a pure function and is tested as one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evcli.agents.offline.claims import holds
from tests.agents.asked import (
    Answer,
    ask,
    keywords_of,
    level_of,
    logback,
    range_of,
    service_of,
    write_env,
)

HOST = "host"  # packaged: one Linux host, 2026-03-18 08:00-09:30 Europe/Berlin
_DAY = "2026-05-01"
_CLOCK = 'timezone = "UTC"\nnow = "2026-05-01T10:00:00Z"\n'


def _line(at: str, severity: str, logger: str, message: str) -> str:
    return logback(_DAY, at, severity, logger, message)


def _shop(root: Path) -> Path:
    """'Connection reset by peer' in two logs (gateway WARN; orders WARN, ERROR, and INFO newest of all); one
    deadlock, in orders."""
    gateway = [
        _line("09:10:00", "INFO", "c.e.Gateway", "route table loaded"),
        _line("09:20:00", "WARN", "c.e.Gateway", "upstream read failed: Connection reset by peer"),
    ]
    orders = [
        _line("09:02:00", "INFO", "c.e.Orders", "order ORD-1 placed"),
        _line("09:05:00", "WARN", "c.e.Orders", "retrying payment after Connection reset by peer"),
        _line("09:12:00", "ERROR", "c.e.Orders", "capture failed: deadlock detected on table payments"),
        _line("09:30:00", "ERROR", "c.e.Orders", "db read failed: Connection reset by peer"),
        _line("09:40:00", "INFO", "c.e.Orders", "pool recovered after Connection reset by peer"),
    ]
    files = {"env.toml": _CLOCK, "logs/gateway.log": "".join(gateway), "logs/orders.log": "".join(orders)}
    return write_env(root, files)


def _edge(root: Path) -> Path:
    """edge: three 'upstream timed out' errors, then 25 newer warnings (more than an overview returns); portal:
    a session created every 4 minutes, 8 of them expired."""
    edge = [
        _line(f"09:0{m}:00", "ERROR", "c.e.Edge", f"upstream timed out (110: Connection timed out) reading /api/{m}")
        for m in range(3)
    ]
    edge += [
        _line(f"09:{10 + m:02d}:00", "WARN", "c.e.Edge", f"slow response from backend: {900 + m} ms") for m in range(25)
    ]
    portal = []
    for minute in range(0, 60, 4):
        portal.append(_line(f"09:{minute:02d}:10", "INFO", "c.e.Portal", f"session created for user u{minute}"))
        if minute % 8 == 0:
            portal.append(_line(f"09:{minute:02d}:30", "INFO", "c.e.Portal", f"session expired for user u{minute}"))
    return write_env(root, {"env.toml": _CLOCK, "logs/edge.log": "".join(edge), "logs/portal.log": "".join(portal)})


def _alert(name: str, service: str, starts: str, ends: str, state: str, inhibited_by: list[str]) -> dict:
    return {
        "labels": {"alertname": name, "service": service, "severity": "warning"},
        "annotations": {"summary": name},
        "startsAt": starts,
        "endsAt": ends,
        "fingerprint": name,
        "status": {"state": state, "silencedBy": [], "inhibitedBy": inhibited_by},
    }


def _alerting(root: Path) -> Path:
    """nginx's HighHTTP401Rate inhibited now; checkout's CheckoutErrors fired and resolved at 07:10-07:40;
    billing has no alert, one error at 07:30."""
    alerts = [
        _alert("HighHTTP401Rate", "nginx", f"{_DAY}T09:30:00Z", f"{_DAY}T10:30:00Z", "suppressed", ["edge-down"]),
        _alert("CheckoutErrors", "checkout", f"{_DAY}T07:10:00Z", f"{_DAY}T07:40:00Z", "active", []),
    ]
    checkout = [
        _line("07:15:00", "ERROR", "c.e.Checkout", "payment gateway unreachable"),
        _line("09:50:00", "INFO", "c.e.Checkout", "checkout ok"),
    ]
    billing = [
        _line("07:30:00", "ERROR", "c.e.Billing", "invoice run aborted: ledger locked"),
        _line("09:55:00", "INFO", "c.e.Billing", "invoice run ok"),
    ]
    files = {
        "env.toml": _CLOCK,
        "alerts.json": json.dumps(alerts),
        "logs/nginx.log": _line("09:31:00", "WARN", "c.e.Nginx", "401 on POST /login"),
        "logs/checkout.log": "".join(checkout),
        "logs/billing.log": "".join(billing),
    }
    return write_env(root, files)


def _pay(root: Path) -> Path:
    """payment-service's log writes 'thread pool' (INFO, under newer warnings), only user-service's 'slow'."""
    payment = [
        _line(f"09:0{m}:00", "INFO", "c.e.Pay", f"thread pool saturated: active=200 queued={m}") for m in range(3)
    ]
    payment += [_line(f"09:1{m}:00", "WARN", "c.e.Pay", f"capture retried for ORD-{m}") for m in range(3)]
    user = [_line(f"09:0{m}:00", "WARN", "c.e.User", f"slow query on users table: {m} s") for m in range(5)]
    files = {"env.toml": _CLOCK, "logs/payment-service.log": "".join(payment), "logs/user-service.log": "".join(user)}
    return write_env(root, files)


def _firewall(root: Path) -> Path:
    """One syslog of two hosts: app-02's ufw blocks 198.51.100.7 4 times and 203.0.113.9 twice, app-03's
    192.0.2.99 5 times; app-02 also accepts 6 logins from 10.0.0.12."""
    lines, minute = [], 0
    for host, source, times in (
        ("app-02", "198.51.100.7", 4),
        ("app-02", "203.0.113.9", 2),
        ("app-03", "192.0.2.99", 5),
    ):
        for _ in range(times):
            lines.append(
                f"Jun  4 14:{minute:02d}:01 {host} kernel: [1234.5] [UFW BLOCK] IN=eth0 OUT= SRC={source} "
                "DST=10.0.0.2 LEN=40 PROTO=TCP DPT=22\n"
            )
            minute += 1
    for pid in range(6):
        lines.append(f"Jun  4 14:{minute:02d}:05 app-02 sshd[90{pid}]: Accepted password for deploy from 10.0.0.12\n")
        minute += 1
    return write_env(
        root, {"env.toml": 'timezone = "UTC"\nnow = "2026-06-04T15:00:00Z"\n', "logs/syslog.log": "".join(lines)}
    )


_ENVS = {"shop": _shop, "edge": _edge, "alerting": _alerting, "pay": _pay, "firewall": _firewall}


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("envs")
    return {name: build(root / name) for name, build in _ENVS.items()}


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    """One trace store for the module's questions (each is its own session)."""
    return tmp_path_factory.mktemp("asked") / "evcli.db"


def _quoted(answer: Answer) -> list[dict]:
    """The claims quoting a log line ("SERVICE logged …")."""
    return [claim for claim in answer.claims if " logged " in claim["claim_text"]]


# --- phrases and tokens, verbatim and together --------------------------------------------------------------


def test_tokens_asked_together_are_counted_together_in_the_named_service_and_the_asked_range(db):
    """nginx holds 30 lines with 401, 27 of them from 10.20.30.40, 15 of those between 09:00 and 09:10."""
    counted = ask("how many 401s from 10.20.30.40 on nginx between 09:00 and 09:10?", HOST, db)
    assert counted.verdict == "PASS"
    count = counted.claim("Counted 15 matching lines")
    assert [evidence["raw_path"] for evidence in count["evidence"]] == ["$.stats"]
    search = counted.search(count)
    assert search.tool_name == "query_logs" and service_of(search) == "nginx"
    assert keywords_of(search) == {"401", "10.20.30.40"} and level_of(search) is None  # verbatim, every level
    assert range_of(search) == "2026-03-18T09:00:00+01:00..2026-03-18T09:10:00+01:00"
    # asked to confirm, not to count: the line it quotes is one of them, from the same search
    confirmed = ask("did 10.20.30.40 get any 401 on nginx between 09:00 and 09:10?", HOST, db)
    assert confirmed.verdict == "PASS"
    [line] = confirmed.claims
    assert line["claim_text"].startswith("nginx logged WARN (level derived from the status code) at 2026-03-18T09:0")
    assert '"POST /api/login HTTP/1.1" 401' in line["claim_text"]
    search = confirmed.search(line)
    assert (service_of(search), keywords_of(search), level_of(search)) == ("nginx", {"401", "10.20.30.40"}, None)
    assert range_of(search) == "2026-03-18T09:00:00+01:00..2026-03-18T09:10:00+01:00"


def test_tokens_of_a_question_naming_no_service_are_counted_in_the_log_that_holds_them_all(db):
    found = ask("How many 401s came from 10.20.30.40?", HOST, db)
    count = found.claim("Counted 27 matching lines")  # grep '10.20.30.40.* 401 ' nginx.log
    search = found.search(count)
    assert (service_of(search), keywords_of(search)) == ("nginx", {"401", "10.20.30.40"})
    # no log holds both: every log was searched for them together, and that search is the answer
    nowhere = ask("any 401 from 10.9.9.9?", HOST, db)
    assert nowhere.verdict == "PASS"
    [negative] = nowhere.claims
    assert negative["claim_type"] == "negative_observation" and "total=0" in negative["claim_text"]
    assert [evidence["raw_path"] for evidence in negative["evidence"]] == ["$.no_evidence"]
    search = nowhere.search(negative)
    assert search.tool_name == "query_logs" and service_of(search) is None
    assert keywords_of(search) == {"401", "10.9.9.9"}


def test_a_quoted_phrase_naming_no_service_is_found_in_every_log_that_writes_it(db, env):
    said = ask("did any log say 'Connection reset by peer'?", env["shop"], db)
    assert said.verdict == "PASS"
    quoted = _quoted(said)
    assert {claim["claim_text"].split(" logged ")[0] for claim in quoted} == {"orders", "gateway"}
    assert all("Connection reset by peer" in claim["claim_text"] for claim in quoted)
    assert all(keywords_of(said.search(claim)) == {"Connection reset by peer"} for claim in quoted)
    # a level asked filters: the warnings, not the newer INFO line or the error
    warned = ask("any warnings with 'Connection reset by peer'?", env["shop"], db)
    quoted = _quoted(warned)
    assert {claim["claim_text"].split(" logged ")[0] for claim in quoted} == {"orders", "gateway"}
    assert all(" logged WARN at " in claim["claim_text"] for claim in quoted), warned.texts()
    assert all(level_of(warned.search(claim)) == "WARN" for claim in quoted)


def test_a_broad_task_quotes_the_asked_phrase_besides_the_newest_warnings(db, env):
    """The 'upstream timed out' errors are older than the 20 warnings an overview of edge returns."""
    answer = ask("why is edge slow? 'upstream timed out'", env["edge"], db)
    assert answer.verdict == "PASS"
    phrase = answer.claim("edge logged ERROR at ", "upstream timed out")
    search = answer.search(phrase)
    assert (service_of(search), keywords_of(search)) == ("edge", {"upstream timed out"})
    warning = answer.claim("edge logged WARN at ", "slow response from backend")
    assert service_of(answer.search(warning)) == "edge"


@pytest.mark.parametrize("question", ["nginx 5xx?", "did nginx return any 5xx?"])  # broad, and narrow
def test_a_status_class_is_answered_by_the_lines_of_its_statuses(db, question):
    """ "5xx" is written in no log: nginx's 502 lines (ERROR, the level their status implies) answer it, also in
    a narrow task (whose guard refuses any search after the verbatim one found nothing), and only those."""
    answer = ask(question, HOST, db)
    line = answer.claim("nginx logged ERROR (level derived from the status code)", '"POST /api/orders HTTP/1.1" 502')
    search = answer.search(line)
    assert (search.tool_name, service_of(search), level_of(search)) == ("query_logs", "nginx", "ERROR")
    assert not any('" 200 ' in text for text in answer.texts())  # a line of another status is no 5xx


def test_a_status_class_holds_a_status_of_its_class_but_not_a_version():
    assert holds('"POST /api/orders HTTP/1.1" 502 157', "5xx")
    assert not holds('"GET / HTTP/1.1" 200 12 "Mozilla AppleWebKit/537.36"', "5xx")
    assert holds("Invalid user oracle from 1.2.3.4", "invalid USER oracle")


@pytest.mark.parametrize(
    "line",
    ["INFO order ORD-7 placed by OrderServiceImpl#548", "\tat com.example.shop.Foo.bar(Foo.java:503)",
     "INFO config read at Foo.java:500", "INFO unexpected token at line 502", "INFO listening on port 5003",
     "INFO user id=5001 logged in", "INFO processed batch of 500 records"],
)  # fmt: skip
def test_a_status_class_holds_no_number_that_is_not_written_as_a_status(line):
    assert not holds(line, "5xx")


def test_a_status_class_holds_a_status_of_its_class_written_with_its_context():
    assert holds("WARN checkout: shop-api returned 503", "5xx") and not holds("WARN shop-api returned 503", "4xx")
    assert holds("GET /cart status=404 took 3ms", "4xx") and not holds("GET /cart status=404 took 3ms", "5xx")


# --- content words -------------------------------------------------------------------------------------------


def test_a_content_word_is_searched_in_the_log_that_writes_it(db, env):
    """ "confirm" and "API" are no words of any log: the deadlock line answers, not a search for all three."""
    answer = ask("Only confirm whether the API logged any deadlock.", env["shop"], db)
    assert answer.verdict == "PASS"
    [line] = answer.claims
    assert line["claim_text"] == "orders logged ERROR at 2026-05-01T09:12:00.000+00:00: " + (
        "capture failed: deadlock detected on table payments"
    )
    assert (service_of(answer.search(line)), keywords_of(answer.search(line))) == ("orders", {"deadlock"})


def test_a_broad_task_searches_the_word_its_service_writes_not_a_word_another_log_writes(db, env):
    answer = ask("why is payment-service slow? thread pool full?", env["pay"], db)
    assert answer.verdict == "PASS"
    line = answer.claim("payment-service logged INFO at ", "thread pool saturated")
    assert service_of(answer.search(line)) == "payment-service"
    assert not any("slow query" in text or "user-service" in text for text in answer.texts()), answer.texts()


def test_words_asked_together_are_counted_together_across_a_word_no_log_holds(db):
    """ "failed password attempts for root": no log says "attempts"; auth.log holds 27 lines naming root and
    42 failed passwords, 9 of them root's (the first at 09:14:31)."""
    counted = ask("how many failed password attempts for root?", HOST, db)
    count = counted.claim("Counted 9 matching lines")
    assert {"root", "password", "failed"} <= {word.lower() for word in keywords_of(counted.search(count))}
    when = ask("when did the failed password attempts for root start?", HOST, db)
    first = when.claims[0]
    assert first["claim_text"].startswith("Matching lines: first at 2026-03-18T09:14:31.000+01:00"), first
    assert "9 matching lines" in first["claim_text"]
    assert [evidence["raw_path"] for evidence in first["evidence"]] == ["$.stats"]


def test_a_count_counts_the_words_asked_together_and_a_relative_range_is_searched_as_asked(db, env):
    """portal writes 'session' 23 times, 'session expired' 8 times (09:56:30 the last, in the last 20 minutes)."""
    counted = ask("how many session expired in portal?", env["edge"], db)
    count = counted.claim("Counted 8 matching lines")
    assert (service_of(counted.search(count)), keywords_of(counted.search(count))) == ("portal", {"session", "expired"})
    recent = ask("portal 最近 20 分钟 session expired?", env["edge"], db)
    line = recent.claim("portal 在 2026-05-01T09:56:30.000+00:00 记录了 INFO 日志：session expired for user u56")
    search = recent.search(line)
    assert service_of(search) == "portal"
    assert range_of(search) == "2026-05-01T09:40:00+00:00..2026-05-01T10:00:00+00:00"


def test_a_which_question_counts_its_words_together_with_the_host_across_cue_words(db, env):
    """ "which IP is ufw blocking most on app-02": ufw, block (written "blocking") and app-02 are counted
    together: not app-03's blocks, not app-02's logins."""
    answer = ask("which IP is ufw blocking most on app-02", env["firewall"], db)
    assert answer.verdict == "PASS"
    first = answer.claims[0]
    assert first["claim_text"].startswith("Matching lines per address: 198.51.100.7 4, 203.0.113.9 2;"), first
    assert [evidence["raw_path"] for evidence in first["evidence"]] == ["$.stats"]


# --- services the environment does not know --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "tool", "name", "asked", "said"),
    [
        ("Does payments-v3 have any ERROR logs?", "query_logs", "payments-v3", {"level": "ERROR"}, "'payments-v3'"),
        ("shop-api-v2 有没有 502？", "query_logs", "shop-api-v2", {"keywords": {"502"}}, "close names: shop-api"),
        ("is web-02 out of disk?", "query_metrics", "web-02", {}, "close names: web-01"),  # no log word: its series
        # the other words written stay asked of the unknown name, whatever words the known logs hold
        (
            "show ledger-service errors about kafka",
            "query_logs",
            "ledger-service",
            {"level": "ERROR", "keywords": {"kafka"}},
            "unknown service 'ledger-service'",
        ),
        ("ledger-service 连接 kafka 超时", "query_logs", "ledger-service", {"keywords": {"kafka"}}, "'ledger-service'"),
        # a word and the stem the logs write ("timeouts", "timeout") are asked once, by the stem
        (
            "did ledger-service log timeouts?",
            "query_logs",
            "ledger-service",
            {"keywords": {"timeout"}},
            "'ledger-service'",
        ),
        (
            'ledger-service 有没有 "connection refused" 的 kafka 报错？',
            "query_logs",
            "ledger-service",
            {"level": "ERROR", "keywords": {"connection refused", "kafka"}},
            "'ledger-service'",
        ),
    ],
)
def test_a_service_the_environment_does_not_know_is_asked_what_the_question_asks_and_nothing_else(
    db, question, tool, name, asked, said
):
    answer = ask(question, HOST, db)
    assert answer.verdict == "PASS"
    [negative] = answer.claims  # nothing else searched instead
    assert negative["claim_type"] == "negative_observation" and said in negative["claim_text"]
    search = answer.search(negative)
    assert (search.tool_name, service_of(search)) == (tool, name)
    if "level" in asked:
        assert level_of(search) == asked["level"]
    if "keywords" in asked:
        assert keywords_of(search) == asked["keywords"]


# --- alerts and their states ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "where", "said"),
    [
        ("is HighHTTP401Rate firing on nginx?", "alerting", "nginx has a suppressed HighHTTP401Rate alert"),
        ("Is ZooKeeperDown still firing?", HOST, "zookeeper has a resolved ZooKeeperDown alert"),
    ],
)
def test_an_alert_asked_in_a_state_is_answered_in_the_state_it_is_in(db, env, question, where, said):
    answer = ask(question, env.get(where, where), db)
    assert answer.verdict == "PASS"
    [claim] = answer.claims
    assert claim["claim_text"].startswith(said), claim
    assert claim["evidence"][0]["raw_path"].startswith("$.alerts[")
    assert answer.search(claim).tool_name == "query_metrics"


def test_a_service_asked_about_in_a_range_is_answered_by_its_alerts_in_any_state_and_its_errors_there(db, env):
    morning = "2026-05-01T06:00:00+00:00..2026-05-01T10:00:00+00:00"
    resolved = ask("was checkout down this morning?", env["alerting"], db)
    alert = resolved.claim("checkout has a resolved CheckoutErrors alert")
    assert range_of(resolved.search(alert)) == morning
    errors = ask("was billing down this morning?", env["alerting"], db)  # no alert: its errors in the range say
    line = errors.claim("billing logged ERROR at 2026-05-01T07:30:00.000+00:00: invoice run aborted")
    search = errors.search(line)
    assert (service_of(search), level_of(search), range_of(search)) == ("billing", "ERROR", morning)
    # asked of now, an alert that resolved hours ago is not its state; its errors are quoted
    now = ask("is checkout down?", env["alerting"], db)
    assert not any("CheckoutErrors" in text for text in now.texts()), now.texts()
    now.claim("checkout logged ERROR at 2026-05-01T07:15:00.000+00:00: payment gateway unreachable")


def test_an_alert_named_with_a_range_is_answered_by_what_it_was_then(db):
    """'was zookeeper down this morning?' names the alert ZooKeeperDown: it fired and resolved this morning, so
    that is the answer, read over the morning, not 'no evidence' because it does not fire now."""
    answer = ask("was zookeeper down this morning?", HOST, db)
    assert answer.verdict == "PASS"
    claim = answer.claim("zookeeper has a resolved ZooKeeperDown alert")
    search = answer.search(claim)
    assert search.input_params["alertname"] == "ZooKeeperDown" and search.input_params["state"] == "any"
    assert range_of(search) == "2026-03-18T06:00:00+01:00..2026-03-18T09:30:00+01:00"
    assert not any(c["claim_type"] == "negative_observation" for c in answer.claims)


def test_with_no_state_asked_the_firing_alerts_are_read(db):
    """host: SSHBruteForce and HighHTTP401Rate fire, ZooKeeperDown resolved, DiskSpaceLow is silenced."""
    answer = ask("How is the system doing?", HOST, db)
    alerts = [text for text in answer.texts() if " alert" in text and " has a " in text]
    assert {text.split(" alert")[0] for text in alerts} == {
        "auth has a firing SSHBruteForce",
        "nginx has a firing HighHTTP401Rate",
    }


# --- levels and ranges ----------------------------------------------------------------------------------------


def test_warnings_asked_are_quoted_from_the_asked_range_though_newer_errors_fill_the_overview(db):
    """shop-api's newest lines in 09:00-09:30 are errors: its warnings there are still what the answer quotes."""
    answer = ask("shop-api 9点到9点半有哪些警告？", HOST, db)
    first = answer.claim("记录了 WARN 日志", "ZooKeeper connection state SUSPENDED")
    search = answer.search(first)
    assert (service_of(search), level_of(search)) == ("shop-api", "WARN")
    assert range_of(search) == "2026-03-18T09:00:00+01:00..2026-03-18T09:30:00+01:00"


def test_a_range_without_warnings_is_answered_by_its_ordinary_lines(db):
    """zookeeper logged no warning in the last 10 minutes, two INFO lines."""
    answer = ask("anything on zookeeper in the last 10 minutes?", HOST, db)
    line = answer.claim("zookeeper logged INFO at 2026-03-18T09:26:25.785+01:00: Established session")
    search = answer.search(line)
    assert (service_of(search), level_of(search)) == ("zookeeper", None)
    assert range_of(search) == "2026-03-18T09:20:00+01:00..2026-03-18T09:30:00+01:00"
