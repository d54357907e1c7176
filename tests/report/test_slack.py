"""`--format slack`: a Block Kit message checked against Slack's documented limits and escaping rules.

No network: `block_kit_problems` encodes what the Block Kit reference and the message-formatting
guide say (block types and their fields, text lengths, block and element counts, `&`/`<`/`>` as
entities, links as `<url|text>`), and every message rendered here must have none.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import evcli.report.slack as slack
from evcli.report import render, slack_message
from evcli.report.slack import TRUNCATED, mrkdwn_code, mrkdwn_text
from tests.cli._util import assert_clean_error, evcli
from tests.conftest import sample
from tests.report.conftest import RAW_CONTROLS, control_export, load, with_answer

LINK = re.compile(r"<(https?://[^\s|<>]+)\|([^<>|]*)>")
ENTITIES = re.compile(r"(?:[^&]|&(?:amp|lt|gt);)*", re.DOTALL)
# a backslash before a character Markdown would let it escape: Slack shows the backslash
BACKSLASH_ESCAPE = re.compile(r"\\[*_~`\[\]#<>&|()!.+-]")


def mrkdwn_problems(text: str, limit: int) -> list[str]:
    problems = []
    if not 1 <= len(text) <= limit:
        problems.append(f"length {len(text)} not in 1..{limit}")
    outside_links = LINK.sub("", text)
    if "<" in outside_links or ">" in outside_links:
        problems.append("a raw < or > outside a <url|text> link")
    if not ENTITIES.fullmatch(text):
        problems.append("an & that is not &amp; &lt; or &gt;")
    if BACKSLASH_ESCAPE.search(text):
        problems.append("a backslash escape")
    if "[^" in text or "**" in text or "](" in text or re.search(r"^#{1,6} ", text, re.MULTILINE):
        problems.append("Markdown, not mrkdwn (footnote, **bold**, [link](url) or # heading)")
    return problems


def text_object_problems(obj: dict[str, Any], limit: int, kind: str = "mrkdwn") -> list[str]:
    if obj.get("type") != kind:
        return [f"text object of type {obj.get('type')!r}, not {kind}"]
    if kind == "plain_text":
        return [] if 1 <= len(obj["text"]) <= limit else [f"plain_text length {len(obj['text'])}"]
    problems = mrkdwn_problems(obj["text"], limit)
    return problems + ([] if obj.get("verbatim") is True else ["mrkdwn without verbatim: true"])


def block_kit_problems(message: dict[str, Any]) -> list[str]:
    """What in `message` breaks Block Kit's documented limits or Slack's escaping rules ([] when nothing)."""
    problems = [] if set(message) == {"text", "blocks"} else [f"top-level keys {sorted(message)}"]
    problems += mrkdwn_problems(message["text"], 3000)
    blocks = message["blocks"]
    if not 1 <= len(blocks) <= 50:
        problems.append(f"{len(blocks)} blocks (at most 50)")
    for index, block in enumerate(blocks):
        found: list[str] = []
        if block["type"] == "header":
            found += text_object_problems(block["text"], 150, "plain_text")
        elif block["type"] == "section":
            if "text" not in block and "fields" not in block:
                found.append("section without text or fields")
            found += text_object_problems(block["text"], 3000) if "text" in block else []
            fields = block.get("fields", [])
            found += [] if len(fields) <= 10 else [f"{len(fields)} fields (at most 10)"]
            found += [problem for field in fields for problem in text_object_problems(field, 2000)]
        elif block["type"] == "context":
            elements = block["elements"]
            found += [] if 1 <= len(elements) <= 10 else [f"{len(elements)} context elements"]
            found += [problem for element in elements for problem in text_object_problems(element, 3000)]
        elif block != {"type": "divider"}:
            found.append(f"unexpected block {block['type']!r}")
        problems += [f"block {index} ({block['type']}): {problem}" for problem in found]
    return problems


def texts(message: dict[str, Any]) -> list[str]:
    """Every mrkdwn text of the message's sections, in order."""
    return [block["text"]["text"] for block in message["blocks"] if block["type"] == "section" and "text" in block]


def test_the_hostile_session_is_valid_block_kit_with_header_verdict_claims_and_context(hostile_session):
    document = load(hostile_session)
    message = json.loads(render(document, "slack"))
    assert block_kit_problems(message) == []
    blocks = message["blocks"]
    assert [blocks[0]["type"], blocks[1]["type"], blocks[-1]["type"]] == ["header", "section", "context"]
    assert blocks[0]["text"]["text"] == document.run.question
    assert [field["text"] for field in blocks[1]["fields"]] == [
        "*Verdict*\n`PASS`",
        "*Gate*\n`pass/none`",
        "*Cited claims*\n3",
    ]
    divider = blocks.index({"type": "divider"})
    sources = "\n".join(block["text"]["text"] for block in blocks[divider + 1 : -1]).splitlines()
    assert [line[:5] for line in sources] == ["*[1]*", "*[2]*", "*[3]*"]
    assert sources[1].endswith("— `query_logs #4 $.logs[0] · logs/web.log:2`")
    assert 'name=&lt;script&gt;alert("xss")&lt;/script&gt; in "quotes" &amp; amp' in sources[1]
    assert "ˋtickˋ" in sources[2]  # a log line's backticks cannot open code
    context = [element["text"] for element in blocks[-1]["elements"]]
    assert context == [f"session `{document.run.session_id}`", f"full report: `evcli report {document.run.session_id}`"]
    assert message["text"] == f"{document.run.question} — verdict `PASS`"


def test_the_answers_structure_in_mrkdwn(hostile_session):
    answer = (
        "## Summary\n"
        "The pool is exhausted [1] and `-Xmx` is **small**; see *below*.\n"
        "Findings:\n- first [2]\n- second\n"
        "3. third\n"
        "> a line that would quote\n"
        "```sh\nkubectl get `pods` -o <json>\n```"
    )
    message = slack_message(with_answer(load(hostile_session), answer))
    assert block_kit_problems(message) == []
    assert texts(message)[0] == (
        "*Summary*\n"
        "The pool is exhausted [1] and `-Xmx` is *small*; see _below_.\n\n"
        "*Findings:*\n• first [2]\n• second\n\n"
        "3. third\n\n"
        "＞ a line that would quote\n\n"
        "```\nkubectl get ˋpodsˋ -o &lt;json&gt;\n```"
    )


@pytest.mark.parametrize(
    "session_text, shown",
    [
        (
            "<!channel> <@U123> <https://evil.example|click>",
            "&lt;!channel&gt; &lt;@U123&gt; &lt;https://evil.example|click&gt;",
        ),
        ("a*b *c* _d_ ~e~ `f`", "a∗b ∗c∗ ＿d＿ ∼e∼ ˋfˋ"),
        ("no_evidence order_service x * y", "no_evidence order_service x * y"),  # inside a word, between spaces
        ("root:x:0:0 at 10:05:00 :tada:", "root∶x:0:0 at 10:05:00 ∶tada:"),  # no ❌ and no 🎉
        ("AT&T &amp; 3 > 2", "AT&amp;T &amp;amp; 3 &gt; 2"),
        ("line one\nline two", "line one line two"),
    ],
)
def test_session_text_shows_as_written_never_as_formatting_mention_or_link(session_text, shown):
    assert mrkdwn_text(session_text) == shown
    assert mrkdwn_problems(shown, 3000) == []


def test_code_keeps_everything_but_the_backtick_and_the_entities():
    assert mrkdwn_code("*a* _b_ `c` <d> & e") == "*a* _b_ ˋcˋ &lt;d&gt; &amp; e"


def test_limits_are_kept_and_what_is_cut_says_so(hostile_session, monkeypatch):
    paragraph = "word " * 500  # 2,500 characters: one section each
    answer = "x" * 5000 + "\n\n" + "\n\n".join(f"{n} {paragraph}" for n in range(80))
    document = with_answer(load(hostile_session), answer)
    document.run.question = "why " * 80
    message = slack_message(document)
    assert block_kit_problems(message) == []
    blocks = message["blocks"]
    assert len(blocks) == 50 and len(blocks[0]["text"]["text"]) == 150 and blocks[0]["text"]["text"].endswith("…")
    first = texts(message)[0]
    assert first.endswith(TRUNCATED.format(limit=3000)) and first.startswith("x" * 2900)
    notice = blocks[-2]["text"]["text"]
    left_out = int(re.search(r"… \[(\d+) more sections not shown: Slack shows at most 50 blocks", notice).group(1))
    assert notice.endswith(f"Full report: `evcli report {document.run.session_id}`]")
    monkeypatch.setattr(slack, "MAX_BLOCKS", 10_000)
    unlimited = slack_message(document)["blocks"]
    assert len(blocks) - 4 + left_out == len(unlimited) - 3  # shown body (without the notice) + left out = all of it


def test_a_report_url_links_the_report_and_each_citation(hostile_session):
    document = load(hostile_session)
    url = "https://evcli.example/sessions/S?a=1&b=x|y>"
    message = slack_message(document, report_url=url)
    assert block_kit_problems(message) == []
    link = "https://evcli.example/sessions/S?a=1&amp;b=x%7Cy%3E"
    assert message["blocks"][-1]["elements"][1]["text"] == f"<{link}|full report>"
    assert f"<{link}#cite-1|[1]>" in texts(message)[0]  # the answer's marker
    assert any(text.startswith(f"<{link}#cite-1|[1]> ") for text in texts(message))  # its source line
    unsafe = slack_message(document, report_url="javascript:alert(1)")
    assert not [text for text in texts(unsafe) if LINK.search(text)] and "javascript" not in json.dumps(unsafe)


@pytest.fixture(scope="module")
def control_session(tmp_path_factory):
    return control_export(tmp_path_factory)


def test_control_characters_are_visible_text_in_valid_json(control_session):
    rendered = render(load(control_session), "slack")
    assert not [c for c in RAW_CONTROLS if c in rendered]
    message = json.loads(rendered)
    assert block_kit_problems(message) == []
    assert any("\\x1b[2J\\x1b]0;PWNED\\x07" in text for text in texts(message))


def test_report_and_ask_print_slack_and_chat_markdown(hostile_session, tmp_path):
    run = evcli("report", hostile_session, "--format", "slack")
    assert run.exit_code == 0 and block_kit_problems(json.loads(run.stdout)) == [], run
    asked = evcli("ask", "why is payment-service CPU high?", "--db", tmp_path / "x.db", "--format", "slack")
    assert asked.exit_code == 0, asked
    message = json.loads(asked.stdout)
    assert (
        block_kit_problems(message) == [] and message["blocks"][0]["text"]["text"] == "why is payment-service CPU high?"
    )
    chat = evcli("ask", "why is payment-service CPU high?", "--db", tmp_path / "x.db", "--format", "md")
    assert chat.exit_code == 0 and "\nSources:\n" in chat.stdout and "[^" not in chat.stdout, chat
    assert_clean_error(
        evcli("ask", "why is payment-service CPU high?", "--format", "slack", "--json"), 2, "--format slack and --json"
    )


def test_a_sample_without_citations_is_still_valid():
    document = load(sample("fault-fabricated-invocation-id"))
    assert block_kit_problems(slack_message(document)) == []
