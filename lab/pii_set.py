"""A synthetic, labelled set of support messages for measuring personal-data masking.

Each message is built from a template whose slots are filled with Faker values (names, phones, cards,
e-mails, IBANs, national IDs and street addresses of several countries) and with identifiers the
assistant needs and masking must keep (order numbers, error codes, tracking numbers, amounts, dates,
product names), and records the exact character span and kind of every value it holds. The dev and
test splits use different seeds and disjoint templates, so rules tuned on dev meet new phrasings on test.

    python -m lab.pii_set --split dev --out lab/sample/pii_dev.jsonl
    python -m lab.pii_set --split test --out lab/sample/pii_test.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from faker import Faker

# Kinds of personal data the set labels; masking must remove every one of them.
PERSONAL_KINDS = (
    "PERSON",
    "PHONE_NUMBER",
    "CREDIT_CARD",
    "EMAIL_ADDRESS",
    "IBAN_CODE",
    "NATIONAL_ID",
    "STREET_ADDRESS",
)
# Identifiers the assistant needs to answer; masking must leave every one of them.
KEPT_KINDS = ("ORDER_NUMBER", "ERROR_CODE", "TRACKING_NUMBER", "AMOUNT", "DATE", "PRODUCT")

SPLIT_SEEDS = {"dev": 1601, "test": 1602}

NAME_LOCALES = (
    "en_US", "en_GB", "en_IN", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL", "pl_PL", "yo_NG",
    "ig_NG", "tr_TR", "sw", "zu_ZA", "id_ID", "vi_VN", "pt_BR", "es_MX", "fi_FI", "sv_SE", "cs_CZ",
)  # fmt: skip
# Locales whose names Faker writes in another script; their romanised names are what customers type here.
ROMANISED_LOCALES = ("zh_CN", "ja_JP")
PHONE_LOCALES = {
    "en_US": "1", "en_GB": "44", "en_IN": "91", "de_DE": "49", "fr_FR": "33", "es_ES": "34",
    "it_IT": "39", "nl_NL": "31", "pl_PL": "48",
}  # fmt: skip
ADDRESS_LOCALES = ("en_US", "en_GB", "en_IN", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL", "pl_PL")
IBAN_LOCALES = ("en_GB", "de_DE", "fr_FR", "es_ES", "it_IT", "nl_NL", "pl_PL")
CARD_TYPES = ("visa16", "visa19", "mastercard", "amex", "maestro", "diners", "discover", "jcb16")

# The shop's own catalogue (customers/sample/customers.json) and a few more of its kind.
PRODUCTS = (
    "Washed linen duvet cover", "Linen pillowcase", "Oiled oak dining table", "Walnut reading lamp",
    "Ash side table", "Rattan floor lamp", "Linen napkins", "Beeswax candle", "Oak bookshelf",
    "Wool throw", "Stoneware mug set", "Jute rug", "Cedar bench", "Linen curtains",
)  # fmt: skip
# The help centre's payment error codes (payment-errors.md) and some that look like them.
ERROR_CODES = ("E-4012", "E-4021", "E-4030", "E-5001", "E-4031", "E-5010", "E-4015", "E-5003")
NI_PREFIX_LETTERS = "ABCEGHJKLMNOPRSTWXYZ"
DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


@dataclass(frozen=True)
class LabelledSpan:
    kind: str
    start: int
    end: int
    value: str


@dataclass(frozen=True)
class PiiMessage:
    text: str
    personal: tuple[LabelledSpan, ...]
    kept: tuple[LabelledSpan, ...]
    template: str

    def as_json(self) -> dict[str, object]:
        def spans(items: tuple[LabelledSpan, ...]) -> list[dict[str, object]]:
            return [{"kind": s.kind, "start": s.start, "end": s.end, "value": s.value} for s in items]

        return {
            "text": self.text,
            "personal": spans(self.personal),
            "kept": spans(self.kept),
            "template": self.template,
        }


# Templates: {slot} is a value (see _Values), everything else is the customer's own words, which may be
# lower-cased, stripped of punctuation or given typos. Dev and test never share a template.
DEV_TEMPLATES = (
    "Hi, my name is {name} and my order {order} hasn't arrived. You can call me on {phone}.",
    "My name is {first}. I would like to stop receiving messages to {phone}",
    "Here's my SSN: {ssn}, the form for order {order} asks for it",
    "My card {badcard} is expiring, can I update it before {date}?",
    "card number {badcard} is lost, please block it. last payment was {amount}",
    "Please refund {amount} to {iban}, account holder {name}.",
    "Ship the {product} to {address} instead please",
    "hello i am {name} my email is {email} and i got error {error} when paying",
    "I paid with {card} on {date} and was charged twice for order {order}",
    "Can you send the invoice for {order} to {email}? Thanks, {name}",
    "my phone number changed to {phone}, please update it for order {order}",
    "Delivery address: {address}. Phone: {phone}. Order {order}.",
    "The courier says tracking {tracking} is delivered but nothing came to {address}",
    "NI number {nino} - you asked for it to verify the {product} warranty",
    "bhai mera naam {first} hai, order {order} abhi tak nahi aaya, call karo {phone}",
    "mera card {badcard} se payment fail ho gaya, error {error} aa raha hai",
    "Please update my billing address to {address}, the error {error} says it doesn't match",
    "Hi {product} arrived broken on {date}. Reach me at {email} or {phone}",
    "This is {name}, I want a refund of {amount} for order {order}",
    "DNI {dni}, pedido {order}, the {product} never arrived",
    "codice fiscale {cf} for the invoice of order {order} please",
    "my PAN is {pan}, need GST invoice for {amount}",
    "I moved! New address is {address}",
    "Could you call {name} on {phone} about the delivery on {date}?",
    "Wrong charge of {amount} on card ending {card}, order {order}",
    "social security number {ssn} was requested in your email, is that legit?",
    "i'm {name}, order no {order}, the {product} is the wrong colour",
    "please transfer the refund to IBAN {iban} not to the card",
    "contact me {email} / {phone} regarding {error} error on checkout",
    "Hello, {name} here. Is order {order} shipped? Tracking number {tracking} shows nothing since {date}",
    "Order {order} placed on {date} for {amount}, still says Packed",
    "Got {error} three times today, tried two cards, order total {amount}",
    "Name: {name}\nEmail: {email}\nPhone: {phone}\nIssue: {product} missing from order {order}",
    "yes my national insurance no is {nino}",
    "my ssn {ssn} and my dob {date}",
    "Kindly deliver to {address} after {date}, {name}",
    "hey it's {name}, did you get my return for order {order}?",
    "{name} here, the {product} I got on {date} is faulty",
    "From: {name} <{email}>\nSubject: order {order}\nthe {product} never came",
    "my wife {name} placed order {order}, can she change the address to {address}",
    "the parcel is for {name}, please leave it with the neighbour",
    "Best,\n{first}\n{phone}",
    "is this {first}? i spoke to you yesterday about {error}",
    "ask for {first} when you call {phone}",
    "i am {first} from {address}, got charged {amount} twice",
    "signed, {name}",
    "{first} again - still waiting on {order}, tracking {tracking}",
    "Can {first} pick up the {product} for me on {date}?",
    "will {name} be able to sign for order {order}",
    "refund {amount} to the same card please (name on card {name})",
    "update the contact on {order}: name {name}, phone {phone}",
)
TEST_TEMPLATES = (
    "Good morning, I am writing on behalf of {name}. Her number is {phone} and the order is {order}.",
    "name's {first}, my {product} from order {order} is damaged",
    "SSN {ssn} - why does your site need this for a refund of {amount}??",
    "The card {badcard} was stolen yesterday, cancel any payment after {date}",
    "my credit card number is {badcard} and it keeps failing with {error}",
    "pls send refund {amount} to my bank account {iban}",
    "new delivery address {address}, order {order}",
    "hey its {name} again, email {email}, order {order} still not here",
    "Charged {amount} twice on {card}!! order {order}",
    "{name} ({email}) - order {order} - {product} arrived scratched",
    "whatsapp me at {phone} when order {order} ships",
    "Address for the return pickup: {address}, contact {phone}",
    "tracking no {tracking} hasnt moved since {date}, I live at {address}",
    "Please note my National Insurance number: {nino}",
    "hii mera naam {name} hai aur mera number {phone} hai, refund {amount} kab milega",
    "card {badcard} pe double charge hua hai order {order} ke liye",
    "Billing address is {address} but checkout shows {error}",
    "I can be reached at {phone} or by email at {email}. The {product} was missing.",
    "Regards,\n{name}\nOrder {order}",
    "NIE {dni} para la factura del pedido {order}",
    "my tax code (codice fiscale) is {cf}",
    "PAN card {pan}, please put it on the invoice for {amount}",
    "Please change the shipping address on order {order} to {address}",
    "Can {name} collect the parcel? her phone is {phone}",
    "the card used was {card}, payment {amount} on {date}",
    "social security {ssn}",
    "I'm {first} and I ordered the {product} on {date}",
    "IBAN for the refund: {iban} (name {name})",
    "email me on {email} or ring {phone} about the {error}",
    "Dear team, my name is {name}. Order {order} was due {date}; tracking {tracking} shows no update.",
    "Why did order {order} cost {amount}? It was {amount} on {date}",
    "{error} again!! order {order}",
    "full name: {name} | mobile: {phone} | order: {order}",
    "ni no {nino} for the finance application",
    "SSN is {ssn} dob {date}",
    "send it to {address} please, thanks {first}",
)


def _fakers(seed: int) -> dict[str, Faker]:
    # Imported here: Faker builds the set and is a development tool; `evaluate pii` only reads the built set
    # (its labels and kinds, above), and must run where only the serving requirements are installed.
    from faker import Faker

    locales = {*NAME_LOCALES, *ROMANISED_LOCALES, *PHONE_LOCALES, *ADDRESS_LOCALES, *IBAN_LOCALES, "es_ES", "it_IT"}
    fakers = {}
    for index, locale in enumerate(sorted(locales)):
        fakers[locale] = Faker(locale)
        fakers[locale].seed_instance(seed * 1000 + index)
    return fakers


class _Values:
    """Fills each slot; one instance per split, so the split's seed decides every value."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.fakers = _fakers(seed)

    def _faker(self, locales: tuple[str, ...] | list[str]) -> Faker:
        return self.fakers[self.rng.choice(list(locales))]

    # Personal data.
    def name(self) -> str:
        if self.rng.random() < 0.1:
            return str(self._faker(ROMANISED_LOCALES).romanized_name())
        faker = self._faker(NAME_LOCALES)
        return f"{faker.first_name()} {faker.last_name()}"

    def first(self) -> str:
        if self.rng.random() < 0.1:
            return str(self._faker(ROMANISED_LOCALES).romanized_name()).split()[-1]
        return str(self._faker(NAME_LOCALES).first_name())

    def phone(self) -> str:
        locale = self.rng.choice(list(PHONE_LOCALES))
        faker = self.fakers[locale]
        written = re.split(r"x|ext", faker.phone_number())[0].strip()
        if self.rng.random() < 0.5:
            return written
        # Rewritten the ways customers type numbers: grouped by spaces, dots or dashes, with or without
        # the country code, the trunk zero in brackets.
        national = re.sub(r"\D", "", written)
        code = PHONE_LOCALES[locale]
        if national.startswith(code) and written.lstrip().startswith("+"):
            national = national[len(code) :]
        national = national.lstrip("0") if locale != "it_IT" else national
        if len(national) < 9 and locale not in ("de_DE", "it_IT"):
            national = national + "".join(self.rng.choice(string.digits) for _ in range(9 - len(national)))
        sizes = self.rng.choice(((3, 3, 3), (3, 3, 4), (2, 2, 2, 3), (4, 3, 3), (3, 4, 3)))
        groups, rest = [], national
        for size in sizes:
            if rest:
                groups.append(rest[:size])
                rest = rest[size:]
        if rest:
            groups[-1] += rest
        separator = self.rng.choice((" ", ".", "-", " "))
        style = self.rng.choice(("plus", "plus", "zero", "brackets", "bare"))
        if style == "plus":
            return f"+{code} " + separator.join(groups)
        if style == "brackets":
            return f"(0{groups[0]}) " + " ".join(groups[1:])
        if style == "zero":
            return "0" + separator.join(groups)
        return separator.join(groups)

    def _card_digits(self) -> str:
        return str(self.fakers["en_US"].credit_card_number(self.rng.choice(CARD_TYPES)))

    def _card_written(self, digits: str) -> str:
        style = self.rng.random()
        if style < 0.4 or len(digits) != 16:
            return digits
        separator = " " if style < 0.8 else "-"
        return separator.join(digits[i : i + 4] for i in range(0, 16, 4))

    def card(self) -> str:
        return self._card_written(self._card_digits())

    def badcard(self) -> str:
        """A card number after the word "card"; half of them fail the Luhn check (a typo, or a test)."""
        digits = self._card_digits()
        if self.rng.random() < 0.5:
            digits = digits[:-1] + str((int(digits[-1]) + self.rng.randint(1, 9)) % 10)
        return self._card_written(digits)

    def email(self) -> str:
        faker = self._faker(NAME_LOCALES[:12])
        if self.rng.random() < 0.5:
            return str(faker.email())
        from faker.decode import unidecode

        first, last = faker.first_name(), faker.last_name()
        local = re.sub(r"[^a-z0-9._]", "", unidecode(f"{first}.{last}").lower()).strip(".") or "customer"
        domain = self.rng.choice(("gmail.com", "yahoo.co.in", "outlook.com", "web.de", "orange.fr", "hotmail.it"))
        return f"{local}{self.rng.randint(1, 99) if self.rng.random() < 0.5 else ''}@{domain}"

    def iban(self) -> str:
        iban = str(self._faker(IBAN_LOCALES).iban())
        if self.rng.random() < 0.5:
            return " ".join(iban[i : i + 4] for i in range(0, len(iban), 4))
        return iban

    def ssn(self) -> str:
        ssn = str(self.fakers["en_US"].ssn())
        return self.rng.choice((ssn, ssn, ssn.replace("-", " "), ssn.replace("-", "")))

    def nino(self) -> str:
        # Faker's en_GB numbers all start with ZZ, a prefix reserved for tests; real ones look like this.
        letters = self.rng.choice(NI_PREFIX_LETTERS.replace("O", "")) + self.rng.choice(NI_PREFIX_LETTERS)
        digits = "".join(self.rng.choice(string.digits) for _ in range(6))
        suffix = self.rng.choice("ABCD")
        if self.rng.random() < 0.5:
            return f"{letters} {digits[:2]} {digits[2:4]} {digits[4:]} {suffix}"
        return f"{letters}{digits}{suffix}"

    def dni(self) -> str:
        # Faker's es_ES nif() draws from the global random generator, which no seed here controls.
        number = self.rng.randrange(10_000_000 if self.rng.random() < 0.6 else 0, 100_000_000)
        if number < 10_000_000:  # a NIE: X, Y or Z for the leading digit, seven digits
            prefix = self.rng.choice("XYZ")
            number = "XYZ".index(prefix) * 10_000_000 + number
            return f"{prefix}{number % 10_000_000:07d}{DNI_LETTERS[number % 23]}"
        return f"{number:08d}{DNI_LETTERS[number % 23]}"

    def cf(self) -> str:
        return str(self.fakers["it_IT"].ssn())

    def pan(self) -> str:
        letters = "".join(self.rng.choice(string.ascii_uppercase) for _ in range(3))
        holder = self.rng.choice("PCHFAT")
        digits = "".join(self.rng.choice(string.digits) for _ in range(4))
        initial, check = self.rng.choice(string.ascii_uppercase), self.rng.choice(string.ascii_uppercase)
        return f"{letters}{holder}{initial}{digits}{check}"

    def address(self) -> str:
        faker = self._faker(ADDRESS_LOCALES)
        street = str(faker.street_address() if self.rng.random() < 0.5 else faker.address())
        return ", ".join(part.strip() for part in street.splitlines() if part.strip())

    # Identifiers the assistant needs.
    def order(self) -> str:
        digits = "".join(self.rng.choice(string.digits) for _ in range(7))
        return self.rng.choice(
            (f"LO-{digits}", f"LO-{digits}", f"#LO-{digits}", f"lo-{digits}", f"LO{digits}", f"#{digits[:4]}")
        )

    def error(self) -> str:
        code = self.rng.choice(ERROR_CODES)
        return self.rng.choice((code, code, code.lower(), code.replace("-", "")))

    def tracking(self) -> str:
        digits = "".join(self.rng.choice(string.digits) for _ in range(12))
        return self.rng.choice(
            (
                f"{digits[:4]} {digits[4:8]} {digits[8:]}",
                digits,
                f"PF{digits[:7]}GB",
                f"RM{digits[:9]}GB",
            )
        )

    def amount(self) -> str:
        value = self.rng.choice((8.5, 19.5, 45, 89, 120, 149, 899, 1234.56, 24.99, 2499))
        written = f"{value:,.2f}" if self.rng.random() < 0.6 else f"{value:,.0f}"
        currencies = (f"${written}", f"£{written}", f"€{written}", f"{written} EUR", f"Rs {written}", f"₹{written}")
        return self.rng.choice(currencies)

    def date(self) -> str:
        day = self.fakers["en_US"].date_between(start_date="-1y", end_date="+60d")
        return self.rng.choice(
            (
                day.isoformat(),
                day.strftime("%d/%m/%Y"),
                day.strftime("%d.%m.%Y"),
                day.strftime("%B %d").replace(" 0", " "),
                day.strftime("%d %b").lstrip("0"),
                day.strftime("%m/%d"),
            )
        )

    def product(self) -> str:
        return self.rng.choice(PRODUCTS)


_SLOT_KINDS = {
    "name": "PERSON", "first": "PERSON", "phone": "PHONE_NUMBER", "card": "CREDIT_CARD",
    "badcard": "CREDIT_CARD", "email": "EMAIL_ADDRESS", "iban": "IBAN_CODE", "ssn": "NATIONAL_ID",
    "nino": "NATIONAL_ID", "dni": "NATIONAL_ID", "cf": "NATIONAL_ID", "pan": "NATIONAL_ID",
    "address": "STREET_ADDRESS", "order": "ORDER_NUMBER", "error": "ERROR_CODE", "tracking": "TRACKING_NUMBER",
    "amount": "AMOUNT", "date": "DATE", "product": "PRODUCT",
}  # fmt: skip
# Values a customer typing in lower case writes in lower case too.
_LOWERED_WITH_MESSAGE = {"name", "first", "email", "address", "product"}
_SLOT = re.compile(r"\{(\w+)\}")


def _typo(word: str, rng: random.Random) -> str:
    if len(word) < 4 or not word.isalpha():
        return word
    i = rng.randrange(1, len(word) - 1)
    if rng.random() < 0.5:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]  # two letters swapped
    return word[:i] + word[i + 1 :]  # a letter dropped


def _words(text: str, rng: random.Random, *, lower: bool, bare: bool) -> str:
    if lower:
        text = text.lower()
    if bare:
        text = re.sub(r"[.,!?;:]", "", text)
    return re.sub(r"[A-Za-z]+", lambda m: _typo(m.group(), rng) if rng.random() < 0.04 else m.group(), text)


def render(template: str, values: _Values) -> PiiMessage:
    """One message from a template: the customer's words styled at random, every slot filled and labelled."""
    rng = values.rng
    lower = rng.random() < 0.3
    bare = rng.random() < 0.25
    pieces: list[str] = []
    personal: list[LabelledSpan] = []
    kept: list[LabelledSpan] = []
    cursor = 0
    length = 0
    for match in _SLOT.finditer(template):
        literal = _words(template[cursor : match.start()], rng, lower=lower, bare=bare)
        pieces.append(literal)
        length += len(literal)
        slot = match.group(1)
        filler: Callable[[], str] = getattr(values, slot)
        value = filler()
        if lower and slot in _LOWERED_WITH_MESSAGE and rng.random() < 0.6:
            value = value.lower()
        kind = _SLOT_KINDS[slot]
        span = LabelledSpan(kind, length, length + len(value), value)
        (personal if kind in PERSONAL_KINDS else kept).append(span)
        pieces.append(value)
        length += len(value)
        cursor = match.end()
    pieces.append(_words(template[cursor:], rng, lower=lower, bare=bare))
    return PiiMessage("".join(pieces), tuple(personal), tuple(kept), template)


def generate(split: str, count: int) -> list[PiiMessage]:
    if split not in SPLIT_SEEDS:
        raise ValueError(f"Unknown split {split!r}; use one of {sorted(SPLIT_SEEDS)}.")
    templates = DEV_TEMPLATES if split == "dev" else TEST_TEMPLATES
    values = _Values(SPLIT_SEEDS[split])
    return [render(templates[i % len(templates)], values) for i in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description="Write a labelled set of support messages with personal data.")
    parser.add_argument("--split", choices=sorted(SPLIT_SEEDS), required=True)
    parser.add_argument("--count", type=int, default=360)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    messages = generate(args.split, args.count)
    args.out.write_text("".join(json.dumps(m.as_json(), ensure_ascii=False) + "\n" for m in messages))


if __name__ == "__main__":
    main()
