"""The analytics page's plots: PNG drawn on the server (matplotlib's Agg, no display), embedded as data: URIs, which
the pages' Content-Security-Policy allows for images (img-src 'self' data:)."""

from __future__ import annotations

import base64
import io
import math

import matplotlib.dates as mdates
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from insights.analytics import COLUMNS, Report

COLUMN_BY_KEY = {column.key: column for column in COLUMNS}


def _data_uri(figure: Figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def _figure() -> tuple[Figure, Axes]:
    # A Figure of its own, not pyplot's global state: pages are drawn in server threads. Fixed margins, as
    # a tight layout doubles the drawing time (about 0.6 s instead of 1.2 s for the three plots).
    figure = Figure(figsize=(9, 3.2))
    figure.subplots_adjust(left=0.08, right=0.98, top=0.9, bottom=0.12)
    return figure, figure.subplots()


def _day_numbers(report: Report) -> list[float]:
    return [float(mdates.date2num(day)) for day, _ in report.days]


def _date_axis(axes: Axes, days: list[float]) -> None:
    axes.xaxis_date()
    axes.xaxis.set_major_formatter(mdates.DateFormatter("%d %b"))
    # The whole range, always: autoscaling looks only at the days with data, so a line with one point drew
    # an axis a few minutes wide (every tick labelled with the same day).
    axes.set_xlim(days[0] - 0.5, days[-1] + 0.5)


def _daily_lines(report: Report, series: dict[str, str], *, title: str, ylabel: str, percent: bool) -> str:
    days = _day_numbers(report)
    figure, axes = _figure()
    for name, key in series.items():
        # A day without data is a gap in the line, not a zero.
        points = [COLUMN_BY_KEY[key].value(figures) for _, figures in report.days]
        axes.plot(days, [math.nan if p is None else p for p in points], marker=".", label=name)
    if percent:
        axes.set_ylim(0, 1.02)
        axes.yaxis.set_major_formatter(lambda y, _: f"{y:.0%}")
    axes.set_title(title)
    axes.set_ylabel(ylabel)
    _date_axis(axes, days)
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left", fontsize="small")
    return _data_uri(figure)


def _volume(report: Report) -> str:
    offsets = _day_numbers(report)
    figure, axes = _figure()
    width = 0.4
    axes.bar(
        [x - width / 2 for x in offsets],
        [f.conversations.conversations for _, f in report.days],
        width,
        label="conversations",
    )
    axes.bar([x + width / 2 for x in offsets], [f.turns.turns for _, f in report.days], width, label="turns")
    _date_axis(axes, offsets)
    axes.set_title("Conversations and turns per day")
    axes.grid(alpha=0.3, axis="y")
    axes.legend(loc="upper left", fontsize="small")
    return _data_uri(figure)


def report_plots(report: Report) -> list[tuple[str, str]]:
    """(alt text, data: URI) for each plot of the report's days; the lines are columns of the table."""
    return [
        ("Conversations and turns per day", _volume(report)),
        (
            "Outcomes per day: answered and suggested shares, suggestions answered yes, hand-off rate, thumbs up, "
            "resolution and durable resolution",
            _daily_lines(
                report,
                {
                    "answered": "answered_share",
                    "suggested": "suggested_share",
                    "suggestion: yes": "suggestion_yes_share",
                    "handed off": "handoff_rate",
                    "thumbs up": "thumbs_up_share",
                    "resolved (24 h)": "resolution_rate",
                    "durable (7 d)": "durable_resolution_rate",
                },
                title="Outcomes per day",
                ylabel="share",
                percent=True,
            ),
        ),
        (
            "Reply latency per day: median and 95th percentile, milliseconds",
            _daily_lines(
                report,
                {"median": "latency_median_ms", "p95": "latency_p95_ms"},
                title="Reply latency per day",
                ylabel="ms",
                percent=False,
            ),
        ),
    ]
