"""The report's HTML template: one self-contained page (inline CSS and SVG, no scripts, no URLs) for a `Document`."""

__all__ = ["HTML_TEMPLATE"]

HTML_TEMPLATE = r"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ doc.title }}</title>
<style>
body { font-family: "DejaVu Sans", Arial, sans-serif; margin: 0 auto; max-width: 1100px; padding: 1.5em; color: #222; }
h1 { margin-bottom: .2em; } h2 { border-bottom: 2px solid #4C72B0; padding-bottom: .2em; margin-top: 2em; }
.meta { color: #555; } .missing { background: #FFF4E5; border-left: 4px solid #FF9F1C; padding: .5em 1em; }
.recommendation { background: #EEF4EA; border-left: 4px solid #55A868; padding: .8em 1em; font-size: 1.05em;
  line-height: 1.5; }
.kpis { display: flex; flex-wrap: wrap; gap: 1em; padding: 0; list-style: none; }
.kpis li { background: #F3F6FB; border-radius: 6px; padding: .6em 1em; min-width: 9em; }
.kpis b { display: block; font-size: 1.4em; }
figure.chart { margin: 1em 0; } figure.chart svg { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: .9em; }
table { border-collapse: collapse; margin: 1em 0; font-size: .9em; }
th, td { border: 1px solid #DDD; padding: .3em .6em; text-align: right; vertical-align: top; }
th { background: #F3F6FB; } td.l, th.l { text-align: left; } td:not(.l) { white-space: nowrap; }
.w { white-space: nowrap; }
tr.detail td { border-top: none; background: #FAFAFA; }
.over { color: #B00; font-weight: bold; } .ok { color: #2E7D32; }
.sev-critical { color: #8B0000; font-weight: bold; } .sev-error { color: #D62728; font-weight: bold; }
.sev-warning { color: #B86E00; } .sev-info { color: #555; }
code { font-size: .85em; }
code.fix { display: block; white-space: pre-wrap; overflow-x: auto; }
</style>
</head>
<body>
<header>
<h1>{{ doc.title }}</h1>
<p class="meta">{{ doc.subtitle|inline }}</p>
</header>
{% for s in doc.sections %}
<section id="{{ s.id }}">
<h2>{{ s.title }}</h2>
{% for b in s.blocks %}{% set k = kind(b) %}
{%- if k == "Para" %}<p{% if b.cls %} class="{{ b.cls }}"{% endif %}>{{ b.text|inline }}</p>
{%- elif k == "Items" %}<div{% if b.cls %} class="{{ b.cls }}"{% endif %}><p>{{ b.title|inline }}</p>
<ul>{% for i in b.items %}<li>{{ i|inline }}</li>{% endfor %}</ul></div>
{%- elif k == "Kpis" %}<ul class="kpis">
{% for label, value in b.items %}<li><b>{{ value }}</b>{{ label }}</li>
{% endfor %}</ul>
{%- elif k == "Chart" %}<figure class="chart" id="chart-{{ b.name }}">{{ charts[b.name] }}<figcaption>{{ b.caption|inline }}</figcaption></figure>
{%- elif k == "Table" %}<table id="table-{{ b.id }}">
<thead><tr>{% for h in b.headers %}<th{% if loop.index0 in b.left %} class="l"{% endif %}>{{ h }}</th>{% endfor %}</tr></thead>
<tbody>
{% for row in b.rows %}{% set i = loop.index0 %}<tr>{% for c in row %}<td{{ cls(c.cls, loop.index0 in b.left) }}>{{ c.text|words }}</td>{% endfor %}</tr>
{% if b.details and b.details[i] %}<tr class="detail"><td class="l" colspan="{{ b.headers|length }}"><code class="fix">{{ b.details[i]|words }}</code></td></tr>
{% endif %}{% endfor %}</tbody>
</table>
{%- endif %}
{% endfor %}</section>
{% endfor %}
</body>
</html>
"""
