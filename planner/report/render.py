"""Render a `ReportModel`: draw its charts, lay it out as a `Document`, and write that as HTML and Markdown."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import jinja2
from markupsafe import Markup, escape

from planner.report import charts as draw
from planner.report.details import detail_sections
from planner.report.document import Chart, Document, Items, Kpis, Para, Table
from planner.report.model import ReportModel
from planner.report.sections import decision_sections
from planner.report.templates import HTML_TEMPLATE
from pools.pool_rules import DEFAULT_FORECAST_HORIZON_DAYS

__all__ = ["RenderedReport", "render_report", "report_document", "render_markdown", "CHART_NAMES"]

#: Every chart the report can hold, in page order.
CHART_NAMES = ("pools", "runway", "heatmap", "throughput", "growth", "batches", "findings")

_CODE = re.compile(r"`([^`]+)`")


@dataclass(frozen=True)
class RenderedReport:
    """The HTML page, the Markdown twin and each chart's SVG (for the Markdown twin's ``charts/`` directory)."""

    html: str
    markdown: str
    charts: Mapping[str, str]


def render_report(model: ReportModel, *, has_policy: bool) -> RenderedReport:
    """Draw the charts the model has data for and write the document both ways; same model, same bytes."""
    charts = _charts(model)
    doc = report_document(model, set(charts), has_policy=has_policy)
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters |= {"inline": _inline_html, "words": _words_html}
    html = env.from_string(HTML_TEMPLATE).render(
        doc=doc, charts={k: Markup(v) for k, v in charts.items()}, kind=lambda b: type(b).__name__, cls=_cls,
    )
    return RenderedReport(html=html, markdown=render_markdown(doc), charts=charts)


def report_document(model: ReportModel, charts: set[str], *, has_policy: bool) -> Document:
    """The report's content, charts named in ``charts`` included."""
    parts = [f"Snapshot taken {model.taken_at or 'at an unknown time'}"]
    if model.history_end is not None:
        parts.append(f"metric history to {model.history_end.isoformat()}")
    if model.horizon_days:
        parts.append(f"forecast horizon {model.horizon_days} days")
    if model.comparison is not None:
        parts.append(f"compared with run `{model.comparison.previous_run}`")
    return Document(f"Capacity report: {model.cluster}", "; ".join(parts) + ".",
                    decision_sections(model, charts) + detail_sections(model, charts, has_policy=has_policy))


def render_markdown(doc: Document) -> str:
    """The document as GitHub-flavoured Markdown; charts as ``charts/<name>.svg`` images."""
    out = [f"# {doc.title}", "", doc.subtitle, ""]
    for s in doc.sections:
        out += [f"## {s.title}", ""]
        for b in s.blocks:
            out += _markdown_block(b) + [""]
    return "\n".join(out).rstrip() + "\n"


def _markdown_block(b) -> list[str]:
    if isinstance(b, Para):
        return [b.text]
    if isinstance(b, Items):
        return [b.title, ""] + [f"- {i}" for i in b.items]
    if isinstance(b, Kpis):
        return ["| | |", "|---|---|"] + [f"| {_md(label)} | {_md(value)} |" for label, value in b.items]
    if isinstance(b, Chart):
        return [f"![{b.alt}](charts/{b.name}.svg)", "", b.caption]
    if isinstance(b, Table):
        headers = list(b.headers) + ([b.detail_header] if b.details else [])
        align = ["---" if i in b.left else "--:" for i in range(len(b.headers))] + (["---"] if b.details else [])
        lines = ["| " + " | ".join(_md(h) for h in headers) + " |", "|" + "|".join(align) + "|"]
        for i, row in enumerate(b.rows):
            cells = [_md(c.text) for c in row] + ([_md_code(b.details[i])] if b.details else [])
            lines.append("| " + " | ".join(cells) + " |")
        return lines
    raise TypeError(f"unknown block {type(b).__name__}")


def _charts(model: ReportModel) -> dict[str, str]:
    out: dict[str, str] = {}
    if model.pools:
        out["pools"] = draw.pool_utilisation_chart(model.pools)
        runway = [p for p in model.pools if p.limit and p.demand_now is not None]
        if runway:
            out["runway"] = draw.runway_chart(runway, days=_runway_span(model))
    if model.heat is not None:
        out["heatmap"] = draw.broker_heatmap(model.heat)
    if model.topics:
        out["throughput"] = draw.topics_chart(model.top_throughput, title="Top topics by throughput (bytes in, p99)")
        out["growth"] = draw.topics_chart(model.top_growth, title="Top topics by growth", growth=True)
    if len(model.batches) > 1:
        out["batches"] = draw.batches_chart(model.batches)
    if model.findings:
        out["findings"] = draw.findings_chart(model.findings)
    return out


def _runway_span(model: ReportModel) -> int:
    """Days the runway chart shows: twice the horizon (the default horizon when the run states none), stretched to
    the first crossing up to two years out."""
    horizon = model.horizon_days or DEFAULT_FORECAST_HORIZON_DAYS
    crossings = [p.runway_days for p in model.pools if p.runway_days]
    first = min(crossings, default=0.0)
    return int(max(2 * horizon, min(first * 1.2, 730)))


def _inline_html(text: str) -> Markup:
    """Escape ``text`` and turn backticked spans into ``<code>``."""
    return Markup(_CODE.sub(lambda m: f"<code>{m.group(1)}</code>", str(escape(text))))


def _words_html(text: str) -> Markup:
    """Escape ``text`` with each run of non-spaces in an unbreakable span: lines break only at spaces, never
    inside a topic name, a JSON document or an option (``--election-type PREFERRED``)."""
    parts = re.split(r"( +)", str(text))
    return Markup("".join(str(escape(p)) if i % 2 or not p else f'<span class="w">{escape(p)}</span>'
                          for i, p in enumerate(parts)))


def _cls(css: str, left: bool) -> Markup:
    classes = " ".join(c for c in ("l" if left else "", css) if c)
    return Markup(f' class="{escape(classes)}"') if classes else Markup("")


def _md(text: str) -> str:
    return text.replace("|", "\\|")


def _md_code(text: str) -> str:
    if not text:
        return ""
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{_md(text)}{pad}{fence}"
