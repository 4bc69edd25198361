"""Evaluation reports people can look at: PNG plots (matplotlib, no display needed) and one HTML page of
tables and plots per run. Plain functions over data; nothing here measures anything."""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only: servers and CI have no display

import matplotlib.pyplot as plt


@dataclass(frozen=True)
class Section:
    title: str
    text: str = ""
    columns: Sequence[str] = ()
    rows: Sequence[Sequence[object]] = ()
    plots: Sequence[str] = field(default_factory=tuple)


def _png(figure: plt.Figure) -> bytes:
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=100)
    plt.close(figure)
    return buffer.getvalue()


def bar_chart(labels: Sequence[str], series: dict[str, Sequence[float]], *, title: str, ylabel: str) -> bytes:
    """Grouped horizontal bars: one group per label, one bar per series."""
    figure, axes = plt.subplots(figsize=(8, max(2.5, 0.35 * len(labels) * max(1, len(series)))))
    height = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        positions = [n + i * height for n in range(len(labels))]
        axes.barh(positions, list(values), height=height, label=name)
    axes.set_yticks([n + height * (len(series) - 1) / 2 for n in range(len(labels))], labels=list(labels))
    axes.invert_yaxis()
    axes.set_xlabel(ylabel)
    axes.set_title(title)
    if len(series) > 1:
        axes.legend(loc="lower right")
    return _png(figure)


def line_chart(
    x: Sequence[float],
    series: dict[str, Sequence[float]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    marker_x: float | None = None,
    marker_label: str = "",
) -> bytes:
    figure, axes = plt.subplots(figsize=(8, 4))
    for name, values in series.items():
        axes.plot(list(x), list(values), marker=".", label=name)
    if marker_x is not None:
        axes.axvline(marker_x, color="black", linestyle="--", linewidth=1, label=marker_label)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend()
    return _png(figure)


def tradeoff_chart(
    curves: Mapping[str, Sequence[tuple[float, float]]],
    chosen: Mapping[str, Sequence[tuple[str, float, float]]],
    *,
    title: str,
) -> bytes:
    """One curve per set of (unanswerable reaching a cut, answerable reaching it) over every cut, with each
    set's cuts in force marked and named: the answer cut (a dot), the suggest cut (a square)."""
    figure, axes = plt.subplots(figsize=(6, 6))
    markers = "os^"
    for name, points in curves.items():
        (line,) = axes.plot([x for x, _ in points], [y for _, y in points], label=name)
        for (cut, x, y), marker in zip(chosen.get(name, ()), markers, strict=False):
            axes.plot([x], [y], marker=marker, color=line.get_color(), markersize=8)
            axes.annotate(f"{cut} {y:.0%} / {x:.0%}", (x, y), textcoords="offset points", xytext=(6, -12))
    axes.plot([0, 1], [0, 1], color="grey", linestyle=":", linewidth=1)
    axes.set_xlabel("unanswerable questions at or above the cut")
    axes.set_ylabel("answerable questions at or above the cut")
    axes.set_xlim(0, 1)
    axes.set_ylim(0, 1.02)
    axes.set_title(title)
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right")
    return _png(figure)


def encode(plots: dict[str, bytes]) -> dict[str, str]:
    """Plots as base64 text, for a JSON field."""
    return {name: base64.b64encode(data).decode() for name, data in plots.items()}


def _cell(value: object) -> str:
    return html.escape(f"{value:.3f}" if isinstance(value, float) else str(value))


def write_report(directory: Path, title: str, sections: Sequence[Section], plots: dict[str, bytes]) -> Path:
    """DIR/index.html with every section's text, table and plots (written beside it as PNG files)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in plots.items():
        (directory / f"{name}.png").write_bytes(data)
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}"
        "table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;"
        "text-align:left}img{max-width:100%}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    for section in sections:
        parts.append(f"<h2>{html.escape(section.title)}</h2>")
        if section.text:
            parts.append(f"<p>{html.escape(section.text)}</p>")
        if section.columns:
            head = "".join(f"<th>{html.escape(c)}</th>" for c in section.columns)
            body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>" for row in section.rows)
            parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        for name in section.plots:
            parts.append(f"<img src='{html.escape(name)}.png' alt='{html.escape(name.replace('_', ' '))}'>")
    parts.append("</body></html>")
    index = directory / "index.html"
    index.write_text("\n".join(parts), encoding="utf-8")
    return index
