"""Reading source documents: Markdown files with YAML front matter, and BEIR corpora.

Pure functions: every problem becomes an IngestFileError naming the file, line and field.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import yaml

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


# A zip's members are read into memory: bounded in number and in total size as well as one by one, so
# that a small upload cannot expand into gigabytes.
ZIP_MAX_MEMBERS = 2_000


def read_markdown_zip(name: str, raw: bytes, *, max_bytes: int) -> list[SourceDocument | IngestFileError]:
    """Every .md member of a zip archive (an upload, or a file), in name order; folders inside are fine.
    Members other than Markdown, and the metadata macOS adds, are skipped. Each member is at most
    ``max_bytes``, and all of them together at most ZIP_MAX_MEMBERS times that."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile:
        return [IngestFileError(name, "not a zip archive")]
    members = [
        info
        for info in archive.infolist()
        if not info.is_dir()
        and info.filename.lower().endswith(".md")
        and not any(part.startswith((".", "__MACOSX")) for part in info.filename.split("/"))
    ]
    if not members:
        return [IngestFileError(name, "the archive holds no .md files")]
    if len(members) > ZIP_MAX_MEMBERS:
        return [
            IngestFileError(
                name, f"the archive holds {len(members):,} .md files, over the limit of {ZIP_MAX_MEMBERS:,}"
            )
        ]
    total = sum(info.file_size for info in members)
    if total > max_bytes * ZIP_MAX_MEMBERS:
        return [
            IngestFileError(
                name, f"the archive expands to {total:,} bytes, over the limit of {max_bytes * ZIP_MAX_MEMBERS:,}"
            )
        ]
    items: list[SourceDocument | IngestFileError] = []
    for info in sorted(members, key=lambda i: i.filename):
        path = f"{name}!{info.filename}"
        if info.flag_bits & 0x1:
            items.append(IngestFileError(path, "the file is encrypted"))
            continue
        if info.file_size > max_bytes:
            items.append(
                IngestFileError(path, f"file is {info.file_size:,} bytes, over the limit of {max_bytes:,} bytes")
            )
            continue
        try:
            with archive.open(info) as member:
                # The size in the directory can lie: read one byte past the limit to know.
                content = member.read(max_bytes + 1)
            items.append(parse_markdown(path, content, max_bytes=max_bytes))
        except IngestFileError as exc:
            items.append(exc)
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, NotImplementedError) as exc:  # corrupt, or unknown
            items.append(IngestFileError(path, f"could not be read from the archive: {exc}"))
    return items


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
