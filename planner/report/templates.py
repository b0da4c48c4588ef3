"""The report's Jinja2 templates: a self-contained HTML page (inline CSS and SVG, no URLs) and its Markdown twin."""

__all__ = ["HTML_TEMPLATE", "MARKDOWN_TEMPLATE"]

HTML_TEMPLATE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Capacity report: {{ m.cluster }}</title>
<style>
body { font-family: "DejaVu Sans", Arial, sans-serif; margin: 0 auto; max-width: 1100px; padding: 1.5em; color: #222; }
h1 { margin-bottom: .2em; } h2 { border-bottom: 2px solid #4C72B0; padding-bottom: .2em; margin-top: 2em; }
.meta { color: #555; } .missing { background: #FFF4E5; border-left: 4px solid #FF9F1C; padding: .5em 1em; }
.kpis { display: flex; flex-wrap: wrap; gap: 1em; padding: 0; list-style: none; }
.kpis li { background: #F3F6FB; border-radius: 6px; padding: .6em 1em; min-width: 9em; }
.kpis b { display: block; font-size: 1.4em; }
figure.chart { margin: 1em 0; } figure.chart svg { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: .9em; }
table { border-collapse: collapse; margin: 1em 0; font-size: .9em; }
th, td { border: 1px solid #DDD; padding: .3em .6em; text-align: right; }
th { background: #F3F6FB; } td.l, th.l { text-align: left; }
.over { color: #B00; font-weight: bold; }
.sev-critical { color: #8B0000; font-weight: bold; } .sev-error { color: #D62728; font-weight: bold; }
.sev-warning { color: #B86E00; } .sev-info { color: #555; }
code { font-size: .85em; word-break: break-all; }
</style>
</head>
<body>
<header>
<h1>Capacity report: {{ m.cluster }}</h1>
<p class="meta">Snapshot taken {{ m.taken_at or "at an unknown time" }}</p>
</header>

<section id="summary">
<h2>Summary</h2>
<ul class="kpis">
{% for label, value in kpis %}<li><b>{{ value }}</b>{{ label }}</li>
{% endfor %}</ul>
{% if m.notes %}<div class="missing"><p><b>Parts of this run are missing; the sections that need them say so.</b></p>
<ul>{% for stage, note in m.notes|dictsort %}<li>{{ stage }}: {{ note }}</li>{% endfor %}</ul></div>{% endif %}
{% if m.warnings %}<p><b>Planner warnings:</b></p><ul>{% for w in m.warnings %}<li>{{ w }}</li>{% endfor %}</ul>{% endif %}
</section>

<section id="pools">
<h2>Pool utilisation</h2>
{% if charts.pools %}
<figure class="chart" id="chart-pools">{{ charts.pools }}<figcaption>Share of each pool's capacity in use now, at the
forecast horizon with today's placement, and after the plan (including brokers it adds). Dashed: the pool's headroom
limit. The table's last share is the forecast load over the capacity left with the policy's tolerated broker failures
down (the largest brokers of each dimension), after the plan when there is one.</figcaption></figure>
<table><tr><th class="l">pool</th><th class="l">dimension</th><th>capacity</th><th>now</th><th>at forecast</th>
<th>after the plan</th><th>with failures</th><th>headroom</th></tr>
{% for r in m.pools %}<tr><td class="l">{{ r.pool }}</td><td class="l">{{ r.dimension|dimlabel }}</td>
<td>{{ r.capacity|capacity(r.dimension) }}</td>
{% for v in (r.now, r.forecast, r.after, r.failures) %}<td{% if v is not none and r.headroom is not none and v > r.headroom %} class="over"{% endif %}>{{ v|pct }}</td>{% endfor %}
<td>{{ r.headroom|pct }}</td></tr>
{% endfor %}</table>
{% else %}<p class="missing">No pool utilisation: the run has neither a plan nor a snapshot.</p>{% endif %}
</section>

<section id="heatmap">
<h2>Broker heatmap</h2>
{% if charts.heatmap %}
<figure class="chart" id="chart-heatmap">{{ charts.heatmap }}<figcaption>Each column is a broker, grouped by its
current pool (black lines separate pools); green is idle, red is full.</figcaption></figure>
{% else %}<p class="missing">No broker heatmap: the run has neither a plan nor a snapshot.</p>{% endif %}
</section>

<section id="topics">
<h2>Top topics</h2>
{% if charts.throughput %}
<figure class="chart" id="chart-throughput">{{ charts.throughput }}<figcaption>The {{ m.top_throughput|length }}
topics with the most bytes in (p99 minute), with the forecast and its band.</figcaption></figure>
<figure class="chart" id="chart-growth">{{ charts.growth }}<figcaption>The {{ m.top_growth|length }} fastest-growing
topics (growth per day of the daily p99 bytes in).</figcaption></figure>
<table><tr><th class="l">topic</th><th class="l">pool</th><th>p99 now</th><th>forecast (low–high)</th>
<th>growth</th><th>storage now</th><th>storage at forecast</th></tr>
{% for r in m.top_throughput %}<tr><td class="l">{{ r.topic }}</td><td class="l">{{ r.pool or "—" }}</td>
<td>{{ r.bytes_in_p99|mbps }}</td><td>{{ r.forecast|mbps }} ({{ r.low|mbps }}–{{ r.high|mbps }})</td>
<td>{{ r.growth_per_day|growth }}</td><td>{{ r.storage_bytes|gb }}</td><td>{{ r.forecast_storage_bytes|gb }}</td></tr>
{% endfor %}</table>
{% else %}<p class="missing">No topic charts: the run has no topic profile.</p>{% endif %}
</section>

<section id="tenants">
<h2>Tenants and pools</h2>
{% if m.pool_rows %}
<table><tr><th class="l">pool</th><th>brokers now</th><th>brokers after the plan</th><th>brokers to add</th>
<th class="l">tenants</th></tr>
{% for r in m.pool_rows %}<tr><td class="l">{{ r.pool }}</td><td>{{ r.brokers_now }}</td>
<td>{{ "—" if r.brokers_after is none else r.brokers_after }}</td>
<td{% if r.brokers_to_add %} class="over"{% endif %}>{{ "—" if r.brokers_to_add is none else r.brokers_to_add }}</td>
<td class="l">{{ r.tenants|join(", ") or "—" }}</td></tr>
{% endfor %}</table>
{% endif %}
{% if m.tenants %}
<table><tr><th class="l">tenant</th><th class="l">pool</th><th>topics</th><th>bytes in, p99</th><th>storage</th></tr>
{% for r in m.tenants %}<tr><td class="l">{{ r.tenant or "(no tenant)" }}</td><td class="l">{{ r.pool or "(no pool)" }}</td>
<td>{{ r.topics }}</td><td>{{ r.bytes_in_p99|mbps }}</td><td>{{ r.storage_bytes|gb }}</td></tr>
{% endfor %}</table>
{% if not has_policy %}<p class="missing">No policy was given (<code>--policy</code>), so tenants are not known.</p>{% endif %}
{% else %}<p class="missing">No topics: the run has no snapshot, plan or profile.</p>{% endif %}
</section>

<section id="batches">
<h2>Reassignment batches</h2>
{% if charts.batches %}
<figure class="chart" id="chart-batches">{{ charts.batches }}<figcaption>{{ m.batches|length }} batch{{ "" if m.batches|length == 1 else "es" }},
{{ total_moved|gb }} in all, about {{ total_seconds|duration }} at the planned throttles.</figcaption></figure>
<table><tr><th>batch</th><th class="l">phase</th><th>partitions</th><th>moved</th><th>throttle</th><th>estimated</th></tr>
{% for b in m.batches %}<tr><td>{{ b.batch }}</td><td class="l">{{ b.phase }}</td><td>{{ b.partitions }}</td>
<td>{{ b.moved_bytes|gb }}</td><td>{{ b.throttle_bps|mbps }}</td><td>{{ b.estimated_seconds|duration }}</td></tr>
{% endfor %}</table>
{% else %}<p class="missing">No reassignment batches: {{ m.notes.get("bundle") or "the plan moves nothing" }}.</p>{% endif %}
</section>

<section id="findings">
<h2>Audit findings</h2>
{% if m.findings is none %}<p class="missing">No audit: {{ m.notes.get("audit") }}.</p>
{% elif not m.findings %}<p>The audit found nothing: the cluster honours its pools.</p>
{% else %}
<figure class="chart" id="chart-findings">{{ charts.findings }}<figcaption>{{ m.findings|length }} findings.
</figcaption></figure>
<table><tr><th class="l">severity</th><th class="l">kind</th><th class="l">pool</th><th>broker</th><th class="l">partition</th>
<th class="l">fix</th></tr>
{% for f in m.findings[:max_rows] %}<tr><td class="l sev-{{ f.severity.value }}">{{ f.severity.value }}</td>
<td class="l">{{ f.kind }}</td><td class="l">{{ f.pool or "" }}</td><td>{{ "" if f.broker is none else f.broker }}</td>
<td class="l">{{ f.topic or "" }}{% if f.partition is not none %}-{{ f.partition }}{% endif %}</td>
<td class="l"><code>{{ f.fix }}</code></td></tr>
{% endfor %}</table>
{% if m.findings|length > max_rows %}<p>{{ m.findings|length - max_rows }} more in <code>audit/findings.md</code>.</p>{% endif %}
{% endif %}
</section>
</body>
</html>
"""

MARKDOWN_TEMPLATE = r"""# Capacity report: {{ m.cluster }}

Snapshot taken {{ m.taken_at or "at an unknown time" }}.

## Summary

| | |
|---|---|
{% for label, value in kpis %}| {{ label }} | {{ value }} |
{% endfor %}
{% if m.notes %}
Parts of this run are missing; the sections that need them say so.

{% for stage, note in m.notes|dictsort %}- {{ stage }}: {{ note }}
{% endfor %}{% endif %}
{% for w in m.warnings %}- planner warning: {{ w }}
{% endfor %}
## Pool utilisation

{% if charts.pools %}![Pool utilisation per dimension](charts/pools.svg)

| pool | dimension | capacity | now | at forecast | after the plan | with failures | headroom |
|---|---|--:|--:|--:|--:|--:|--:|
{% for r in m.pools %}| {{ r.pool }} | {{ r.dimension|dimlabel }} | {{ r.capacity|capacity(r.dimension) }} | {{ r.now|pct }} | {{ r.forecast|pct }} | {{ r.after|pct }} | {{ r.failures|pct }} | {{ r.headroom|pct }} |
{% endfor %}{% else %}No pool utilisation: the run has neither a plan nor a snapshot.
{% endif %}
## Broker heatmap

{% if charts.heatmap %}![Broker heatmap](charts/heatmap.svg)
{% else %}No broker heatmap: the run has neither a plan nor a snapshot.
{% endif %}
## Top topics

{% if charts.throughput %}![Top topics by throughput](charts/throughput.svg)

![Top topics by growth](charts/growth.svg)

| topic | pool | p99 now | forecast (low–high) | growth | storage now | storage at forecast |
|---|---|--:|--:|--:|--:|--:|
{% for r in m.top_throughput %}| {{ r.topic }} | {{ r.pool or "—" }} | {{ r.bytes_in_p99|mbps }} | {{ r.forecast|mbps }} ({{ r.low|mbps }}–{{ r.high|mbps }}) | {{ r.growth_per_day|growth }} | {{ r.storage_bytes|gb }} | {{ r.forecast_storage_bytes|gb }} |
{% endfor %}{% else %}No topic charts: the run has no topic profile.
{% endif %}
## Tenants and pools

{% if m.pool_rows %}| pool | brokers now | brokers after the plan | brokers to add | tenants |
|---|--:|--:|--:|---|
{% for r in m.pool_rows %}| {{ r.pool }} | {{ r.brokers_now }} | {{ "—" if r.brokers_after is none else r.brokers_after }} | {{ "—" if r.brokers_to_add is none else r.brokers_to_add }} | {{ r.tenants|join(", ") or "—" }} |
{% endfor %}
{% endif %}{% if m.tenants %}| tenant | pool | topics | bytes in, p99 | storage |
|---|---|--:|--:|--:|
{% for r in m.tenants %}| {{ r.tenant or "(no tenant)" }} | {{ r.pool or "(no pool)" }} | {{ r.topics }} | {{ r.bytes_in_p99|mbps }} | {{ r.storage_bytes|gb }} |
{% endfor %}{% if not has_policy %}
No policy was given (`--policy`), so tenants are not known.
{% endif %}{% else %}No topics: the run has no snapshot, plan or profile.
{% endif %}
## Reassignment batches

{% if charts.batches %}![Data moved per batch](charts/batches.svg)

{{ m.batches|length }} batch{{ "" if m.batches|length == 1 else "es" }}, {{ total_moved|gb }} in all, about {{ total_seconds|duration }} at the planned throttles.

| batch | phase | partitions | moved | throttle | estimated |
|--:|---|--:|--:|--:|--:|
{% for b in m.batches %}| {{ b.batch }} | {{ b.phase }} | {{ b.partitions }} | {{ b.moved_bytes|gb }} | {{ b.throttle_bps|mbps }} | {{ b.estimated_seconds|duration }} |
{% endfor %}{% else %}No reassignment batches: {{ m.notes.get("bundle") or "the plan moves nothing" }}.
{% endif %}
## Audit findings

{% if m.findings is none %}No audit: {{ m.notes.get("audit") }}.
{% elif not m.findings %}The audit found nothing: the cluster honours its pools.
{% else %}![Audit findings](charts/findings.svg)

| severity | kind | pool | broker | partition | fix |
|---|---|---|--:|---|---|
{% for f in m.findings[:max_rows] %}| {{ f.severity.value }} | `{{ f.kind }}` | {{ f.pool or "" }} | {{ "" if f.broker is none else f.broker }} | {{ f.topic or "" }}{% if f.partition is not none %}-{{ f.partition }}{% endif %} | `{{ f.fix|replace("|", "\\|") }}` |
{% endfor %}{% if m.findings|length > max_rows %}
{{ m.findings|length - max_rows }} more in `audit/findings.md`.
{% endif %}{% endif %}"""
