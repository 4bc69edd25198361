"""Admin building blocks every app's staff screens use: read-only pages and inlines, links, small tables."""

from collections.abc import Iterable, Sequence
from typing import Any

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString


def admin_link(obj: Model) -> SafeString:
    url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, obj)


def html_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> SafeString:
    head = format_html_join("", "<th>{}</th>", ((header,) for header in headers))
    body = format_html_join(
        "", "<tr>{}</tr>", ((format_html_join("", "<td>{}</td>", ((cell,) for cell in row)),) for row in rows)
    )
    return format_html("<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>", head, body)


def html_list(tag: str, items: Iterable[object]) -> SafeString:
    return format_html("<{}>{}</{}>", tag, format_html_join("", "<li>{}</li>", ((item,) for item in items)), tag)


class ReadOnly:
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(ReadOnly, admin.TabularInline):
    # Django's tabular template prints each row's str() beside it, which for a message is its raw text.
    template = "admin/readonly_tabular.html"
    extra = 0
    can_delete = False
