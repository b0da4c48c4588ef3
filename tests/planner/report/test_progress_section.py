"""The report's "Reassignment progress" section: shown when the run holds progress/progress.json (from
`poolplan progress --out`), its figures those of the JSON, the same in the HTML and the Markdown."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

import pytest

from planner.emit.progress import Progress
from planner.report import build_model, load_run, render_report
from pools.atomic import write_json
from pools.units import format_bytes, format_duration, format_percent, format_rate

from .conftest import build_run


def _progress(stuck: tuple[str, ...] = ("a-x-0",), throttles_left: bool = False, complete: bool = False) -> Progress:
    rows = ({"done_bytes": 6_000_000_000, "total_bytes": 20_000_000_000, "replicas": 3, "rate_Bps": 50_000_000.0,
             "eta_seconds": 280.0},)
    return Progress(6_000_000_000, 20_000_000_000, 50_000_000.0, 280.0, ({"batch": 1} | rows[0],),
                    ({"broker": 7} | rows[0],), stuck, (), throttles_left, complete)


def _render(run):
    model = build_model(load_run(run))
    return model, render_report(model, has_policy=False)


def _section(markdown: str) -> str:
    start = markdown.index("Reassignment progress")
    return markdown[start:markdown.index("\n#", start)]


@pytest.mark.slow
def test_no_section_without_a_progress_file(tmp_path):
    model, out = _render(build_run(tmp_path / "run"))
    assert model.progress is None and "progress" not in model.notes
    assert "Reassignment progress" not in out.markdown and "Reassignment progress" not in out.html


@pytest.mark.slow
def test_the_section_shows_the_figures_of_progress_json(tmp_path):
    run = build_run(tmp_path / "run")
    p = _progress()
    write_json(run / "progress" / "progress.json", p.to_dict())
    model, out = _render(run)
    assert model.progress == p
    text = _section(out.markdown)
    assert (f"Stop: {format_bytes(p.done_bytes)} of {format_bytes(p.total_bytes)} copied "
            f"({format_percent(p.done_bytes / p.total_bytes)}); rate {format_rate(p.rate)}") in text
    assert f"ETA {format_duration(p.eta_seconds)}" in text
    assert "| 1 | 3 | 6.00 GB | 20.0 GB | 50.0 MB/s | 5 min |" in text
    assert "| 7 | 3 | 6.00 GB | 20.0 GB | 50.0 MB/s | 5 min |" in text
    assert "a-x-0" in text and "Reassignment progress" in out.html
    # the page and its Markdown twin carry the same numbers
    html = re.sub(r"<svg.*?</svg>|<style>.*?</style>", "", out.html, flags=re.S)
    plain = re.sub(r"<[^>]+>", " ", html).replace("&#39;", "'").replace("&#34;", '"').replace("&amp;", "&")
    numbers = re.compile(r"\d[\d,.]*")
    assert Counter(numbers.findall(plain)) == Counter(numbers.findall(out.markdown))


def test_done_with_throttles_left_says_so(tmp_path):
    run = build_run(tmp_path / "run")
    write_json(run / "progress" / "progress.json", _progress((), throttles_left=True, complete=True).to_dict())
    text = _section(_render(run)[1].markdown)
    assert text.splitlines()[2].startswith("Done:") and "throttles are still set" in text


def test_an_unreadable_progress_file_is_named_not_fatal(tmp_path):
    run = build_run(tmp_path / "run")
    doc = _progress().to_dict()
    del doc["total_bytes"]
    write_json(run / "progress" / "progress.json", doc)
    model, out = _render(run)
    assert model.progress is None and "progress/progress.json could not be read" in model.notes["progress"]
    assert "total_bytes" in _section(out.markdown)


def test_the_section_says_why_to_stop_and_what_the_describe_captures_show(tmp_path):
    """Stop reasons and commands, slow copies, ISR joins, recovered min ISR and leaders, from progress.json."""
    run = build_run(tmp_path / "run")
    p = replace(_progress(()), under_min_isr=({"partition": "a-x-1", "leader": 3, "isr": [3], "min_isr": 2,
                                               "capture": "d.txt"},),
                stop={"reasons": ["under min ISR: a-x-1 (leader 3, Isr 3 against min.insync.replicas 2, in d.txt)"],
                      "commands": ["kafka-reassign-partitions.sh --bootstrap-server b --reassignment-json-file "
                                   "batches/001.json --cancel"]},
                slow=({"partition": "a-x-2", "broker": 7, "batch": 1, "rate_Bps": 1000.0,
                       "throttle_share_Bps": 50_000_000.0},),
                isr={"joined": [{"partition": "a-x-2", "broker": 7}], "pending": [{"partition": "a-x-3", "broker": 8}]},
                was_under_min_isr=({"partition": "a-x-4", "capture": "d0.txt"},),
                leaders_not_preferred=({"partition": "a-x-5", "leader": 2, "preferred": 7},))
    write_json(run / "progress" / "progress.json", p.to_dict())
    model, out = _render(run)
    assert model.progress == p
    text = _section(out.markdown)
    assert text.splitlines()[2].startswith("Stop:")
    for fragment in ("under min ISR: a-x-1 (leader 3", "batches/001.json --cancel", "a-x-2 onto broker 7",
                     "not yet:", "a-x-3 on broker 8", "a-x-4 (d0.txt)", "a-x-5: leader 2, preferred 7"):
        assert fragment in text, fragment
