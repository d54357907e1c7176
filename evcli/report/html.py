"""The HTML report: one self-contained file that reads like an incident note.

Invariants: inline CSS, JS and SVG only, and a Content-Security-Policy that forbids every fetch
(`default-src 'none'`) and runs only the one script it was written with (by its sha256), so even a
text that escaped escaping could neither load nor run anything. Every value from the session goes
through `html.escape` (text and attribute contexts alike); the only markup added to a session text
is the `[n]` citation link, the `<mark>` around an excerpt and the `<mark class="fact">` (titled with
its field's path) around a matched fact's value, all built here; the trace drawings
(evcli.report.trace_svg) escape their texts the same way, and their CSS is added only to a report
that has them, so a report without traces is what it was before they were drawn. Light and dark follow
`prefers-color-scheme`; `@media print` drops the navigation; every link and citation is focusable.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape

from evcli.report.answer import Block, CodeBlock, Heading, ListBlock, Span, answer_blocks
from evcli.report.cited import Citation, CitedEvidence, CitedFact, SeriesChart
from evcli.report.model import ReportModel
from evcli.report.svg import chart_svg
from evcli.report.trace_svg import call_graph_svg, waterfall_svg

_STYLE = """
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--muted:#59636e;--line:#d1d9e0;--card:#f6f8fa;
--mark:#fff1a8;--hl:#0969da;--ok:#1a7f37;--warn:#9a6700;--bad:#cf222e}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;
--card:#151b23;--mark:#5a4a00;--hl:#4493f8;--ok:#3fb950;--warn:#d29922;--bad:#f85149}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:60rem;padding:1.5rem;background:var(--bg);color:var(--fg);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
h1{font-size:1.35rem;margin:.2rem 0 .6rem}h2{font-size:1.1rem;border-bottom:1px solid var(--line);
padding-bottom:.2rem;margin-top:2rem}h3{font-size:1rem;margin:.3rem 0}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem}
pre{white-space:pre-wrap;word-break:break-word;margin:.3rem 0}
.badge{display:inline-block;padding:.05rem .5rem;border-radius:1rem;border:1px solid currentColor;
font-size:.8rem;font-weight:600;margin-right:.3rem}
.PASS,.pass,.none{color:var(--ok)}.LOW_CONFID,.low_confid{color:var(--warn)}.REJECT,.reject,.fail{color:var(--bad)}
.meta{color:var(--muted);font-size:.85rem}
.answer{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:.1rem .8rem}
.answer h3,.answer h4,.answer h5,.answer h6{margin:.7rem 0 .2rem}.answer p,.answer ul,.answer ol{margin:.4rem 0}
.answer pre{background:var(--bg);border:1px solid var(--line);border-radius:4px;padding:.4rem .6rem}
.answer :not(pre)>code{background:var(--bg);border-radius:3px;padding:0 .2rem}
a{color:var(--hl)}a:focus-visible,.citation:focus-visible,[tabindex]:focus-visible{outline:3px solid var(--hl);
outline-offset:2px}
.citation{border:1px solid var(--line);border-radius:6px;padding:.6rem .8rem;margin:.6rem 0;scroll-margin-top:1rem}
.citation:target,.citation.highlight{border-color:var(--hl);box-shadow:0 0 0 3px var(--hl)}
mark{background:var(--mark);color:inherit}
mark.fact{background:none;text-decoration:underline 2px var(--ok);text-underline-offset:3px}
table.facts{width:auto;margin:.3rem 0}
table{border-collapse:collapse;width:100%;font-size:.85rem}th,td{border:1px solid var(--line);
padding:.25rem .4rem;text-align:left;vertical-align:top}
.chart{max-width:100%;height:auto;background:var(--card);border:1px solid var(--line);border-radius:4px}
.chart .axis{stroke:var(--muted)}.chart .grid{stroke:var(--line);stroke-dasharray:2 3}
.chart text{fill:var(--muted);font-size:10px;font-family:inherit}.chart .line{fill:none;stroke:var(--hl);stroke-width:1.2}
.chart .samples circle{fill:var(--hl);r:1.6px}.chart .cited{fill:var(--bad);stroke:var(--bg);stroke-width:1.5}
nav a{margin-right:.8rem}
@media print{nav{display:none}body{max-width:none;padding:0;font-size:11pt}
.citation,.chart{break-inside:avoid}a{color:inherit}}
"""

# Added only to a report that draws traces, so every other report is byte for byte what it was.
TRACE_STYLE = """
#traces figure{margin:.8rem 0}#traces figcaption{font-size:.85rem;margin-bottom:.2rem}
.waterfall,.calls{max-width:100%;height:auto;background:var(--card);border:1px solid var(--line);border-radius:4px}
.waterfall text,.calls text{fill:var(--fg);font-size:10px;font-family:inherit}
.waterfall .grid{stroke:var(--line);stroke-dasharray:2 3}.waterfall .tick-label,.waterfall .axis-label,
.waterfall .more,.calls .head,.calls .more{fill:var(--muted)}
.waterfall .bar{fill:var(--hl)}.waterfall .error .bar{fill:var(--bad)}.waterfall .cited .bar{stroke:var(--fg);
stroke-width:1.5}.row-hl{fill:var(--mark)}.waterfall .error-mark,.calls .error-mark{fill:var(--bad);font-weight:600}
.cite-mark{fill:var(--hl);text-decoration:underline}.calls .arrow{stroke:var(--muted);fill:var(--muted)}
.calls .cited .arrow{stroke:var(--hl);fill:var(--hl);stroke-width:2}
@media print{.waterfall,.calls{break-inside:avoid}}
"""

# Clicking a citation (or opening the page at #cite-n) highlights its evidence and moves focus
# there, so keyboard users land where they jumped.
_SCRIPT = """
(function(){function show(){var id=decodeURIComponent(location.hash.slice(1));
document.querySelectorAll('.highlight').forEach(function(e){e.classList.remove('highlight')});
var t=id&&document.getElementById(id);if(!t)return;t.classList.add('highlight');t.focus({preventScroll:true});
t.scrollIntoView({block:'start'})}window.addEventListener('hashchange',show);show();})();
"""


def render_html(report: ReportModel) -> str:
    digest = base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode()
    policy = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; img-src data:"
    drawn = bool(report.waterfalls or report.call_graphs)
    body = "".join(
        (
            _header(report, drawn),
            _answer(report),
            _evidence(report.citations),
            _traces(report),
            _timeline(report),
            _scope(report),
            _plan(report),
            _invocations(report),
            _gates(report),
            _verifier(report),
            _provenance(report),
        )
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{escape(policy)}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>evcli report · {escape(report.question[:80])}</title>"
        f"<style>{_STYLE}{TRACE_STYLE if drawn else ''}</style></head>"
        f"<body>{body}<script>{_SCRIPT}</script></body></html>\n"
    )


def _header(report: ReportModel, drawn: bool) -> str:
    badges = [
        _badge("verdict", report.verdict or "none", report.verdict or ""),
        _badge("gate", f"{report.gate_status or '-'}/{report.gate_severity or '-'}", report.gate_severity or ""),
        _badge("status", report.status, ""),
    ]
    nav = "".join(
        f'<a href="#{anchor}">{label}</a>'
        for anchor, label in (
            ("answer", "Answer"),
            ("evidence", "Evidence"),
            *([("traces", "Traces")] if drawn else []),
            ("timeline", "Timeline"),
            ("scope", "Asked vs searched"),
            ("plan", "Plan"),
            ("tools", "Tool calls"),
            ("gate", "Gate"),
            ("verifier", "Verifier"),
        )
    )
    return (
        f"<header><nav>{nav}</nav><h1>{escape(report.question) or '(no question)'}</h1>"
        f"<p>{''.join(badges)}</p><p class=meta>session <code>{escape(report.session_id)}</code> · "
        f"{escape(report.mode)} · {escape(report.created_at)}</p></header>"
    )


def _badge(label: str, value: str, css: str) -> str:
    return f'<span class="badge {escape(css)}">{escape(label)} {escape(value)}</span>'


def _answer(report: ReportModel) -> str:
    """The answer as the Composer structured it: headings, paragraphs, lists and code, each `[n]` a link
    to its evidence; every span's text escaped (the only tags are the ones written here)."""
    known = {str(citation.number) for citation in report.citations}
    blocks = "".join(_answer_block(block, known) for block in answer_blocks(report.answer))
    extra = _list("Possible causes (unconfirmed)", report.hypotheses) + _list("Missing evidence", report.missing_info)
    return (
        f'<section id="answer"><h2>Answer</h2><div class="answer">{blocks or "<p>(no answer was composed)</p>"}'
        f"</div>{extra}</section>"
    )


def _answer_block(block: Block, known: set[str]) -> str:
    if isinstance(block, Heading):
        level = min(6, block.level + 2)  # under the section's <h2>
        return f"<h{level}>{_inline(block.spans, known)}</h{level}>"
    if isinstance(block, CodeBlock):
        language = f' class="language-{escape(block.language)}"' if block.language else ""
        return f"<pre><code{language}>{escape(block.text)}</code></pre>"
    if isinstance(block, ListBlock):
        items = "".join(f"<li>{_inline(item, known)}</li>" for item in block.items)
        if not block.ordered:
            return f"<ul>{items}</ul>"
        return f"<ol{f' start={block.start}' if block.start != 1 else ''}>{items}</ol>"
    return f"<p>{'<br>'.join(_inline(line, known) for line in block.lines)}</p>"


def _inline(spans: list[Span], known: set[str]) -> str:
    shown = []
    for span in spans:
        if span.kind == "cite" and span.text in known:
            shown.append(
                f'<a class="cite" href="#cite-{span.text}" aria-label="evidence {span.text}">[{span.text}]</a>'
            )
        elif span.kind == "cite":
            shown.append(f"[{span.text}]")
        else:
            tag = {"code": "code", "strong": "strong", "emphasis": "em"}.get(span.kind)
            shown.append(f"<{tag}>{escape(span.text)}</{tag}>" if tag else escape(span.text))
    return "".join(shown)


def _list(title: str, items: list[str]) -> str:
    if not items:
        return ""
    return f"<h3>{escape(title)}</h3><ul>" + "".join(f"<li>{escape(item)}</li>" for item in items) + "</ul>"


def _evidence(citations: list[Citation]) -> str:
    if not citations:
        return '<section id="evidence"><h2>Evidence</h2><p>No claim passed verification.</p></section>'
    blocks = "".join(
        f'<article class="citation" id="cite-{c.number}" tabindex="-1"><h3>[{c.number}] {escape(c.claim_text)}</h3>'
        f"<p class=meta>{escape(c.claim_id)} · {escape(c.claim_type)}</p>"
        + "".join(_cited(evidence) for evidence in c.evidence)
        + "</article>"
        for c in citations
    )
    return f'<section id="evidence"><h2>Evidence</h2>{blocks}</section>'


def _cited(evidence: CitedEvidence) -> str:
    where = [
        f"<code>{escape(evidence.tool_name)}</code> #{evidence.invocation_id}",
        f"<code>{escape(evidence.raw_path)}</code>",
    ]
    if evidence.source:
        where.append(f"<code>{escape(evidence.source)}</code>")
    if evidence.time:
        where.append(escape(evidence.time))
    chart = chart_svg(evidence.chart) + _chart_caption(evidence.chart) if evidence.chart else ""
    if evidence.chart and not evidence.chart.samples:
        chart += '<p class="meta">The samples were not recorded with this session; the cited values are shown.</p>'
    if evidence.drawing:
        anchor, name = evidence.drawing
        chart += f'<p class="meta">drawn in the <a href="#{escape(anchor)}">{escape(name)}</a></p>'
    return (
        f'<div class="ref" id="{evidence.anchor}"><p class="meta">{" · ".join(where)}</p>'
        f"<pre>{_marked(evidence)}</pre>{_facts(evidence.facts)}{chart}</div>"
    )


def _facts(facts: list[CitedFact]) -> str:
    """What the Gatekeeper matched: each fact the claim states against the field of the item that states it."""
    if not facts:
        return ""
    rows = "".join(
        f"<tr><td>{f'<code>{escape(fact.field)}</code>' if fact.field else 'no field states it'}</td>"
        f"<td>{escape(fact.claim)}</td><td>{escape(fact.evidence) or '-'}</td>"
        f"<td class={'pass' if fact.ok else 'fail'}>{'ok' if fact.ok else 'failed'}</td></tr>"
        for fact in facts
    )
    return (
        '<table class="facts"><thead><tr><th>field</th><th>claim says</th><th>recorded</th><th>check</th></tr>'
        f"</thead><tbody>{rows}</tbody></table>"
    )


def _chart_caption(chart: SeriesChart) -> str:
    """What the chart's axes span: the range and the extremes, with the cited values (red) named."""
    values = [value for _, value in chart.samples] or [value for _, _, value in chart.marked]
    low, high = (min(values), max(values)) if values else (None, None)
    cited = ", ".join(f"{label}={value:g}{chart.unit}" for label, _, value in chart.marked) or "none"
    return (
        f'<p class="meta">{escape(chart.start or "?")} .. {escape(chart.end or "?")} · {len(chart.samples)} samples · '
        f"y {escape(f'{low:g}' if low is not None else '?')}..{escape(f'{high:g}' if high is not None else '?')}"
        f"{escape(chart.unit)} · cited (red): {escape(cited)}</p>"
    )


def _marked(evidence: CitedEvidence) -> str:
    """The full ref text with the excerpt in <mark> and each located fact's value in <mark class="fact">,
    or the excerpt alone when there is no ref text. The model's spans nest, so the tags do too."""
    if not evidence.ref_text:
        return escape(evidence.excerpt)
    marks = [(evidence.excerpt_at, "<mark>")] if evidence.excerpt_at else []
    marks += [(fact.at, f'<mark class="fact" title="{escape(fact.field)}">') for fact in evidence.facts if fact.at]
    # at one position a mark closes before the next opens, and the longer of two opens first
    tags = sorted(
        [(start, 1, -end, tag) for (start, end), tag in marks] + [(end, 0, 0, "</mark>") for (_, end), _ in marks]
    )
    text, shown, last = evidence.ref_text, [], 0
    for position, _, _, tag in tags:
        shown += [escape(text[last:position]), tag]
        last = position
    return "".join(shown) + escape(text[last:])


def _traces(report: ReportModel) -> str:
    """The cited traces as waterfalls and the cited call graphs as edges with arrows (nothing without either)."""
    if not (report.waterfalls or report.call_graphs):
        return ""
    parts = ['<section id="traces"><h2>Traces</h2>']
    for trace in report.waterfalls:
        parts.append(
            f'<figure id="{escape(trace.anchor)}" tabindex="-1"><figcaption>Trace <code>{escape(trace.trace_id)}</code>'
            f" · cited {_cite_links(sorted({n for row in trace.rows for n in row.citations}))}</figcaption>"
            f"{waterfall_svg(trace)}</figure>"
        )
    for graph in report.call_graphs:
        parts.append(
            f'<figure id="{escape(graph.anchor)}" tabindex="-1"><figcaption>Call edges of '
            f"<code>{escape(graph.tool_name)}</code> #{graph.invocation_id} · cited {_cite_links(graph.citations)}"
            f"</figcaption>{call_graph_svg(graph)}</figure>"
        )
    return "".join(parts) + "</section>"


def _timeline(report: ReportModel) -> str:
    if not report.timeline:
        return ""
    rows = "".join(
        f"<tr><td class=mono>{escape(entry.time)}</td><td>{escape(entry.kind)}</td><td><pre>{escape(entry.text)}</pre></td>"
        f"<td>{_cite_links(entry.citations)}</td></tr>"
        for entry in report.timeline
    )
    return (
        '<section id="timeline"><h2>Timeline</h2><table><thead><tr><th>time</th><th>kind</th><th>line</th>'
        f"<th>cited</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _cite_links(numbers: list[int]) -> str:
    return " ".join(f'<a href="#cite-{number}">[{number}]</a>' for number in numbers)


def _scope(report: ReportModel) -> str:
    asked = "".join(f"<tr><th>{escape(label)}</th><td>{escape(value)}</td></tr>" for label, value in report.asked)
    asked_table = f"<table>{asked}</table>" if asked else "<p>The question scope was not recorded.</p>"
    searched = "".join(
        f"<tr><td>#{i.invocation_id}</td><td>{escape(i.tool_name)}</td><td>{escape(i.service or '-')}</td>"
        f"<td class=mono>{escape(i.range or '-')}{f' ({escape(i.range_origin)})' if i.range_origin else ''}</td>"
        f"<td>{escape(', '.join(i.keywords) or '-')}</td><td>{escape(i.level or '-')}</td></tr>"
        for i in report.invocations
    )
    return (
        f'<section id="scope"><h2>What was asked vs what was searched</h2><h3>Asked</h3>{asked_table}'
        "<h3>Searched</h3><table><thead><tr><th>#</th><th>tool</th><th>service</th><th>range</th><th>keywords</th>"
        f"<th>level</th></tr></thead><tbody>{searched}</tbody></table></section>"
    )


def _plan(report: ReportModel) -> str:
    steps = "".join(f"<li>{escape(step)}</li>" for step in report.plan)
    return (
        f'<section id="plan"><h2>Plan</h2><p>skill <code>{escape(report.plan_skill or "-")}</code> · '
        f"{escape(report.plan_reason)}</p><ol>{steps}</ol>{_list('Next steps', report.actions)}</section>"
    )


def _invocations(report: ReportModel) -> str:
    rows = "".join(
        f"<tr><td>#{i.invocation_id}</td><td><code>{escape(i.tool_name)}</code></td><td class=mono>{escape(i.params)}</td>"
        f"<td>{escape(i.status)}{' · truncated' if i.truncated else ''}"
        f"{f' · {escape(i.error)}' if i.error else ''}</td><td>{i.duration_ms:.0f} ms</td></tr>"
        for i in report.invocations
    )
    return (
        '<section id="tools"><h2>Tool calls</h2><table><thead><tr><th>#</th><th>tool</th><th>parameters</th>'
        f"<th>status</th><th>time</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _gates(report: ReportModel) -> str:
    items = []
    for gate in report.gates:
        findings = "".join(
            f"<li><code>{escape(f.rule)}</code> <span class='{escape(f.severity)}'>{escape(f.severity)}</span>: "
            f"{escape(f.message)}"
            + (
                f"<br>asked {escape(f.asked or '-')}; searched {escape(f.searched or '-')}"
                if f.asked or f.searched
                else ""
            )
            + "</li>"
            for f in gate.findings
        )
        items.append(
            f"<li>#{gate.seq} · round {gate.round} · <span class='{escape(gate.severity)}'>{escape(gate.status)}/"
            f"{escape(gate.severity)}</span> · {escape(gate.rule_set_version)} · {escape(gate.created_at)} · failed: "
            f"{escape(', '.join(gate.failed_rules) or 'none')}<ul>{findings}</ul></li>"
        )
    return f'<section id="gate"><h2>Gate history</h2><ol>{"".join(items)}</ol></section>'


def _verifier(report: ReportModel) -> str:
    rows = "".join(
        f"<tr><td>{escape(c.claim_id)}</td><td>{escape(c.verification)}</td><td>{'yes' if c.is_critical else 'no'}</td>"
        f"<td>{escape(c.note)}</td></tr>"
        for c in report.claim_checks
    )
    summary = (
        f"<p>verdict <span class='{escape(report.verifier_verdict or '')}'>{escape(report.verifier_verdict or '-')}</span>"
        f" · groundedness {escape(str(report.groundedness))} · {escape(report.rationale)}</p>"
    )
    return (
        f'<section id="verifier"><h2>Verifier claim checks</h2>{summary}<table><thead><tr><th>claim</th>'
        f"<th>verification</th><th>critical</th><th>note</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _provenance(report: ReportModel) -> str:
    prompts = ", ".join(f"{escape(name)} {escape(version)}" for name, version in report.prompts) or "-"
    models = ", ".join(f"{escape(role)}={escape(model)}" for role, model in sorted(report.models.items())) or "-"
    return f"<footer><h2>Prompts and models</h2><p>prompts: {prompts}</p><p>models: {models}</p></footer>"
