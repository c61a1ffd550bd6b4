"""Findings read the same, with sensible numbers, in the terminal, report.html and summary.md."""

import io
import re

from rich.console import Console

from harness.diagnosis import Finding
from harness.report import evidence
from harness.report.html import findings_section
from harness.report.markdown import findings_lines
from harness.report.terminal import render_findings

LONG_FLOAT = re.compile(r"\d\.\d{6,}")  # 0.6037760623017959: what the issue saw

SCALING = Finding(
    "NEGATIVE_SCALING",
    "warning",
    ["a", "b"],
    "games_per_s falls from 10.4 at 4 workers to 3.99 at 128: more workers only add contention",
    {
        "rate": "games_per_s",
        "medians": {"4": 10.437261, "128": 3.9912345678},
        "drops": [
            {
                "metric": "games_per_s",
                "before": 10.437261,
                "before_at": 4,
                "after": 3.9912345678,
                "after_at": 128,
                "at": "workers",
                "ratio": 0.3824125537760623,
                "low": 0.3137760623017959,
                "high": 0.4537760623017959,
            }
        ],
    },
)


def test_numbers_have_four_significant_digits_and_large_ones_read_whole():
    assert evidence.number(0.6037760623017959) == "0.6038"
    assert evidence.number(23980.4) == "23,980"
    assert evidence.number(20000) == "20,000"
    assert evidence.number(3.0) == "3"
    assert evidence.number(float("nan")) == "-" and evidence.number(None) == "-"
    assert evidence.number(True) == "true"


def test_a_change_with_an_interval_reads_as_one_sentence():
    (drop,) = SCALING.evidence["drops"]
    assert evidence.change(drop) == "games_per_s 10.44 @4 -> 3.991 @128 workers (0.3824x, 95 % CI 0.3138-0.4538)"
    collapsed = {"ratio": 1.5, "low": 1.5, "high": 1.5}
    assert evidence.interval(collapsed) == "1.5x (one repeat a side: no interval)"
    assert dict(evidence.rows(SCALING.evidence))["medians"] == "@4 10.44, @128 3.991"


def test_terminal_html_and_markdown_show_the_same_rows_without_long_floats():
    out = io.StringIO()
    render_findings([SCALING], Console(file=out, width=200))
    terminal = out.getvalue()
    html = findings_section([SCALING.to_json()])
    markdown = "\n".join(findings_lines([SCALING.to_json()]))
    sentence = "games_per_s 10.44 @4 -&gt; 3.991 @128 workers (0.3824x, 95 % CI 0.3138-0.4538)"
    assert sentence.replace("&gt;", ">") in terminal
    assert sentence in html and sentence in markdown
    for text in (terminal, html, markdown):
        assert not LONG_FLOAT.search(text), text
    assert 'class="evidence"' in html and "<br>" in markdown
