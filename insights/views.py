"""The staff's outcome analytics page and its CSV export: the same filters, validated the same way."""

from __future__ import annotations

import csv
from datetime import date, timedelta
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from conversations.views import staff_required
from insights.analytics import COLUMNS, Column, Figures, Period, check_period, definitions, outcome_report
from insights.plots import report_plots
from knowledge.models import Collection

DEFAULT_SPAN_DAYS = 30
DAY_INPUT = forms.DateInput(format="%Y-%m-%d", attrs={"type": "date"})


class CollectionField(forms.ModelChoiceField):
    """A collection by its name (as the docs and the admin call it) or its id."""

    def to_python(self, value: Any) -> Collection | None:
        text = str(value or "").strip()
        if text and not text.isdigit():
            found = Collection.objects.filter(name=text).first()
            if found is None:
                raise forms.ValidationError(self.error_messages["invalid_choice"], code="invalid_choice")
            return found
        return super().to_python(text)


class AnalyticsFilter(forms.Form):
    """The range and collection asked for; a missing end is today, a missing start 30 days before the end."""

    start = forms.DateField(
        label="Start date",
        required=False,
        widget=DAY_INPUT,
        error_messages={"invalid": "Enter the start date as YYYY-MM-DD."},
    )
    end = forms.DateField(
        label="End date",
        required=False,
        widget=DAY_INPUT,
        error_messages={"invalid": "Enter the end date as YYYY-MM-DD."},
    )
    collection = CollectionField(
        queryset=Collection.objects.order_by("name"),
        label="Collection",
        required=False,
        empty_label="All collections",
        error_messages={"invalid_choice": "There is no such collection."},
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        end: date = data.get("end") or timezone.localdate()
        start: date = data.get("start") or end - timedelta(days=DEFAULT_SPAN_DAYS - 1)
        problems = check_period(start, end)
        if problems:
            raise forms.ValidationError(problems)
        data["start"], data["end"] = start, end
        return data

    def period(self) -> Period:
        collection = self.cleaned_data["collection"]
        return Period(self.cleaned_data["start"], self.cleaned_data["end"], collection.pk if collection else None)

    def effective(self) -> dict[str, str]:
        """The cleaned filters, defaults filled in, as query values (the CSV link, the form shown again)."""
        collection = self.cleaned_data["collection"]
        return {
            "start": self.cleaned_data["start"].isoformat(),
            "end": self.cleaned_data["end"].isoformat(),
            "collection": str(collection.pk) if collection else "",
        }

    def problems(self) -> list[str]:
        """Every error, each naming the field it is about."""
        return [
            str(message) if name == NON_FIELD_ERRORS else f"{self.fields[name].label}: {message}"
            for name, messages in self.errors.items()
            for message in messages
        ]


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def shown(column: Column, figures: Figures) -> str:
    """A figure as the page shows it; "—" where there is nothing to show (no rated reply, no judged
    conversation, no latency recorded)."""
    value = column.value(figures)
    if value is None:
        return "—"
    if column.kind == "share":
        return f"{value:.1%}"
    if column.kind == "ms":
        return f"{value:,.0f} ms"
    if column.kind == "s":
        return _duration(value)
    return f"{value:,}"


@require_GET
@staff_required
def analytics(request: HttpRequest) -> HttpResponse:
    form = AnalyticsFilter(request.GET)
    if not form.is_valid():
        context = {"form": form, "problems": form.problems(), "definitions": definitions()}
        return render(request, "insights/analytics.html", context, status=400)
    report = outcome_report(form.period())
    effective = form.effective()
    context = {
        "form": AnalyticsFilter(effective),
        "report": report,
        "headings": [column.heading for column in COLUMNS],
        "totals": [shown(column, report.totals) for column in COLUMNS],
        "days": [(day, [shown(column, figures) for column in COLUMNS]) for day, figures in report.days],
        "collections": [(name, [shown(column, figures) for column in COLUMNS]) for name, figures in report.collections],
        "plots": report_plots(report),
        "csv_url": f"{reverse('staff-analytics-csv')}?{urlencode(effective)}",
        "time_zone": settings.TIME_ZONE,
        "definitions": definitions(),
    }
    return render(request, "insights/analytics.html", context)


@require_GET
@staff_required
def analytics_csv(request: HttpRequest) -> HttpResponse:
    """The per-day table as CSV: raw values (shares between 0 and 1, latency in ms, staff reply in seconds),
    an empty cell where the page shows "—"."""
    form = AnalyticsFilter(request.GET)
    if not form.is_valid():
        return HttpResponse("\n".join(form.problems()), status=400, content_type="text/plain; charset=utf-8")
    period = form.period()
    report = outcome_report(period)
    collection = form.cleaned_data["collection"]
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    filename = f"analytics-{period.start:%Y%m%d}-{period.end:%Y%m%d}{f'-{collection.name}' if collection else ''}.csv"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerow(["day", "collection", *[column.key for column in COLUMNS]])
    for day, figures in report.days:
        values = [column.value(figures) for column in COLUMNS]
        writer.writerow(
            [day.isoformat(), collection.name if collection else "all", *["" if v is None else v for v in values]]
        )
    return response
