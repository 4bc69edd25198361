"""Front matter as other tools write it (Jekyll, Hugo, Docusaurus, MkDocs, exported Zendesk or Intercom
articles): read, never refused for its keys. Known keys map to an article's fields; the others are ignored,
and the caller says once per sync which ones were. supportbot's own strict format is in knowledge/sources.py.

Pure functions: no Django.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import yaml

from knowledge.errors import IngestFileError

AUDIENCE_ORDER = ("public", "member", "staff")
# Each field of an article, and the keys that give it, in order of preference: the last edit says when the
# text in force took effect, so it comes before the first publication.
TITLE_KEYS = ("title", "sidebar_label", "linkTitle", "nav_title")
SUMMARY_KEYS = ("description", "summary", "excerpt", "subtitle", "abstract")
DATE_KEYS = (
    "effective_date",
    "last_modified_at",
    "lastmod",
    "last_update",
    "updated_at",
    "updated",
    "modified",
    "date",
    "publishDate",
    "created_at",
    "created",
)
LANGUAGE_KEYS = ("language", "lang", "locale")
# What says a page is not published: draft: true, hidden: true, published: false, status: draft.
UNPUBLISHED = {"draft": True, "hidden": True, "published": False}
UNPUBLISHED_STATUSES = frozenset({"draft", "unpublished", "hidden", "archived"})
USED_KEYS = frozenset(
    {"id", "version", "audience", "product", "supersedes", "status", *TITLE_KEYS, *SUMMARY_KEYS, *DATE_KEYS}
    | set(LANGUAGE_KEYS)
    | set(UNPUBLISHED)
)


@dataclass(frozen=True)
class AudienceRule:
    """A front matter key and value that make a page's audience: visibility: internal → staff. A list value
    (tags: [members, billing]) matches when it holds the value."""

    key: str
    value: str
    audience: str


def parse_audience_rules(text: str) -> tuple[AudienceRule, ...]:
    """Rules from "KEY:VALUE=AUDIENCE, ..." (FRONT_MATTER_AUDIENCES); a ValueError names the bad one."""
    rules = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        condition, _, audience = part.rpartition("=")
        key, _, value = condition.partition(":")
        if not key.strip() or not value.strip() or audience.strip() not in AUDIENCE_ORDER:
            raise ValueError(
                f"{part!r} is not KEY:VALUE=AUDIENCE with AUDIENCE one of {', '.join(AUDIENCE_ORDER)} "
                "(e.g. visibility:internal=staff)"
            )
        rules.append(AudienceRule(key.strip(), value.strip().lower(), audience.strip()))
    return tuple(rules)


@dataclass(frozen=True)
class FrontMatterRules:
    """How a sync reads front matter: as other tools write it (the default), or strictly in supportbot's
    own format; and which keys and values make an audience other than public."""

    strict: bool = False
    audiences: tuple[AudienceRule, ...] = ()


# How every sync reads front matter unless FRONT_MATTER says otherwise: as other tools write it.
LENIENT = FrontMatterRules()


@dataclass(frozen=True)
class ExportedFields:
    """What a page's front matter says, as our fields (None: not said)."""

    slug: str | None
    title: str | None
    summary: str
    version: str | None
    effective_date: date | None
    audience: str
    language: str | None
    product: str
    supersedes: str | None
    published: bool
    ignored: frozenset[str]


def split_front_matter(path: str, text: str) -> tuple[dict[str, Any], str] | None:
    """(the front matter as a mapping, the body), or None when the text opens with none. YAML between '---'
    lines, or TOML between '+++' lines (Hugo)."""
    lines = text.split("\n")
    opening = lines[0].strip() if lines else ""
    if opening not in ("---", "+++"):
        return None
    closers = ("---", "...") if opening == "---" else ("+++",)
    end = next((i for i in range(1, len(lines)) if lines[i].strip() in closers), None)
    if end is None:
        raise IngestFileError(path, f"front matter is not closed by a line '{opening}'", line=1)
    block = "\n".join(lines[1:end])
    try:
        data = yaml.safe_load(block) if opening == "---" else tomllib.loads(block)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        line = mark.line + 2 if mark is not None else 1
        raise IngestFileError(path, f"front matter is not valid YAML: {problem}", line=line) from None
    except tomllib.TOMLDecodeError as exc:
        raise IngestFileError(path, f"front matter is not valid TOML: {exc}", line=1) from None
    except ValueError as exc:  # a value YAML reads but cannot build ("2026-02-30" as a date)
        raise IngestFileError(path, f"front matter holds a value that cannot be read: {exc}", line=1) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise IngestFileError(path, "front matter must be a mapping of 'key: value' lines", line=2)
    return {str(k): v for k, v in data.items()}, "\n".join(lines[end + 1 :])


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list, bool)):
        return None
    text = " ".join(str(value).split())
    return text or None


def _date(value: Any) -> date | None:
    if isinstance(value, dict):  # Docusaurus: last_update: {date: …, author: …}
        value = value.get("date")
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    text = _text(value)
    if text is None or len(text) < 10:
        return None
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        return None


def _matches(value: Any, wanted: str) -> bool:
    values = value if isinstance(value, list) else [value]
    return any(str(v).strip().lower() == wanted for v in values if not isinstance(v, (dict, list)))


def _published(fields: Mapping[str, Any]) -> bool:
    if any(fields.get(key) is flag for key, flag in UNPUBLISHED.items()):
        return False
    status = _text(fields.get("status"))
    return status is None or status.lower() not in UNPUBLISHED_STATUSES


def _audience(path: str, fields: Mapping[str, Any], rules: Iterable[AudienceRule]) -> str:
    """The most restricted audience any rule gives (public without one). An `audience` value that is neither
    ours nor mapped is refused: guessing "public" could show a staff page to customers."""
    found = ["public"]
    given = _text(fields.get("audience"))
    mapped = [rule.audience for rule in rules if rule.key in fields and _matches(fields[rule.key], rule.value)]
    if given is not None and given.lower() in AUDIENCE_ORDER:
        found.append(given.lower())
    elif given is not None and not any(rule.key == "audience" for rule in rules if rule.audience in mapped):
        raise IngestFileError(
            path,
            f"unknown audience {given!r} (expected one of: {', '.join(AUDIENCE_ORDER)}; map your own values with "
            "FRONT_MATTER_AUDIENCES, e.g. audience:internal=staff)",
            field="audience",
        )
    found += mapped
    return max(found, key=AUDIENCE_ORDER.index)


def exported_fields(path: str, fields: Mapping[str, Any], rules: FrontMatterRules) -> ExportedFields:
    def first(keys: Iterable[str]) -> Any:
        return next((fields[k] for k in keys if fields.get(k) is not None), None)

    language = _text(first(LANGUAGE_KEYS))
    supersedes = _text(fields.get("supersedes"))
    return ExportedFields(
        slug=_text(fields.get("id")),
        title=_text(first(TITLE_KEYS)),
        summary=(_text(first(SUMMARY_KEYS)) or "")[:1000],
        version=_text(fields.get("version")),
        effective_date=next((d for k in DATE_KEYS if (d := _date(fields.get(k))) is not None), None),
        audience=_audience(path, fields, rules.audiences),
        language=language.lower().replace("_", "-") if language else None,
        product=(_text(fields.get("product")) or "")[:100],
        supersedes=supersedes[:50] if supersedes else None,
        published=_published(fields),
        ignored=frozenset(fields) - USED_KEYS - {rule.key for rule in rules.audiences},
    )
