"""How well masking removes personal data and keeps what the assistant needs, on a labelled message set.

Recall of a kind is the share of its labelled values that the masked text no longer contains (what a
reader of the provider's request, the turn record or the logs could still find); "fully masked" is the
stricter share whose every letter and digit fell inside a masked span. Precision is the share of masked
spans that overlap some labelled personal value, counted by the kind masking gave the span. Identifiers
the assistant needs (order numbers, error codes, ...) that the masked text no longer contains are
counted apart, as kept identifiers lost.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from answering.privacy.masking import MaskedText, PiiSpan, mask_pii
from lab.errors import PiiDatasetError
from lab.pii_set import KEPT_KINDS, PERSONAL_KINDS, LabelledSpan, PiiMessage

PII_TEST_SET = Path(__file__).resolve().parent / "sample" / "pii_test.jsonl"


def _spans(data: object, allowed: Sequence[str], text: str, where: str) -> tuple[LabelledSpan, ...]:
    if not isinstance(data, list):
        raise PiiDatasetError(f"{where}: expected a list of spans.")
    spans = []
    for item in data:
        if not isinstance(item, dict) or not {"kind", "start", "end", "value"} <= item.keys():
            raise PiiDatasetError(f"{where}: each span needs kind, start, end and value.")
        if item["kind"] not in allowed:
            raise PiiDatasetError(f"{where}: unknown kind {item['kind']!r}; known: {', '.join(allowed)}.")
        start, end = item["start"], item["end"]
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
            raise PiiDatasetError(f"{where}: span {start}..{end} lies outside the text.")
        if text[start:end] != item["value"]:
            raise PiiDatasetError(f"{where}: text[{start}:{end}] is {text[start:end]!r}, not {item['value']!r}.")
        spans.append(LabelledSpan(item["kind"], start, end, item["value"]))
    return tuple(spans)


def read_pii_set(path: Path) -> list[PiiMessage]:
    """The messages of a JSONL set written by lab.pii_set, each line checked."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise PiiDatasetError(f"Cannot read {path}: {exc.strerror}.") from None
    messages = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path.name} line {number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise PiiDatasetError(f"{where}: not JSON ({exc.msg}).") from None
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            raise PiiDatasetError(f"{where}: expected an object with a text.")
        text = data["text"]
        messages.append(
            PiiMessage(
                text,
                _spans(data.get("personal", []), PERSONAL_KINDS, text, f"{where}, personal"),
                _spans(data.get("kept", []), KEPT_KINDS, text, f"{where}, kept"),
                str(data.get("template", "")),
            )
        )
    if not messages:
        raise PiiDatasetError(f"{path.name} holds no messages.")
    return messages


def fully_masked(value: LabelledSpan, spans: Sequence[PiiSpan], text: str) -> bool:
    """True when every letter and digit of the value lies inside some masked span."""
    return all(
        any(span.start <= i < span.end for span in spans) for i in range(value.start, value.end) if text[i].isalnum()
    )


def overlaps(span: PiiSpan, labelled: Sequence[LabelledSpan]) -> bool:
    return any(span.start < value.end and value.start < span.end for value in labelled)


@dataclass
class _Tally:
    total: int = 0
    hits: int = 0
    full: int = 0


@dataclass
class PiiFigures:
    messages: int
    recall: dict[str, float]  # labelled kind -> share absent from the masked text
    fully_masked: dict[str, float]  # labelled kind -> share with every character masked
    labelled: dict[str, int]
    precision: dict[str, float]  # masked kind -> share of its spans overlapping a labelled value
    masked_spans: dict[str, int]
    kept_survived: dict[str, float]  # kept kind -> share still in the masked text
    kept_lost: list[str] = field(default_factory=list)  # the kept values masking destroyed
    missed: dict[str, list[str]] = field(default_factory=dict)  # labelled kind -> messages still holding one
    p50_ms: float = 0.0  # wall-clock time per message
    p95_ms: float = 0.0
    cpu_p50_ms: float = 0.0  # the process's CPU time per message: what the wall time is on an idle core

    def as_json(self) -> dict[str, object]:
        return dict(self.__dict__)


def _share(tally: _Tally, attribute: str = "hits") -> float:
    return round(getattr(tally, attribute) / tally.total, 3) if tally.total else 0.0


def evaluate_pii(
    messages: Sequence[PiiMessage], *, mask: Callable[[str], MaskedText] = mask_pii, examples: int = 5
) -> PiiFigures:
    mask(messages[0].text)  # the first call loads the analyzer; it is not what a message costs
    recall: dict[str, _Tally] = {}
    precision: dict[str, _Tally] = {}
    kept: dict[str, _Tally] = {}
    kept_lost: list[str] = []
    missed: dict[str, list[str]] = {}
    timings = []
    cpu_timings = []
    for message in messages:
        started, cpu_started = time.perf_counter(), time.process_time()
        masked = mask(message.text)
        timings.append((time.perf_counter() - started) * 1000)
        cpu_timings.append((time.process_time() - cpu_started) * 1000)
        for value in message.personal:
            tally = recall.setdefault(value.kind, _Tally())
            tally.total += 1
            if value.value not in masked.text:
                tally.hits += 1
            elif len(missed.setdefault(value.kind, [])) < examples:
                missed[value.kind].append(f"{value.value!r} in {message.text!r}")
            tally.full += fully_masked(value, masked.spans, message.text)
        for span in masked.spans:
            tally = precision.setdefault(span.kind, _Tally())
            tally.total += 1
            tally.hits += overlaps(span, message.personal)
        for value in message.kept:
            tally = kept.setdefault(value.kind, _Tally())
            tally.total += 1
            if value.value in masked.text:
                tally.hits += 1
            else:
                kept_lost.append(f"{value.kind} {value.value!r} in {masked.text!r}")
    quantiles = statistics.quantiles(timings, n=20, method="inclusive") if len(timings) > 1 else timings * 19
    return PiiFigures(
        messages=len(messages),
        recall={kind: _share(t) for kind, t in sorted(recall.items())},
        fully_masked={kind: _share(t, "full") for kind, t in sorted(recall.items())},
        labelled={kind: t.total for kind, t in sorted(recall.items())},
        precision={kind: _share(t) for kind, t in sorted(precision.items())},
        masked_spans={kind: t.total for kind, t in sorted(precision.items())},
        kept_survived={kind: _share(t) for kind, t in sorted(kept.items())},
        kept_lost=kept_lost,
        missed=missed,
        p50_ms=round(statistics.median(timings), 1),
        p95_ms=round(quantiles[18], 1),
        cpu_p50_ms=round(statistics.median(cpu_timings), 1),
    )


# The kind masking gives each labelled kind: a street address is masked as a LOCATION, like a city.
_MASKED_AS = {"STREET_ADDRESS": "LOCATION"}


def pii_table(figures: PiiFigures, *, lost_shown: int = 10) -> list[str]:
    """The figures as the lines of a plain-text table."""
    lines = [
        f"{figures.messages} messages · masking p50 {figures.p50_ms} ms, p95 {figures.p95_ms} ms per message "
        f"(CPU time p50 {figures.cpu_p50_ms} ms)",
        f"{'kind':<16}{'values':>7}{'recall':>8}{'fully':>7}  {'masked as':<14}{'spans':>6}{'precision':>10}",
    ]
    shown = set()
    for kind, total in figures.labelled.items():
        masked_as = _MASKED_AS.get(kind, kind)
        shown.add(masked_as)
        precision = figures.precision.get(masked_as)
        lines.append(
            f"{kind:<16}{total:>7}{figures.recall[kind]:>8.3f}{figures.fully_masked[kind]:>7.3f}  {masked_as:<14}"
            f"{figures.masked_spans.get(masked_as, 0):>6}{'' if precision is None else f'{precision:.3f}':>10}"
        )
    for kind, precision in figures.precision.items():
        if kind not in shown:
            lines.append(f"{'(none labelled)':<38}  {kind:<14}{figures.masked_spans[kind]:>6}{precision:>10.3f}")
    survived = " · ".join(f"{kind} {share:.3f}" for kind, share in figures.kept_survived.items())
    lines.append(f"kept identifiers surviving: {survived}")
    lines.append(f"kept identifiers lost: {len(figures.kept_lost)}")
    lines += [f"  {lost}" for lost in figures.kept_lost[:lost_shown]]
    return lines
