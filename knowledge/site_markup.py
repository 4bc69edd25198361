"""Markdown as the site generators write it (Jekyll, Hugo, Docusaurus, MkDocs, GitHub) turned into plain
Markdown: template tags, shortcodes, admonitions, MDX imports and components, inline HTML and HTML entities
are rendered where their meaning is plain (a note keeps its text as a note) and removed where it is not (an
include, an icon, an image tag). Fenced code and code spans are never touched: they are quoted byte for byte.

Pure functions; no Django.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping
from functools import partial

# Kinds of note the generators know; a block of one becomes a paragraph led by "Note:", "Warning:" ...
NOTE_KINDS = frozenset(
    [
        "note",
        "tip",
        "info",
        "important",
        "warning",
        "caution",
        "danger",
        "hint",
        "success",
        "question",
        "example",
        "quote",
        "abstract",
        "summary",
        "attention",
        "error",
        "failure",
        "bug",
        "check",
        "todo",
        "seealso",
        "callout",
        "alert",
        "notice",
        "admonition",
    ]
)
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
# A code span never runs past the end of its paragraph.
CODE_SPAN = re.compile(r"(`+)(?!`)(?:(?!\n[ \t]*\n).)*?(?<!`)\1(?!`)", re.DOTALL)
_PLACEHOLDER = "\x00{}\x00"
_PLACEHELD = re.compile("\x00(\\d+)\x00")

# Liquid / Jinja.
_LIQUID_RAW = re.compile(r"\{%-?\s*raw\s*-?%\}(.*?)\{%-?\s*endraw\s*-?%\}", re.DOTALL)
_LIQUID_DROPPED_BLOCK = re.compile(
    r"\{%-?\s*(comment|capture)\b.*?-?%\}.*?\{%-?\s*end\1\s*-?%\}", re.DOTALL | re.IGNORECASE
)
_LIQUID_HIGHLIGHT = re.compile(
    r"\{%-?\s*highlight\s+([\w+-]+)[^%]*-?%\}\n?(.*?)\n?\{%-?\s*endhighlight\s*-?%\}", re.DOTALL
)
_LIQUID_TAG = re.compile(r"\{%-?\s*(/?)(\w+)([^%]*?)\s*-?%\}", re.DOTALL)
_LIQUID_OUTPUT = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.DOTALL)
# Hugo shortcodes: {{< name args >}}, {{% name %}}, closed by {{< /name >}}; highlight becomes a fence.
_HUGO_HIGHLIGHT = re.compile(
    r"\{\{[<%]\s*highlight\s+([\w+-]+)[^>%]*[>%]\}\}\n?(.*?)\n?\{\{[<%]\s*/highlight\s*[>%]\}\}", re.DOTALL
)
_HUGO_SHORTCODE = re.compile(r"\{\{([<%])\s*(/?)\s*([\w./-]+)(.*?)\s*/?\s*[>%]\}\}", re.DOTALL)
# Docusaurus (:::note Title) and MkDocs (!!! note "Title", ??? collapsible) admonitions, GitHub alerts.
_COLON_FENCE = re.compile(r"^\s*(:{3,})\s*(\w+)?\s*(?:\[(.*?)\]|(.*?))\s*(?:\{.*\})?\s*$")
_MKDOCS_NOTE = re.compile(r"^(\s*)(?:!!!|\?\?\?\+?)\s*([\w-]+)(?:\s+[\w\s-]*?)?(?:\s+\"(.*?)\")?\s*$")
_MKDOCS_TAB = re.compile(r'^(\s*)===\+?\s+"(.*?)"\s*$')
_GITHUB_ALERT = re.compile(r"^\s*>\s*\[!(\w+)\]\s*(.*)$")
# MDX: module lines, and components (capitalised tags) wrapped around text or standing alone.
_MDX_MODULE = re.compile(r"^(?:import\s.+|import\s*['\"].+|export\s+(?:default\s+)?(?:const|function|let)\s.+)$")
_TAB_ITEM = re.compile(r"<TabItem\b[^<>]*?\blabel=[\"']([^\"']+)[\"'][^<>]*>")
_COMPONENT_TAG = re.compile(r"</?[A-Z][\w.]*(?:\s(?:[^<>{}]|\{[^{}]*\})*)?/?>")
# HTML: comments, elements never shown as text, inline formatting, and the block elements around text.
_HTML_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_HIDDEN_ELEMENT = re.compile(r"<(head|script|style|svg|iframe|object|template)\b.*?</\1\s*>", re.DOTALL | re.IGNORECASE)
_BREAK = re.compile(r"<br\s*/?>", re.IGNORECASE)
_HTML_IMAGE = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
_HTML_LINK = re.compile(r"<a\b[^>]*?\bhref=[\"']([^\"']*)[\"'][^>]*>(.*?)</a\s*>", re.DOTALL | re.IGNORECASE)
_HTML_CODE = re.compile(r"<code\b[^>]*>(.*?)</code\s*>", re.DOTALL | re.IGNORECASE)
_HTML_STRONG = re.compile(r"<(b|strong)\b[^>]*>(.*?)</\1\s*>", re.DOTALL | re.IGNORECASE)
_HTML_EMPHASIS = re.compile(r"<(i|em)\b[^>]*>(.*?)</\1\s*>", re.DOTALL | re.IGNORECASE)
_TEXT_ELEMENTS = (
    "kbd|span|sup|sub|small|mark|abbr|u|ins|del|s|font|samp|var|cite|q|time|label|center|p|div|section|figure|"
    "figcaption|picture|source|video|audio|summary|details|dl|dt|dd|button|i|em|b|strong|a"
)
_TEXT_ELEMENT_TAG = re.compile(rf"</?(?:{_TEXT_ELEMENTS})\b[^<>]*>", re.IGNORECASE)
_DETAILS = re.compile(
    r"<details\b[^>]*>\s*<summary\b[^>]*>(.*?)</summary\s*>(.*?)</details\s*>", re.DOTALL | re.IGNORECASE
)
_HTML_TABLE = re.compile(r"<table\b[^>]*>(.*?)</table\s*>", re.DOTALL | re.IGNORECASE)
_HTML_ROW = re.compile(r"<tr\b[^>]*>(.*?)</tr\s*>", re.DOTALL | re.IGNORECASE)
_HTML_CELL = re.compile(r"<t[hd]\b[^>]*>(.*?)</t[hd]\s*>", re.DOTALL | re.IGNORECASE)
_ESCAPED_TAG = re.compile(r"&lt;(/?[A-Za-z][\w.:-]*(?:\s[^&<>]*)?)&gt;")
# Attribute lists ({: .note}, {#anchor}, { .class }), kramdown and MkDocs markers standing for generated text.
_ATTRIBUTE_LIST = re.compile(r"\s*\{:?\s*(?:[.#][\w-]+|\w+=\S+)(?:\s+(?:[.#][\w-]+|\w+=\S+))*\s*\}")
_GENERATED_LINE = re.compile(
    r"^\s*(?:\[TOC\]|\{:toc\}|\*\s+TOC|--8<--.*|\*\[[^\]]+\]:.*|\{:\s*\.?[\w-]+\s*\})\s*$", re.IGNORECASE
)
_HEADING = re.compile(r"^(#{1,6})\s")
_QUESTION = re.compile(r"^\s*(\*\*|__)?(?:Q|Question)\s*[:.]\s*(?:\*\*|__)?\s*(.+)$")
_ANSWER = re.compile(r"^\s*(?:\*\*|__)?(?:A|Answer)\s*[:.]\s*(?:\*\*|__)?\s*(.*)$")
_DEFINITION = re.compile(r"^:\s{1,4}(?=\S)")


def outside_code(text: str, transform: Callable[[str], str]) -> str:
    """Transform the text with its code spans held apart, so that nothing inside them changes."""
    spans: list[str] = []

    def hold(match: re.Match[str]) -> str:
        spans.append(match.group(0))
        return _PLACEHOLDER.format(len(spans) - 1)

    done = transform(CODE_SPAN.sub(hold, text))
    return _PLACEHELD.sub(lambda m: spans[int(m.group(1))], done)


def _note_label(kind: str, title: str | None) -> str:
    title = (title or "").strip().strip('"')
    if title:
        return f"{title}:" if not title.endswith((":", ".", "?", "!")) else title
    word = kind.strip().lower()
    return f"{word[:1].upper()}{word[1:]}:" if word and word not in ("callout", "admonition") else "Note:"


def _blocks(markdown: str) -> list[tuple[bool, str]]:
    """The document as alternating (is_code, text) blocks: fenced code apart from everything else."""
    blocks: list[tuple[bool, list[str]]] = []
    fence: str | None = None
    for line in markdown.split("\n"):
        opening = _FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(2)
            blocks.append((True, [line]))
        elif fence is not None:
            blocks[-1][1].append(line)
            if line.strip().startswith(fence[0] * len(fence)) and line.strip().strip(fence[0]) == "":
                fence = None
        elif blocks and not blocks[-1][0]:
            blocks[-1][1].append(line)
        else:
            blocks.append((False, [line]))
    return [(code, "\n".join(lines)) for code, lines in blocks]


def _liquid(text: str, variables: Mapping[str, str]) -> str:
    text = _LIQUID_DROPPED_BLOCK.sub("", text)

    def tag(match: re.Match[str]) -> str:
        name, args = match.group(2).lower(), match.group(3).split()
        if name.startswith("end") or match.group(1):
            return ""
        # "callout warning": the argument says the kind; "note" alone is its own.
        kind = next((a for a in [*args, name] if a.strip("\"'").lower() in NOTE_KINDS), None)
        if kind is not None and name in NOTE_KINDS:
            words = [a for a in args if a.strip("\"'").lower() not in NOTE_KINDS and "=" not in a]
            title = " ".join(w.strip("\"'") for w in words) or None
            return "\n\n" + _note_label(kind.strip("\"'"), title) + "\n"
        return ""

    def output(match: re.Match[str]) -> str:
        expression = match.group(1).split("|")[0].strip()
        return variables.get(expression.removeprefix("page."), "") if expression.startswith("page.") else ""

    return _LIQUID_OUTPUT.sub(output, _LIQUID_TAG.sub(tag, text))


def _hugo(text: str) -> str:
    def shortcode(match: re.Match[str]) -> str:
        closing, name, args = match.group(2), match.group(3).lower(), match.group(4)
        if closing:
            return "\n\n"
        words = re.findall(r'"([^"]*)"|(\S+)', args)
        values = [quoted or bare for quoted, bare in words]
        named = dict(v.split("=", 1) for v in values if "=" in v)
        plain = [v for v in values if "=" not in v]
        kind = next((v for v in [*plain, name] if v.lower() in NOTE_KINDS), None)
        if kind is not None and name in NOTE_KINDS:
            return "\n\n" + _note_label(kind, named.get("title", "").strip("\"'") or None) + "\n"
        if name == "tab" and (plain or "name" in named):
            return "\n\n" + _note_label("", (plain or [named.get("name", "")])[0].strip("\"'")) + "\n"
        return ""

    return _HUGO_SHORTCODE.sub(shortcode, text)


def _html(text: str, heading_level: int) -> str:
    text = _HTML_COMMENT.sub("", text)
    text = _HIDDEN_ELEMENT.sub("", text)
    level = "#" * min(6, heading_level + 1)
    # A <details> is a question and its answer (an FAQ entry): its summary is the entry's heading.
    text = _DETAILS.sub(lambda m: f"\n\n{level} {' '.join(m.group(1).split())}\n\n{m.group(2).strip()}\n\n", text)
    text = _BREAK.sub(" ", text)
    text = _HTML_IMAGE.sub("", text)
    text = _HTML_LINK.sub(lambda m: f"[{m.group(2).strip()}]({m.group(1)})", text)
    text = _HTML_CODE.sub(lambda m: f"`{html.unescape(m.group(1))}`", text)
    text = _HTML_STRONG.sub(lambda m: f"**{m.group(2)}**", text)
    text = _HTML_EMPHASIS.sub(lambda m: f"*{m.group(2)}*", text)
    text = _HTML_TABLE.sub(_pipe_table, text)
    return _TEXT_ELEMENT_TAG.sub("", text)


def _pipe_table(match: re.Match[str]) -> str:
    """An HTML table as a Markdown pipe table, its first row the header, so that each row is chunked as a
    row of its table (and a row's cells stay together)."""
    rows = [
        [" ".join(_TEXT_ELEMENT_TAG.sub("", cell).split()).replace("|", "\\|") for cell in _HTML_CELL.findall(row)]
        for row in _HTML_ROW.findall(match.group(1))
    ]
    rows = [row for row in rows if any(row)]
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    lines = ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in rows]
    return "\n\n" + "\n".join([lines[0], "|" + "---|" * width, *lines[1:]]) + "\n\n"


def _rendered(text: str, *, variables: Mapping[str, str], heading_level: int) -> str:
    return _html(_liquid(_hugo(text), variables), heading_level)


def _entities(text: str) -> str:
    """Entities decoded; an escaped tag (&lt;file&gt;, shown on the page as <file>) becomes a code span, so
    that it reads as on the page and is never taken for markup."""
    text = _ESCAPED_TAG.sub(lambda m: f"`<{html.unescape(m.group(1))}>`", text)
    return html.unescape(text)


def _admonitions(lines: list[str]) -> list[str]:
    """Docusaurus, MkDocs and GitHub notes as paragraphs led by their label; MkDocs tabs by theirs."""
    out: list[str] = []
    indent_of: list[int] = []  # the indentation MkDocs note bodies are dedented by, innermost last
    for line in lines:
        while indent_of and line.strip() and len(line) - len(line.lstrip()) < indent_of[-1]:
            indent_of.pop()
        if indent_of and line.strip():
            line = line[indent_of[-1] :]
        colon = _COLON_FENCE.match(line)
        mkdocs = _MKDOCS_NOTE.match(line)
        tab = _MKDOCS_TAB.match(line)
        alert = _GITHUB_ALERT.match(line)
        if colon:
            kind, title = colon.group(2), colon.group(3) or colon.group(4)
            out.append("" if kind is None else _note_label(kind, title))
        elif mkdocs and mkdocs.group(2).lower() in NOTE_KINDS | {"abstract", "faq"}:
            out.append(_note_label(mkdocs.group(2), mkdocs.group(3)))
            indent_of.append(len(mkdocs.group(1)) + 4)
        elif tab:
            out.append(_note_label("", tab.group(2)))
            indent_of.append(len(tab.group(1)) + 4)
        elif alert:
            out.append(f"{_note_label(alert.group(1), None)} {alert.group(2)}".rstrip())
        elif out and out[-1].endswith(":") and line.lstrip().startswith(">") and _is_label(out[-1]):
            out.append(line.lstrip()[1:].strip())  # the rest of a GitHub alert's quote
        else:
            out.append(line)
    return _join_labels(out)


def _is_label(line: str) -> bool:
    return line.endswith(":") and len(line.split()) <= 6 and not _HEADING.match(line)


def _components(text: str) -> str:
    """MDX components taken off their text; a tab keeps its label."""
    text = _TAB_ITEM.sub(lambda m: f"\n\n{_note_label('', m.group(1))}\n", text)
    return _COMPONENT_TAG.sub("", text)


def _faq_entries(lines: list[str], heading_level: int) -> list[str]:
    """FAQ entries written as "Q: … A: …" lines, or as a definition list (a term, then ": its definition"):
    each question or term becomes a heading over its answer, so that an entry is a unit of its own and its
    question is never taken for its answer."""
    out: list[str] = []
    level = heading_level
    for i, line in enumerate(lines):
        if heading := _HEADING.match(line):
            level = len(heading.group(1))
        following = next((later for later in lines[i + 1 :] if later.strip()), "")
        question = _QUESTION.match(line)
        starts_entry = bool(question) and (bool(_ANSWER.match(following)) or line.rstrip("*_ ").endswith("?"))
        term = (
            bool(_DEFINITION.match(lines[i + 1] if i + 1 < len(lines) else ""))
            and bool(line.strip())
            and not _HEADING.match(line)
            and not _DEFINITION.match(line)
            and not re.match(r"^\s*([-*+>|]|\d+[.)])", line)
        )
        if starts_entry or term:
            asked = question.group(2) if question and starts_entry else line
            out += ["", f"{'#' * min(6, level + 1)} {asked.strip().strip('*_').strip()}", ""]
        elif (answer := _ANSWER.match(line)) and out and out[-2:-1] and _HEADING.match(out[-2]):
            out.append(answer.group(1))
        elif _DEFINITION.match(line):
            out.append(_DEFINITION.sub("", line))
        else:
            out.append(line)
    return out


def _join_labels(lines: list[str]) -> list[str]:
    """A note's label on a line of its own joins the first line of the note's text (past a blank line)."""
    out: list[str] = []
    for line in lines:
        if out and _is_label(out[-1]) and not line.strip():
            continue
        if (
            out
            and _is_label(out[-1])
            and line.strip()
            and not _HEADING.match(line)
            and not _FENCE.match(line)
            and not re.match(r"^\s*([-*+]|\d+[.)]|\|)\s", line)
        ):
            out[-1] = f"{out[-1]} {line.strip()}"
            continue
        out.append(line)
    return out


def from_site_markup(markdown: str, *, variables: Mapping[str, str] | None = None) -> str:
    """Plain Markdown from a page written for a site generator; ``variables`` are the page's front matter
    fields, which ``{{ page.title }}`` and its like stand for. Plain Markdown comes back as it was."""
    variables = variables or {}
    raw: list[str] = []

    def hold_raw(match: re.Match[str]) -> str:
        raw.append(match.group(1))
        return f"\x01{len(raw) - 1}\x01"

    markdown = _LIQUID_RAW.sub(hold_raw, markdown)
    # Highlight tags open fences of their own: rendered first, so that what they hold is code.
    for highlight in (_HUGO_HIGHLIGHT, _LIQUID_HIGHLIGHT):
        markdown = highlight.sub(lambda m: f"```{m.group(1)}\n{m.group(2)}\n```", markdown)
    parts: list[str] = []
    heading_level = 1
    for code, text in _blocks(markdown):
        if code:
            parts.append(text)
            continue
        levels = [len(m.group(1)) for m in re.finditer(r"^(#{1,6})\s", text, re.MULTILINE)]
        text = outside_code(text, partial(_rendered, variables=variables, heading_level=heading_level))
        text = outside_code(text, _entities)
        lines = [
            _ATTRIBUTE_LIST.sub("", line) if not line.lstrip().startswith("|") else line
            for line in text.split("\n")
            if not _MDX_MODULE.match(line) and not _GENERATED_LINE.match(line)
        ]
        text = outside_code("\n".join(lines), _components)
        text = "\n".join(_faq_entries(_admonitions(text.split("\n")), heading_level))
        parts.append(text)
        heading_level = levels[-1] if levels else heading_level
    joined = "\n".join(parts)
    joined = re.sub("\x01(\\d+)\x01", lambda m: raw[int(m.group(1))], joined)
    return re.sub(r"\n{3,}", "\n\n", joined)
