"""Reading source documents: Markdown and HTML pages of a help centre as it is (front matter in any tool's
words, or none), Markdown files in supportbot's own strict format, and BEIR corpora.

Pure functions: every problem becomes an IngestFileError naming the file, line and field.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

import yaml

from knowledge.chunking import FENCE_LINE, HEADING_LINE
from knowledge.errors import IngestFileError
from knowledge.front_matter import LENIENT, FrontMatterRules, exported_fields, split_front_matter
from knowledge.site_markup import from_site_markup

AUDIENCES = ("public", "member", "staff")
REQUIRED_FIELDS = ("id", "title", "version", "effective_date", "audience")
OPTIONAL_FIELDS = ("product", "language", "supersedes")
# BEIR corpora carry no dates; one fixed date keeps their articles comparable across runs.
BEIR_EFFECTIVE_DATE = date(2000, 1, 1)
_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
LANGUAGE_CODE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$")


@dataclass(frozen=True)
class SourceDocument:
    path: str
    slug: str
    title: str
    product: str
    language: str
    version_label: str
    effective_date: date
    audience: str
    supersedes: str | None
    body: str
    content_hash: str
    # What the page says it is about, in a line (front matter's description); shown under its title.
    summary: str = ""


@dataclass(frozen=True)
class SourceRead:
    items: list[SourceDocument | IngestFileError]
    # Whether the source lists every article it has (a folder, an export, a sitemap), so that the ones it no
    # longer lists have gone; one file or page says nothing about the others.
    lists_every_page: bool
    # Said once per sync, not per document: what was assumed of files without front matter.
    warnings: tuple[str, ...] = field(default=())


def _line_of(raw: bytes, offset: int) -> int:
    return raw.count(b"\n", 0, offset) + 1


def _decode(path: str, raw: bytes, max_bytes: int) -> str:
    if len(raw) > max_bytes:
        raise IngestFileError(path, f"file is {len(raw):,} bytes, over the limit of {max_bytes:,} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IngestFileError(
            path, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})", line=_line_of(raw, exc.start)
        ) from None
    return text.removeprefix("\ufeff")


def _front_matter(path: str, text: str) -> tuple[dict[str, str | None], dict[str, int], str, int]:
    """(fields, line of each field, body, line where the body starts)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise IngestFileError(path, "no YAML front matter: the file must start with a line '---'", line=1)
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() in ("---", "..."))
    except StopIteration:
        raise IngestFileError(path, "front matter is not closed by a line '---'", line=1) from None
    block = "\n".join(lines[1:end])
    try:
        node = yaml.compose(block, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 2 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc)
        raise IngestFileError(path, f"front matter is not valid YAML: {problem}", line=line) from None
    if not isinstance(node, yaml.MappingNode):
        raise IngestFileError(path, "front matter must be a mapping of 'key: value' lines", line=2)
    # Values are read as the text written, not as YAML's guesses: version 2 and "2" are the same label,
    # and dates are checked by our own parser so a bad one gets our message.
    fields: dict[str, str | None] = {}
    field_lines: dict[str, int] = {}
    for key_node, value_node in node.value:
        key, line = str(key_node.value), key_node.start_mark.line + 2
        if key in field_lines:
            raise IngestFileError(path, "field given twice", line=line, field=key)
        field_lines[key] = line
        if not isinstance(value_node, yaml.ScalarNode):
            raise IngestFileError(path, "must be a single text value, not a list or mapping", line=line, field=key)
        fields[key] = None if value_node.tag == "tag:yaml.org,2002:null" else str(value_node.value)
    return fields, field_lines, "\n".join(lines[end + 1 :]), end + 2


def _text_field(path: str, fields: dict[str, str | None], lines: dict[str, int], name: str, max_len: int) -> str:
    text = (fields.get(name) or "").strip()
    if not text:
        raise IngestFileError(path, "must not be empty", line=lines.get(name), field=name)
    if len(text) > max_len:
        raise IngestFileError(path, f"is {len(text)} characters, over {max_len}", line=lines.get(name), field=name)
    return text


def parse_markdown(path: str, raw: bytes, *, max_bytes: int) -> SourceDocument:
    text = _decode(path, raw, max_bytes)
    fields, lines, body, body_line = _front_matter(path, text)
    return document_from_fields(
        path, fields, body, content_hash=hashlib.sha256(raw).hexdigest(), lines=lines, body_line=body_line
    )


def document_from_fields(
    path: str,
    fields: dict[str, str | None],
    body: str,
    *,
    content_hash: str,
    lines: dict[str, int] | None = None,
    body_line: int | None = None,
) -> SourceDocument:
    """A document from its metadata fields (front matter, or an API request's) and its Markdown body; every
    problem is an IngestFileError naming the field (and its line, for a file)."""
    lines = lines or {}
    unknown = sorted(set(fields) - set(REQUIRED_FIELDS) - set(OPTIONAL_FIELDS))
    if unknown:
        allowed = ", ".join(REQUIRED_FIELDS + OPTIONAL_FIELDS)
        raise IngestFileError(path, f"unknown field (allowed: {allowed})", line=lines.get(unknown[0]), field=unknown[0])
    for name in REQUIRED_FIELDS:
        if name not in fields:
            raise IngestFileError(
                path, "required field is missing", line=1 if body_line is not None else None, field=name
            )

    slug = _text_field(path, fields, lines, "id", 200)
    if not _SLUG.match(slug):
        raise IngestFileError(
            path, f"{slug!r} is not a valid id (letters, digits, '.', '_' and '-')", line=lines.get("id"), field="id"
        )
    audience = _text_field(path, fields, lines, "audience", 20)
    if audience not in AUDIENCES:
        raise IngestFileError(
            path,
            f"unknown audience {audience!r} (expected one of: {', '.join(AUDIENCES)})",
            line=lines.get("audience"),
            field="audience",
        )
    raw_date = _text_field(path, fields, lines, "effective_date", 30)
    try:
        effective = date.fromisoformat(raw_date)
    except ValueError:
        raise IngestFileError(
            path,
            f"{raw_date!r} is not a date (use YYYY-MM-DD)",
            line=lines.get("effective_date"),
            field="effective_date",
        ) from None
    language = _text_field(path, fields, lines, "language", 16) if "language" in fields else "en"
    if not LANGUAGE_CODE.match(language):
        raise IngestFileError(
            path,
            f"{language!r} is not a language code such as 'en' or 'en-GB'",
            line=lines.get("language"),
            field="language",
        )
    supersedes = _text_field(path, fields, lines, "supersedes", 50) if fields.get("supersedes") is not None else None
    if not body.strip():
        raise IngestFileError(
            path,
            "the article has no body after the front matter",
            line=body_line,
            field="body" if body_line is None else None,
        )
    return SourceDocument(
        path=path,
        slug=slug,
        title=_text_field(path, fields, lines, "title", 300),
        product=_text_field(path, fields, lines, "product", 100) if "product" in fields else "",
        language=language,
        version_label=_text_field(path, fields, lines, "version", 50),
        effective_date=effective,
        audience=audience,
        supersedes=supersedes,
        body=body,
        content_hash=content_hash,
    )


def read_markdown_tree(root: Path, *, max_bytes: int) -> Iterator[SourceDocument | IngestFileError]:
    """Every *.md file under root (or root itself), in a stable order."""
    paths = sorted(root.rglob("*.md")) if root.is_dir() else [root]
    for path in paths:
        try:
            yield parse_markdown(str(path), path.read_bytes(), max_bytes=max_bytes)
        except IngestFileError as exc:
            yield exc


# --- Help centres as they are exported ----------------------------------------------------------------
# A help centre kept by a site generator (Jekyll, Hugo, Docusaurus, MkDocs) or exported from a help desk
# carries the front matter of that tool, or none. Each page is read as it comes: the keys we know give its
# fields (knowledge/front_matter.py), a field nothing gives is assumed as PLAIN_DEFAULTS says, and one
# warning per sync names what was assumed and what was ignored. With FRONT_MATTER=strict (ingest
# --strict-front-matter) a source is read in supportbot's own format instead: every Markdown file with all
# of its fields, every other key refused.
HTML_SUFFIXES = (".html", ".htm")
MARKDOWN_SUFFIXES = (".md", ".mdx", ".markdown")
PLAIN_DEFAULTS = (
    "title from the first heading (else the file name), id from the path in the folder, version from the "
    "content (its hash), in force from the day of ingest, audience public"
)
_PLAIN_ID_CHARS = re.compile(r"[^a-z0-9._-]+")
_PLAIN_SUFFIX = re.compile(r"\.(md|mdx|markdown|html?)$", re.IGNORECASE)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")


@dataclass(frozen=True)
class SourceFile:
    """One file of a source: the path it is shown (and stored) by, its path inside the folder or archive
    (a plain file's id is made from it), what it holds (markdown, html, or other: a single file named so),
    and its bytes, or why they could not be read."""

    path: str
    relative: str
    kind: str
    raw: bytes | IngestFileError


def starts_with_front_matter(raw: bytes) -> bool:
    """Whether a file opens as parse_markdown requires: its first line is '---'."""
    return raw.removeprefix(b"\xef\xbb\xbf").split(b"\n", 1)[0].strip() == b"---"


def plain_defaults_warning(count: int, today: date) -> str:
    """The one line a sync says about its files without front matter."""
    return (
        f"{count} file(s) without front matter were read with defaults: {PLAIN_DEFAULTS} ({today.isoformat()}). "
        "To set these yourself, give every file front matter."
    )


def plain_id(relative: str) -> str:
    """An article id from a file's path in its folder: lower case, the extension dropped, and every run of
    characters other than letters, digits, '.' and '_' (folder separators too) one '-', so
    "Billing/Refund policy.md" is billing-refund-policy. Empty when nothing is left."""
    stem = _PLAIN_SUFFIX.sub("", relative.replace("\\", "/"))
    slug = re.sub(r"-{2,}", "-", _PLAIN_ID_CHARS.sub("-", stem.lower()))
    return slug.strip("-._")[:200].rstrip("-._")


def first_heading(markdown: str) -> str | None:
    """The text of the first heading (any level; links and emphasis marks dropped), None without one."""
    in_fence = False
    for line in markdown.split("\n"):
        if FENCE_LINE.match(line):
            in_fence = not in_fence
            continue
        heading = None if in_fence else HEADING_LINE.match(line)
        if heading:
            text = " ".join(_EMPHASIS.sub("", _LINK.sub(r"\1", heading.group(2))).split())
            if text:
                return text
    return None


def _title_from_name(relative: str) -> str:
    """A title from a file's name: refund_policy.md and refund-policy.md are "Refund policy"; a name with
    spaces keeps its hyphens ("Wi-Fi setup.md" is "Wi-Fi setup")."""
    name = _PLAIN_SUFFIX.sub("", relative.rsplit("/", 1)[-1]).replace("_", " ")
    words = " ".join(name.split() if " " in name else name.split("-"))
    return words[:1].upper() + words[1:]


def html_article(html: str) -> tuple[str, str | None, str]:
    """An HTML page's article as Markdown (headings, lists and tables kept), its <title>, and its language
    (<html lang>, else English). The article is the page's <main>, else its <article>, else its <body>
    without the page's header and footer; navigation and sidebars are never article text."""
    from bs4 import BeautifulSoup, Tag

    # Here, not at the top: knowledge.zendesk reads this module's names.
    from knowledge.zendesk import html_to_markdown

    soup = BeautifulSoup(html, "html.parser")
    title = " ".join(soup.title.get_text(" ").split()) if soup.title else ""
    root = soup.find("html")
    declared = str(root.get("lang") or "").strip().lower() if isinstance(root, Tag) else ""
    language = declared if LANGUAGE_CODE.match(declared) else "en"
    content = soup.find("main") or soup.find("article")
    dropped = ["head", "nav", "aside"]
    if content is None:
        content = soup.body or soup
        dropped += ["header", "footer"]
    for element in content.find_all(dropped):
        element.decompose()
    return html_to_markdown(str(content)), title or None, language


@dataclass(frozen=True)
class PageRead:
    """One page as read_files reads it: its document (None when its front matter says it is not published),
    and the front matter keys it ignored."""

    document: SourceDocument | None
    ignored: frozenset[str] = frozenset()
    had_front_matter: bool = False


def parse_page(
    path: str,
    relative: str,
    raw: bytes,
    *,
    kind: str,
    max_bytes: int,
    today: date,
    rules: FrontMatterRules = LENIENT,
) -> PageRead:
    """A Markdown or HTML page as its help centre wrote it: front matter in any tool's words (or none, its
    fields then assumed as PLAIN_DEFAULTS says), the site generator's markup rendered as plain Markdown."""
    text = _decode(path, raw, max_bytes)
    if "\x00" in text:
        raise IngestFileError(path, "holds NUL bytes: not a text file")
    page_title, language = None, "en"
    if kind != "html" and _in_our_format(path, text):
        # supportbot's own front matter, and nothing else: read exactly as the strict format reads it, so
        # that a bad value is named by its line.
        return PageRead(parse_markdown(path, raw, max_bytes=max_bytes), had_front_matter=True)
    split = None if kind == "html" else split_front_matter(path, text)
    fields = None if split is None else exported_fields(path, split[0], rules)
    if fields is not None and not fields.published:
        return PageRead(None, fields.ignored, had_front_matter=True)
    if kind == "html":
        body, page_title, language = html_article(text)
        if not body.strip():
            raise IngestFileError(path, "the page holds no text once its HTML is read")
    else:
        variables = {k: str(v) for k, v in (split[0] if split else {}).items() if isinstance(v, (str, int, float))}
        body = from_site_markup(split[1] if split else text, variables=variables)
        if not body.strip():
            raise IngestFileError(path, "the file is empty" if split is None else "the page has no body")
    slug = fields.slug if fields is not None and fields.slug and _SLUG.match(fields.slug) else plain_id(relative)
    if not _SLUG.match(slug):
        raise IngestFileError(
            path, f"no article id can be made of the path {relative!r}: name the file with letters or digits"
        )
    heading = first_heading(body)
    named = fields.title if fields is not None else None
    title = " ".join((named or heading or page_title or _title_from_name(relative) or slug).split())[:300]
    if not re.search(r"^# ", body, re.MULTILINE) and (heading is None or named):
        # As a web page's: the article opens with its title, which its text above any heading belongs to.
        body = f"# {title}\n\n{body.strip()}\n"
    digest = hashlib.sha256(raw).hexdigest()
    if fields is not None and fields.language and LANGUAGE_CODE.match(fields.language):
        language = fields.language
    document = SourceDocument(
        path=path,
        slug=slug,
        title=title,
        product=fields.product if fields is not None else "",
        language=language,
        # Without a version of its own, each new text is a version, in force from the day it was ingested.
        version_label=(fields.version if fields is not None and fields.version else digest[:12])[:50],
        effective_date=(fields.effective_date if fields is not None else None) or today,
        audience=fields.audience if fields is not None else "public",
        supersedes=fields.supersedes if fields is not None else None,
        body=body,
        content_hash=digest,
        summary=fields.summary if fields is not None else "",
    )
    return PageRead(document, fields.ignored if fields is not None else frozenset(), had_front_matter=split is not None)


def _in_our_format(path: str, text: str) -> bool:
    """Whether a page's front matter holds every field of supportbot's format and no other key."""
    if not text.startswith("---"):
        return False
    try:
        fields = _front_matter(path, text)[0]
    except IngestFileError:
        return False  # lists, mappings or broken YAML: not ours
    return set(REQUIRED_FIELDS) <= set(fields) <= set(REQUIRED_FIELDS) | set(OPTIONAL_FIELDS)


def named_by_content(version_label: str, content_hash: str) -> bool:
    """Whether a version is named after its content, as a page without a version of its own is
    (parse_page, knowledge.web.page_document): one text at a time, the newest in force."""
    return version_label == content_hash[:12]


def _hidden(relative: str) -> bool:
    return any(part.startswith(".") for part in relative.split("/"))


def _read_strictly(files: Sequence[SourceFile], max_bytes: int) -> list[SourceDocument | IngestFileError]:
    """supportbot's own format (FRONT_MATTER=strict): every Markdown file with all of its fields."""
    items: list[SourceDocument | IngestFileError] = []
    for f in files:
        if f.kind == "html":
            continue
        if isinstance(f.raw, IngestFileError):
            items.append(f.raw)
        elif not starts_with_front_matter(f.raw):
            items.append(IngestFileError(f.path, "no YAML front matter: the file must start with a line '---'", line=1))
        else:
            try:
                items.append(parse_markdown(f.path, f.raw, max_bytes=max_bytes))
            except IngestFileError as exc:
                items.append(exc)
    return items


def _some_of(names: Sequence[str], shown: int = 5) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def read_files(
    files: Sequence[SourceFile], *, max_bytes: int, today: date, rules: FrontMatterRules = LENIENT
) -> tuple[list[SourceDocument | IngestFileError], tuple[str, ...]]:
    """A source's files as documents (and errors), with the warnings to say once per sync: the front matter
    keys that were ignored, the pages left out as unpublished, the fields assumed for pages without any."""
    if rules.strict:
        return _read_strictly(files, max_bytes), ()
    items: list[SourceDocument | IngestFileError] = []
    ignored: dict[str, int] = {}
    unpublished: list[str] = []
    plain = 0
    for f in files:
        if isinstance(f.raw, IngestFileError):
            items.append(f.raw)
            continue
        try:
            if f.kind == "other" and not starts_with_front_matter(f.raw):
                raise IngestFileError(
                    f.path, "neither .md nor .html, and no front matter says it is an article (a first line '---')"
                )
            page = parse_page(f.path, f.relative, f.raw, kind=f.kind, max_bytes=max_bytes, today=today, rules=rules)
        except IngestFileError as exc:
            items.append(exc)
            continue
        for key in page.ignored:
            ignored[key] = ignored.get(key, 0) + 1
        if page.document is None:
            unpublished.append(f.relative)
        else:
            items.append(page.document)
            plain += not page.had_front_matter
    items = _unique_ids(items, {f.path: f.relative for f in files})
    warnings = []
    if ignored:
        keys = sorted(ignored, key=lambda k: (-ignored[k], k))
        warnings.append(
            "front matter keys supportbot does not use were ignored: "
            + ", ".join(f"{key} ({ignored[key]} page{'s' if ignored[key] != 1 else ''})" for key in keys)
        )
    if unpublished:
        warnings.append(
            f"{len(unpublished)} page(s) marked as drafts or unpublished in their front matter were left out: "
            + _some_of(unpublished)
        )
    if plain:
        warnings.append(plain_defaults_warning(plain, today))
    return items, tuple(warnings)


def _unique_ids(
    items: list[SourceDocument | IngestFileError], relative_of: dict[str, str]
) -> list[SourceDocument | IngestFileError]:
    """Pages without versions of their own whose front matter ids clash take ids from their paths instead
    (Docusaurus ids are unique in a folder only; pages that name their versions are versions of one
    article); two paths that still make one id cannot be told apart, so neither is read."""

    def unversioned(item: SourceDocument | IngestFileError) -> bool:
        return isinstance(item, SourceDocument) and named_by_content(item.version_label, item.content_hash)

    counts: dict[str, int] = {}
    for doc in filter(unversioned, items):
        assert isinstance(doc, SourceDocument)
        counts[doc.slug] = counts.get(doc.slug, 0) + 1
    items = [
        replace(item, slug=plain_id(relative_of[item.path]))
        if isinstance(item, SourceDocument)
        and unversioned(item)
        and counts[item.slug] > 1
        and item.slug != plain_id(relative_of[item.path])
        else item
        for item in items
    ]
    paths_of: dict[str, list[str]] = {}
    for item in filter(unversioned, items):
        assert isinstance(item, SourceDocument)
        paths_of.setdefault(item.slug, []).append(item.path)
    return [
        item
        if not isinstance(item, SourceDocument) or not unversioned(item) or len(paths_of[item.slug]) == 1
        else IngestFileError(
            item.path,
            f"its path makes the id {item.slug!r}, as "
            + ", ".join(p for p in paths_of[item.slug] if p != item.path)
            + " does: rename one of them",
            field="id",
        )
        for item in items
    ]


def _file_kind(name: str, *, markdown: bool) -> str | None:
    if name.lower().endswith(HTML_SUFFIXES):
        return "html"
    return "markdown" if markdown else None


def is_markdown_name(name: str) -> bool:
    return name.lower().endswith(MARKDOWN_SUFFIXES)


def read_folder(root: Path, *, max_bytes: int, today: date, rules: FrontMatterRules = LENIENT) -> SourceRead:
    """A folder of articles (its .md, .mdx, .markdown, .html and .htm files, in any subfolder), or one file,
    as ingest reads it. Hidden files and folders (.git, .github) are no articles."""
    if not root.is_dir():
        kind = _file_kind(root.name, markdown=is_markdown_name(root.name)) or "other"
        files = [SourceFile(str(root), root.name, kind, _read_file(root, max_bytes))]
        items, warnings = read_files(files, max_bytes=max_bytes, today=today, rules=rules)
        return SourceRead(items, lists_every_page=False, warnings=warnings)
    files = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        found = _file_kind(path.name, markdown=is_markdown_name(path.name))
        if found is not None and not _hidden(relative) and path.is_file():
            files.append(SourceFile(str(path), relative, found, _read_file(path, max_bytes)))
    items, warnings = read_files(files, max_bytes=max_bytes, today=today, rules=rules)
    return SourceRead(items, lists_every_page=True, warnings=warnings)


def _read_file(path: Path, max_bytes: int) -> bytes | IngestFileError:
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return IngestFileError(str(path), f"file is {size:,} bytes, over the limit of {max_bytes:,} bytes")
        return path.read_bytes()
    except OSError as exc:
        return IngestFileError(str(path), f"cannot be read: {exc.strerror or exc}")


# A zip's members are read into memory: bounded in number and in total size as well as one by one, so
# that a small upload cannot expand into gigabytes.
ZIP_MAX_MEMBERS = 2_000


def read_zip(name: str, raw: bytes, *, max_bytes: int, today: date, rules: FrontMatterRules = LENIENT) -> SourceRead:
    """Every Markdown and HTML member of a zip archive (an upload, or a file), in name order, as read_folder
    reads a folder's files; folders inside are fine. Other members, hidden ones and the metadata macOS adds
    are skipped. Each member is at most ``max_bytes``, and all of them together at most ZIP_MAX_MEMBERS
    times that."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile:
        return SourceRead([IngestFileError(name, "not a zip archive")], lists_every_page=True)
    members = [
        info
        for info in archive.infolist()
        if not info.is_dir()
        and _file_kind(info.filename, markdown=is_markdown_name(info.filename)) is not None
        and not any(part.startswith((".", "__MACOSX")) for part in info.filename.split("/"))
    ]
    if not members:
        return SourceRead([IngestFileError(name, "the archive holds no .md files (nor .html)")], lists_every_page=True)
    if len(members) > ZIP_MAX_MEMBERS:
        error = f"the archive holds {len(members):,} .md and .html files, over the limit of {ZIP_MAX_MEMBERS:,}"
        return SourceRead([IngestFileError(name, error)], lists_every_page=True)
    total = sum(info.file_size for info in members)
    if total > max_bytes * ZIP_MAX_MEMBERS:
        error = f"the archive expands to {total:,} bytes, over the limit of {max_bytes * ZIP_MAX_MEMBERS:,}"
        return SourceRead([IngestFileError(name, error)], lists_every_page=True)
    files = []
    for info in sorted(members, key=lambda i: i.filename):
        path = f"{name}!{info.filename}"
        kind = _file_kind(info.filename, markdown=True) or "markdown"
        files.append(SourceFile(path, info.filename, kind, _read_member(archive, info, path, max_bytes)))
    items, warnings = read_files(files, max_bytes=max_bytes, today=today, rules=rules)
    return SourceRead(items, lists_every_page=True, warnings=warnings)


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, path: str, max_bytes: int) -> bytes | IngestFileError:
    if info.flag_bits & 0x1:
        return IngestFileError(path, "the file is encrypted")
    if info.file_size > max_bytes:
        return IngestFileError(path, f"file is {info.file_size:,} bytes, over the limit of {max_bytes:,} bytes")
    try:
        with archive.open(info) as member:
            # The size in the directory can lie: read one byte past the limit to know.
            return member.read(max_bytes + 1)
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError) as exc:  # corrupt, or unknown
        return IngestFileError(path, f"could not be read from the archive: {exc}")


def read_beir_corpus(
    path: Path, *, effective_date: date = BEIR_EFFECTIVE_DATE
) -> Iterator[SourceDocument | IngestFileError]:
    """A BEIR corpus.jsonl ({"_id", "title", "text"} per line) as public articles, one version each."""
    corpus = path / "corpus.jsonl" if path.is_dir() else path
    with corpus.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                yield IngestFileError(str(corpus), f"not a JSON object: {exc}", line=number)
                continue
            if not isinstance(record, dict):
                yield IngestFileError(str(corpus), "not a JSON object", line=number)
                continue
            doc_id = str(record.get("_id", "")).strip()
            text = str(record.get("text") or "").strip()
            title = str(record.get("title") or "").strip() or doc_id
            if not _SLUG.match(doc_id):
                yield IngestFileError(str(corpus), f"{doc_id!r} is not a valid id", line=number, field="_id")
                continue
            if not text:
                yield IngestFileError(str(corpus), "empty text", line=number, field="text")
                continue
            yield SourceDocument(
                path=f"{corpus}:{number}",
                slug=doc_id,
                title=title[:300],
                product="",
                language="en",
                version_label="1",
                effective_date=effective_date,
                audience="public",
                supersedes=None,
                body=f"# {title}\n\n{text}\n",
                content_hash=hashlib.sha256(raw.strip()).hexdigest(),
            )
