"""Reading source documents: Markdown files with YAML front matter, plain Markdown and HTML files without it
(a folder of a help centre as it is), and BEIR corpora.

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
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import yaml

from knowledge.chunking import FENCE_LINE, HEADING_LINE
from knowledge.errors import IngestFileError

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


# --- Files without front matter -----------------------------------------------------------------------
# A help centre kept as plain Markdown or HTML pages carries none of our front matter. A source (a folder, a
# zip, one file) none of whose Markdown files starts with front matter is read that way: each file's fields
# are assumed as PLAIN_DEFAULTS says, and one warning per sync says so. A source in which some Markdown file
# does start with front matter is in supportbot's format, read exactly as before: there every Markdown file
# must carry it (one without is more likely a mistake than an article) and other files are not read.
HTML_SUFFIXES = (".html", ".htm")
PLAIN_DEFAULTS = (
    "title from the first heading (else the file name), id from the path in the folder, version from the "
    "content (its hash), in force from the day of ingest, audience public"
)
_PLAIN_ID_CHARS = re.compile(r"[^a-z0-9._-]+")
_PLAIN_SUFFIX = re.compile(r"\.(md|html?)$", re.IGNORECASE)
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


def parse_plain(path: str, relative: str, raw: bytes, *, kind: str, max_bytes: int, today: date) -> SourceDocument:
    """A Markdown or HTML file without front matter, its fields assumed as PLAIN_DEFAULTS says."""
    text = _decode(path, raw, max_bytes)
    if "\x00" in text:
        raise IngestFileError(path, "holds NUL bytes: not a text file")
    page_title, language = None, "en"
    if kind == "html":
        body, page_title, language = html_article(text)
        if not body.strip():
            raise IngestFileError(path, "the page holds no text once its HTML is read")
    else:
        body = text
        if not body.strip():
            raise IngestFileError(path, "the file is empty")
    slug = plain_id(relative)
    if not _SLUG.match(slug):
        raise IngestFileError(
            path, f"no article id can be made of the path {relative!r}: name the file with letters or digits"
        )
    heading = first_heading(body)
    title = " ".join((heading or page_title or _title_from_name(relative) or slug).split())[:300]
    if heading is None:
        # As a web page's: the article opens with its title, which its text above any heading belongs to.
        body = f"# {title}\n\n{body.strip()}\n"
    digest = hashlib.sha256(raw).hexdigest()
    return SourceDocument(
        path=path,
        slug=slug,
        title=title,
        product="",
        language=language,
        # Each new text is a version of its own, in force from the day it was ingested.
        version_label=digest[:12],
        effective_date=today,
        audience="public",
        supersedes=None,
        body=body,
        content_hash=digest,
    )


def _hidden(relative: str) -> bool:
    return any(part.startswith(".") for part in relative.split("/"))


def read_files(
    files: Sequence[SourceFile], *, max_bytes: int, today: date
) -> tuple[list[SourceDocument | IngestFileError], tuple[str, ...]]:
    """A source's files as documents (and errors), with the warnings to say once: in supportbot's format when
    any Markdown file starts with front matter, else every file read with the defaults."""
    ours = any(f.kind != "html" and isinstance(f.raw, bytes) and starts_with_front_matter(f.raw) for f in files)
    items: list[SourceDocument | IngestFileError] = []
    if ours:
        for f in files:
            if f.kind == "html":
                continue
            if isinstance(f.raw, IngestFileError):
                items.append(f.raw)
            elif not starts_with_front_matter(f.raw):
                items.append(
                    IngestFileError(
                        f.path,
                        "no YAML front matter: the file must start with a line '---' (other files of this source "
                        "have front matter, so every one must; a source without any is read with defaults)",
                        line=1,
                    )
                )
            else:
                try:
                    items.append(parse_markdown(f.path, f.raw, max_bytes=max_bytes))
                except IngestFileError as exc:
                    items.append(exc)
        return items, ()
    for f in files:
        if isinstance(f.raw, IngestFileError):
            items.append(f.raw)
            continue
        try:
            if f.kind == "other":
                # One file named neither .md nor .html: only front matter says it is an article.
                items.append(parse_markdown(f.path, f.raw, max_bytes=max_bytes))
            else:
                items.append(parse_plain(f.path, f.relative, f.raw, kind=f.kind, max_bytes=max_bytes, today=today))
        except IngestFileError as exc:
            items.append(exc)
    # Two files whose paths make one id: which one is the article cannot be guessed, so neither is read.
    paths_of: dict[str, list[str]] = {}
    for item in items:
        if isinstance(item, SourceDocument):
            paths_of.setdefault(item.slug, []).append(item.path)
    read = [
        item
        if isinstance(item, IngestFileError) or len(paths_of[item.slug]) == 1
        else IngestFileError(
            item.path,
            f"its path makes the id {item.slug!r}, as "
            + ", ".join(p for p in paths_of[item.slug] if p != item.path)
            + " does: rename one of them",
            field="id",
        )
        for item in items
    ]
    plain = sum(isinstance(item, SourceDocument) for item in read)
    return read, (plain_defaults_warning(plain, today),) if plain else ()


def _file_kind(name: str, *, markdown: bool) -> str | None:
    if name.lower().endswith(HTML_SUFFIXES):
        return "html"
    return "markdown" if markdown else None


def read_folder(root: Path, *, max_bytes: int, today: date) -> SourceRead:
    """A folder of articles (its .md, .html and .htm files, in any subfolder), or one file, as ingest reads
    it. In supportbot's format (see above) only the .md files are read, each with its front matter."""
    if not root.is_dir():
        kind = _file_kind(root.name, markdown=root.suffix.lower() == ".md") or "other"
        files = [SourceFile(str(root), root.name, kind, _read_file(root, max_bytes))]
        items, warnings = read_files(files, max_bytes=max_bytes, today=today)
        return SourceRead(items, lists_every_page=False, warnings=warnings)
    found: list[tuple[Path, str, str]] = []
    for path in sorted(root.rglob("*")):
        found_kind = _file_kind(path.name, markdown=path.suffix == ".md")
        if found_kind is not None and path.is_file():
            found.append((path, path.relative_to(root).as_posix(), found_kind))
    ours = any(
        kind == "markdown" and not _hidden(relative) and _opens_with_front_matter(path)
        for path, relative, kind in found
    )
    files = [
        SourceFile(str(path), relative, kind, _read_file(path, max_bytes))
        for path, relative, kind in found
        # Hidden files and folders (.git, .github) are no articles of a plain help centre.
        if (kind == "markdown" if ours else not _hidden(relative))
    ]
    items, warnings = read_files(files, max_bytes=max_bytes, today=today)
    return SourceRead(items, lists_every_page=True, warnings=warnings)


def _opens_with_front_matter(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return starts_with_front_matter(fh.read(1024))
    except OSError:
        return False


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


def read_zip(name: str, raw: bytes, *, max_bytes: int, today: date) -> SourceRead:
    """Every .md member of a zip archive (an upload, or a file), in name order, as read_folder reads a
    folder's files (.html and .htm members too when no Markdown member has front matter); folders inside
    are fine. Other members, hidden ones and the metadata macOS adds are skipped. Each member is at most
    ``max_bytes``, and all of them together at most ZIP_MAX_MEMBERS times that."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile:
        return SourceRead([IngestFileError(name, "not a zip archive")], lists_every_page=True)
    members = [
        info
        for info in archive.infolist()
        if not info.is_dir()
        and _file_kind(info.filename, markdown=info.filename.lower().endswith(".md")) is not None
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
    items, warnings = read_files(files, max_bytes=max_bytes, today=today)
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
