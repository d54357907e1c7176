from __future__ import annotations

import pytest

from evcli.agents.intent import Intent, detect_language, extract_intent, extract_window

SERVICES = ["inventory-service", "node-worker-01", "order-service", "payment-service", "user-service"]
ALIASES = {
    "payment": "payment-service",
    "payments": "payment-service",
    "支付服务": "payment-service",
    "order": "order-service",
    "orders": "order-service",
    "订单服务": "order-service",
    "user": "user-service",
    "users": "user-service",
    "用户服务": "user-service",
    "inventory": "inventory-service",
    "库存服务": "inventory-service",
    "worker-01": "node-worker-01",
    "node-01": "node-worker-01",
}
ALERTNAMES = ["DiskSpaceLow", "HighCPUUsage", "HighErrorRate", "HighMemoryUsage", "SlowResponse"]


def intent_of(question: str) -> Intent:
    return extract_intent(question, services=SERVICES, aliases=ALIASES, alertnames=ALERTNAMES)


# question, language, narrow, services, alertnames, first terms (prefix of intent.terms), window.
# Terms are the question's own words and glossary mappings since issue 10 removed the fixed
# synonym table (no more HikariCP → Hikari, restart → OOMKilled, memory → heap expansions).
CASES = [
    (
        "Only confirm whether payment-service currently has a HighCPUUsage alert firing.",
        "en",
        True,
        ("payment-service",),
        ("HighCPUUsage",),
        (),
        None,
    ),
    (
        "只确认 inventory-service 是否存在 HikariCP 连接池耗尽日志。",
        "zh",
        True,
        ("inventory-service",),
        (),
        ("HikariCP", "pool"),
        None,
    ),
    (
        "Why is order-service failing? It keeps restarting and checkout requests time out.",
        "en",
        False,
        ("order-service",),
        (),
        ("failing", "restarting", "checkout", "requests", "timeout"),
        None,
    ),
    ("为什么订单服务最近1小时一直重启？", "zh", False, ("order-service",), (), ("restart",), "1h"),
    (
        "Is there a high cpu usage alert on the payment service in the last 30 minutes?",
        "en",
        True,
        ("payment-service",),
        ("HighCPUUsage",),
        (),
        "30m",
    ),
    ("过去30分钟 支付服务 是否有 Redis 超时日志？", "zh", True, ("payment-service",), (), ("Redis", "timeout"), "30m"),
    (
        "What's wrong with user-service? p99 latency is above 4s in the past hour",
        "en",
        False,
        ("user-service",),
        (),
        ("p99", "latency"),
        "1h",
    ),
    (
        "Does inventory have any OutOfMemoryError in the past half hour?",
        "en",
        True,
        ("inventory-service",),
        (),
        ("OutOfMemoryError",),
        "30m",
    ),
    (
        "Just confirm whether order ORD-7188072 shows up in order-service logs",
        "en",
        True,
        ("order-service",),
        (),
        ("ORD-7188072",),
        None,
    ),
    ("最近半小时 node-worker-01 的磁盘为什么满了", "zh", False, ("node-worker-01",), (), ("disk",), "30m"),
    ("Check whether KafkaConsumerLagHigh is firing", "en", True, (), ("KafkaConsumerLagHigh",), (), None),
    ("确认一下 worker-01 是否有 DiskSpaceLow 告警", "zh", True, ("node-worker-01",), ("DiskSpaceLow",), (), None),
    ("Diagnose the slow query problem on users", "en", False, ("user-service",), (), ("slow", "query"), None),
    ("Is RiskScoreCalculator in payment logs?", "en", True, ("payment-service",), (), ("RiskScoreCalculator",), None),
    (
        "Root cause of the Full GC storms on order_service over the last 2 hours?",
        "en",
        False,
        ("order-service",),
        (),
        ("Full", "GC"),
        "2h",
    ),
    (
        "排查一下 库存服务 和 支付服务 的内存问题",
        "zh",
        False,
        ("inventory-service", "payment-service"),
        (),
        ("memory",),
        None,
    ),
    ("有没有 HikariPool 报错？最近两个小时", "zh", True, (), (), ("HikariPool",), "2h"),
    ("只查 order-service 近 90 分钟的 OOMKilled 记录", "zh", True, ("order-service",), (), ("OOMKilled",), "90m"),
    (
        "payment-service SlowResponse and HighErrorRate: what caused them?",
        "en",
        False,
        ("payment-service",),
        ("SlowResponse", "HighErrorRate"),
        (),
        None,
    ),
    (
        "Are there deadlock errors in orders within the last 15 minutes?",
        "en",
        True,
        ("order-service",),
        (),
        ("deadlock",),
        "15m",
    ),
    ("诊断 user-service 慢查询，过去一天", "zh", False, ("user-service",), (), ("slow query",), "1d"),
    (
        'Only check if user-service logged "Query timeout on mysql-primary-01"',
        "en",
        True,
        ("user-service",),
        (),
        ("Query timeout on mysql-primary-01",),
        None,
    ),
    ("Is user-service slow? Why?", "en", False, ("user-service",), (), (), None),
    (
        "Is redis-cluster-01:6379 timing out for payments?",
        "en",
        True,
        ("payment-service",),
        (),
        ("redis-cluster-01:6379",),
        None,
    ),
]


@pytest.mark.parametrize(("question", "language", "narrow", "services", "alertnames", "terms", "window"), CASES)
def test_extract_intent(question, language, narrow, services, alertnames, terms, window):
    intent = intent_of(question)
    assert intent.language == language
    assert intent.narrow is narrow
    assert intent.services == services
    assert intent.alertnames == alertnames
    assert intent.terms[: len(terms)] == terms
    assert intent.window == window


def test_broad_cue_wins_over_narrow_cue():
    intent = intent_of("Is there a reason why payment-service has a HighCPUUsage alert?")
    assert intent.narrow is False
    assert intent_of("是否存在 HighCPUUsage 告警？原因是什么").narrow is False


def test_service_and_alias_of_the_same_service_count_once():
    assert intent_of("payment-service (payment, 支付服务) is slow").services == ("payment-service",)


def test_alias_is_a_whole_word_only():
    # "ordering" and "usersettings" are not the aliases "order" and "users".
    assert intent_of("Why is the ordering of usersettings wrong?").services == ()


def test_service_next_to_cjk_text_is_found():
    assert intent_of("支付服务的CPU为什么高").services == ("payment-service",)
    assert intent_of("payment-service的CPU为什么高").services == ("payment-service",)


def test_component_camelcase_words_are_terms_not_alerts():
    intent = intent_of("Why does order-service log HikariCP and OutOfMemoryError and MySQL errors?")
    assert intent.alertnames == ()
    assert set(intent.terms[:3]) == {"HikariCP", "OutOfMemoryError", "MySQL"}


def test_services_unknown_to_the_backend_are_taken_by_shape():
    intent = extract_intent("Why is checkout-service slow?", services=[], aliases={}, alertnames=[])
    assert intent.services == ("checkout-service",)


def test_terms_never_repeat_services_or_alerts():
    intent = intent_of("Why is HighMemoryUsage firing on order-service with OOMKilled restarts?")
    lowered = [term.lower() for term in intent.terms]
    assert "order-service" not in lowered and "highmemoryusage" not in lowered
    assert len(lowered) == len(set(lowered))


@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("in the last 45 minutes", "45m"),
        ("over the past 24 hours", "24h"),
        ("last 60 minutes", "1h"),
        ("in the last 2h", "2h"),
        ("the past day", "1d"),
        ("last few minutes", None),
        ("the last deployment", None),
        ("最近十五分钟", "15m"),
        ("过去二十分钟", "20m"),
        ("1小时内", "1h"),
        ("最近的日志", None),
        ("past 400 days", None),  # longer than a window may be
    ],
)
def test_extract_window(text, window):
    assert extract_window(text) == window


@pytest.mark.parametrize(
    ("question", "language"),
    [
        ("Why is payment-service slow?", "en"),
        ("为什么订单服务最近1小时一直重启？", "zh"),
        ("支付服务的CPU", "zh"),
        ("決済サービスのCPU使用率が高いのはなぜですか？", "ja"),  # kanji and kana: Japanese
        ("なぜ遅い？", "ja"),  # kana only
        ("ｻｰﾋﾞｽ", "ja"),  # half-width katakana
        ("결제 서비스가 왜 느린가요?", "ko"),
        ("payment-service 결제 서비스 CPU 사용률", "ko"),
    ],
)
def test_detect_language_tells_japanese_and_korean_from_chinese(question, language):
    assert detect_language(question) == language
    assert intent_of(question).language == language


def test_extraction_is_deterministic():
    question = "为什么订单服务最近1小时一直重启，还有 HikariCP 超时？"
    assert len({intent_of(question) for _ in range(5)}) == 1


def test_aliases_as_a_backend_lists_them_are_accepted():
    by_service = {"payment-service": ["payment", "支付服务"], "order-service": ["订单服务"]}
    intent = extract_intent("支付服务和订单服务为什么慢", services=SERVICES, aliases=by_service, alertnames=[])
    assert intent.services == ("payment-service", "order-service")


def test_kubernetes_container_states_are_terms_not_alert_names():
    intent = intent_of("Is order-service in CrashLoopBackOff or ImagePullBackOff?")
    assert intent.alertnames == ()
    assert {"CrashLoopBackOff", "ImagePullBackOff"} <= set(intent.terms)
