"""What personal data looks like in support messages: patterns, checksums and the words around them.

Plain regular expressions and functions, without Presidio, so answering.privacy.masking can hand the patterns
to Presidio's recognisers and apply the context rules itself, and tests can read them alone.
Presidio compiles its patterns case-insensitively; "(?-i:" marks the parts where case carries meaning.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


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


def digits_of(value: str) -> str:
    return "".join(char for char in value if char.isdigit())


# --- Cards -------------------------------------------------------------------------------------------
# Presidio's card pattern only accepts the prefixes of a few issuers. Any 12 to 19 digits, unbroken or
# in groups of four, are a card once they pass the Luhn check (applied by answering.privacy.masking); after the
# word "card" they are a card whatever the checksum says (see CONTEXT_RULES).
CARD_REGEX = r"\b(?:\d{4}(?P<sep>[ \-])\d{4}(?P=sep)\d{4}(?P=sep)\d{1,7}|\d{12,19})\b"

# A number written with its country code ("+44 20 7946 0958", "+91 597.0111.528") is a phone number in any
# format; Presidio's recogniser only knows the formats of the regions it is given.
INTERNATIONAL_PHONE_REGEX = r"(?<![\w+])\+\d{1,3}(?:[ .\-]|\(0\)\s?)?\(?\d{1,5}\)?(?:[ .\-]?\d{1,5}){1,5}\b"

# --- Account numbers ---------------------------------------------------------------------------------
# An IBAN in any case and grouping ("gb42nawi04454264788619" typed into a chat); Presidio's recogniser only
# reads capitals. The mod-97 check (iban_valid) keeps order and tracking references out.
IBAN_REGEX = r"(?i)(?<![a-z0-9])[a-z]{2}\d{2}(?:[ \-]?[a-z0-9]{4}){2,7}(?:[ \-]?[a-z0-9]{1,3})?(?![a-z0-9])"


def iban_valid(value: str) -> bool:
    """The ISO 13616 check: the country and check digits moved to the end, letters as 10..35, mod 97 is 1."""
    compact = re.sub(r"[\s\-]", "", value).upper()
    if not 15 <= len(compact) <= 34 or not compact.isalnum():
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(char, 36)) for char in rearranged)) % 97 == 1


# --- Phone numbers in any grouping ------------------------------------------------------------------
# Digits in two or more groups, as every country writes them ("(37) 788-063", "60-56-85-91", "0171 498 2210",
# "555.014.2233 x12"); Presidio's recogniser knows only the formats of the regions it is given. Dates, order
# and tracking references, amounts and versions are told apart by answering.privacy.masking (digit count, what comes
# before, the date pattern). Twelve digits in three fours are a tracking number, and a year-month-day or digits
# running into a time are a date: neither is a phone.
GROUPED_PHONE_REGEX = (
    r"(?<![\w+/.,\-])(?<!\d[ .\-])(?!\d{4}([ .\-])\d{4}\1\d{4}\b|\d{4}-\d{1,2}-\d{1,2}\b)"
    r"(?:\(\d{1,5}\)[ .\-]?|\d{1,5}[ .\-])(?:\d{1,5}[ .\-]){0,5}\d{2,6}"
    r"(?:[ \t]*(?:x|ext\.?|extension)[ \t]*\d{1,5})?(?![\w/]|[.,:\-]\d)"
)


# --- National identity numbers ----------------------------------------------------------------------
# Formats distinctive enough to mask without a context word; each (name, regex, score).
NATIONAL_ID_PATTERNS = (
    # US social security number, written with dashes or spaces (bare nine digits need "SSN" before them).
    ("US SSN", r"\b(?!000|666|9\d\d)\d{3}(?P<sep>[- ])(?!00)\d{2}(?P=sep)(?!0000)\d{4}\b", 0.5),
    # UK National Insurance number: two prefix letters (D, F, I, Q, U, V never; O never first), six digits, A-D.
    ("UK NINO", r"\b[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b", 0.5),
    # Spanish DNI (8 digits and a check letter) or NIE (X, Y or Z, 7 digits, letter); the letter is checked.
    ("ES DNI/NIE", r"\b[XYZ]?-?\d{7,8}-?[A-Z]\b", 0.5),
    # Italian codice fiscale: surname and name letters, birth year, month letter, day, place code, check.
    ("IT codice fiscale", r"\b[A-Z]{6}\d{2}[A-EHLMPR-T]\d{2}[A-Z]\d{3}[A-Z]\b", 0.6),
    # Indian PAN: three letters, the holder type (P person, C company, ...), a letter, four digits, a letter.
    ("IN PAN", r"\b[A-Z]{3}[ABCFGHJLPT][A-Z]\d{4}[A-Z]\b", 0.5),
)
_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def national_id_valid(value: str) -> bool:
    """The checksum of the formats that carry one (Spanish DNI/NIE); True for the others."""
    compact = re.sub(r"[\s\-]", "", value).upper()
    match = re.fullmatch(r"([XYZ]?)(\d{7,8})([A-Z])", compact)
    if match is None:
        return True
    prefix, number, letter = match.groups()
    if len(prefix + number) != 8:
        return False
    number = str("XYZ".index(prefix)) + number if prefix else number
    return _DNI_LETTERS[int(number) % 23] == letter


# --- Street addresses -------------------------------------------------------------------------------
# English street types: the common ones may be written in lower case ("12 baker street"); the rest of
# USPS's list only when capitalised, as "3 business days" must not read as an address.
_STREET_TYPES_PLAIN = r"street|st|road|rd|avenue|ave|lane|ln|boulevard|blvd|highway|hwy"
_STREET_TYPES_CAPITALISED = (
    r"Drive|Dr|Way|Court|Ct|Place|Pl|Close|Crescent|Terrace|Square|Sq|Gardens|Grove|Parade|Row|Mews|Hill|"
    r"Parkway|Pkwy|Alley|Bypass|Causeway|Center|Circle|Cliff|Club|Common|Corner|Course|Cove|Creek|Crest|"
    r"Crossing|Crossroad|Curve|Dale|Dam|Divide|Estates?|Expressway|Extension|Falls|Ferry|Fields?|Flats?|"
    r"Ford|Forest|Forge|Forks?|Fort|Freeway|Gardens?|Gateway|Glens?|Greens?|Harbors?|Haven|Heights|Hollow|"
    r"Inlet|Islands?|Isle|Junction|Keys?|Knolls?|Lakes?|Landing|Lights?|Loaf|Locks?|Lodge|Loop|Mall|Manors?|"
    r"Meadows?|Mills?|Mission|Motorway|Mount|Mountains?|Neck|Orchard|Oval|Park|Pass|Path|Pike|Pines?|"
    r"Plains?|Plaza|Points?|Ports?|Prairie|Radial|Ranch|Rapids?|Rest|Ridges?|River|Route|Run|Shoals?|"
    r"Shores?|Skyway|Springs?|Spurs?|Station|Stravenue|Stream|Summit|Throughway|Trace|Track|Trafficway|"
    r"Trail|Tunnel|Turnpike|Underpass|Unions?|Valleys?|Viaduct|Views?|Villages?|Ville|Vista|Walks?|Wall|"
    r"Wells?|Burgs?|Bluffs?|Bottom|Branch|Bridge|Brook|Camp|Canyon|Cape|Centers?|Circles?|Corners?|Coves?|"
    r"Creek|Drives?|Ways?|Ganj|Nagar|Marg|Chowk|Colony|Zila|Puram|Bagh|Enclave"
)
_CAP_WORD = r"(?-i:[A-Z][\w'\-]*\.?)"
_ANY_WORD = r"[^\W\d_][\w.'\-]*"
# Words that end an address written without punctuation ("ship to rue Michel please").
_NOT_ADDRESS_WORD = (
    r"(?!(?:please|pls|and|or|but|instead|order|phone|contact|after|before|thanks|thank|since|is|was|"
    r"the|my|for|to|on|in|at|from|with|asap|today|tomorrow|kab|hai|se|ke|ko|error|tracking)\b)"
)
# A town's words have no digits, so "London NW1 6XE" leaves the postcode to the postcode.
_TOWN_WORD = _NOT_ADDRESS_WORD + r"[^\W\d_](?:[^\W\d_]|[.'\-])*(?!\w)"
_TOWN = _TOWN_WORD + r"(?:[ \t]+" + _TOWN_WORD + r"){0,3}"
# Flat, apartment and floor, before or after the street, as the countries write them.
_UNIT_WORD = (
    r"(?:Apt\.?|Apartment|Suite|Ste\.?|Flat|Unit|Studio|appartamento|Piano|Interno|Piso|Puerta|Escalera|"
    r"Bloque|Stiege|Top|bus)"
)
_UNIT = r"(?:,?[ \t]+" + _UNIT_WORD + r"[ \t]*\d+[A-Z]?)?"
_UNIT_FIRST = r"\b" + _UNIT_WORD + r"[ \t]*\d+[A-Z]?,?"
# Postcodes: US ZIP, Indian PIN, Polish, Dutch, UK.
_POSTCODE = r"(?:\d{5}(?:-\d{4})?|\d{6}|\d{2}-\d{3}|\d{4}[ \t]?[A-Z]{2}|[A-Z]{1,2}\d[A-Z\d]?[ \t]?\d[A-Z]{2})\b"
# What follows the street: postcodes, towns, provinces ("Lake Victoria, VI 39349", ", 84026, postiglione
# (sa)", ", Anand 228247", "Sasaram-447042"). A town needs a comma before it, a postcode does not.
_TAIL_PART = (
    r"(?:"
    + _POSTCODE
    + r"(?:[ \t]+"
    + _TOWN
    + r")?|"
    + _TOWN
    + r"(?:[ \t]*-[ \t]*\d{5,6}|[ \t]+"
    + _POSTCODE
    + r")?)(?:[ \t]+\([A-Z]{2}\))?"
)
_TAIL = r"(?:(?:,[ \t]*|[ \t]+(?=\d))" + _TAIL_PART + r"){0,4}"
# Street types written as their own word after the street's name, in the orders other countries use
# ("Erzsébet tér 19", "Bahçe Sokak 12", "Rua das Flores 8", "Nørre Allé 5").
_STREET_TYPES_AFTER = (
    r"utca|út|útja|tér|tere|körút|köz|sor|fasor|rakpart|sétány|gatan|gata|vägen|väg|gränd|vej|gade|allé|"
    r"katu|tie|kuja|cesta|ulica|ulice|náměstí|třída|sokak|sokağı|caddesi|cad\.|mahallesi|bulvarı|"
    r"strasse|straße|straat|ulitsa|prospekt|pereulok|shosse|naberezhnaya|odos|leoforos"
)
STREET_ADDRESS_PATTERNS = (
    # 221B Baker Street, 8353 Kathleen Highway Apt. 681, 12 baker street, H.No. 806, Sami Ganj, 20/323, Bhasin Circle
    (
        "English street",
        r"(?:" + _UNIT_FIRST + r"(?:[ \t]+\d{1,5}[A-Z]?,?)?"
        r"|(?:\b(?:H\.?\s?No\.?|House\s+No\.?|Flat\s+No\.?)\s*)?\b\d{1,5}(?:/\d{1,5})?[A-Z]?,?)"
        r"(?:(?:\s+" + _CAP_WORD + r"){1,4}\s+(?-i:(?:" + _STREET_TYPES_CAPITALISED + r")s?)"
        r"|(?:\s+" + _NOT_ADDRESS_WORD + _ANY_WORD + r"){1,3}\s+(?:" + _STREET_TYPES_PLAIN + r"))\b\.?"
        r"(?:\s+(?-i:NE|NW|SE|SW|N|S|E|W)\b)?" + _UNIT + _TAIL,
    ),
    # Annelise-Hartung-Straße 68, Jockelstr. 5358, Basbaan 8, Collinboulevard 3
    (
        "German or Dutch street",
        r"\b[^\W\d_][\w\-]*(?:straße|strasse|str\.|weg|gasse|platz|allee|ring|damm|ufer|chaussee|"
        r"straat|laan|baan|dreef|hof|pad|singel|steeg|gracht|kade|dijk|plein|boulevard|markt|gatan|vägen|gade|vej|"
        r"katu|tie|veien|gata|utca|körút)\s+\d{1,4}"
        r"(?:\s?[a-z]\b)?(?:[-/]\d{1,4})?\b" + _UNIT + _TAIL,
    ),
    # 233 Erzsébet tér 19. Suite 282; Bahçe Sokak No: 12; Nørre Allé 5
    (
        "Street type after the name",
        r"(?:\b\d{1,5}[A-Z]?,?[ \t]+)?(?-i:[^\W\d_a-z][\w'\-]*\.?)(?:[ \t]+(?-i:[^\W\d_a-z][\w'\-]*\.?)){0,3}"
        r"[ \t]+(?i:"
        + _STREET_TYPES_AFTER
        + r")\b(?:[ \t]+(?:No\.?:?[ \t]*)?\d{1,5}[a-zA-Z]?\b\.?(?:/\d{1,4})?)?"
        + _UNIT
        + r"(?:[ \t]+(?-i:[^\W\d_a-z][^\W\d_]+)(?=[ \t]*(?:[,.\n]|$)))?"
        + _TAIL,
    ),
    # 5586 Þórunnarstræti 31, 87818 Dalmatinova 68 Apt. 263: a house number, a street named without a type
    # word, its number; the street's words capitalised or written with letters English has none of.
    (
        "Number, street name, number",
        r"\b\d{1,5}[ \t]+(?:(?-i:[^\W\d_a-z][^\W\d_]*\.?)|[a-z]*[^\W\d_a-z\x00-\x7f][^\W\d_]*)"
        r"(?:[ \t]+(?:(?-i:[^\W\d_a-z][^\W\d_]*\.?)|[^\W\d_]*[^\W\d_\x00-\x7f][^\W\d_]*|da|de|do|di|del|la|le)){0,4}"
        r"[ \t]+\d{1,4}[a-zA-Z]?\b(?:/\d{1,4})?" + _UNIT + _TAIL,
    ),
    # P.O. Box 186, PSC 0272, Box 1651, Unit 5146 Box 1772: post office and forces' boxes.
    (
        "Post box",
        r"(?:\b\d{1,5}[ \t]+)?\b(?:P\.?[ \t]?O\.?[ \t]*Box|Post(?:al)?[ \t]+Office[ \t]+Box|"
        r"PSC[ \t]+\d{1,5},?[ \t]+Box|Unit[ \t]+\d{1,5},?[ \t]+Box)[ \t]+\d{1,6}\b" + _UNIT + _TAIL,
    ),
    # 6, rue Michel; avenue de Da Costa; Calle Mayor 5; Paseo de Joan Ojeda 83 Piso 0; Viale Simone, 5;
    # ul. Malczewskiego 81; aleja Turystyczna 39/15
    (
        "Romance or Polish street",
        r"(?:\b\d{1,4}(?:\s?(?:bis|ter))?,?\s+)?\b(?:rue|avenue|av\.|boulevard|bd|chemin|allée|impasse|quai|"
        r"calle|c/|avenida|avda\.?|paseo|plaza|camino|carrer|ronda|travesía|glorieta|callejón|pasaje|rambla|"
        r"alameda|cañada|carretera|urbanización|acceso|cuesta|via|viale|piazza|piazzale|corso|largo|vicolo|"
        r"strada|contrada|borgo|rotonda|incrocio|canale|stretto|lungomare|piazzetta|"
        r"ul\.|ulica|al\.|aleja|pl\.|plac|os\.|osiedle|rondo)"
        r"(?:\s+" + _NOT_ADDRESS_WORD + _ANY_WORD + r"){1,4},?(?:\s+\d{1,4}[A-Za-z]?(?:/\d{1,4})?\b)?" + _UNIT + _TAIL,
    ),
)


# --- Words before a value that decide its kind ------------------------------------------------------
@dataclass(frozen=True)
class ContextRule:
    """A value that is personal data of ``kind`` when the words matching ``before`` come right before it."""

    kind: str
    before: re.Pattern[str]  # ends where the value may start
    found: re.Pattern[str]  # the words and the value, the value in the group "value"


def _rule(kind: str, words: str, value: str) -> ContextRule:
    return ContextRule(
        kind,
        re.compile(f"(?:{words})$", re.IGNORECASE),
        re.compile(f"(?:{words})(?P<value>{value})", re.IGNORECASE),
    )


_NAME_WORD = r"[^\W\d_][^\W\d_'\-]*(?:['\-][^\W\d_]+)*"
# Words that end a name written without punctuation ("my name is rubija and my order ...").
_NOT_NAME_WORD = (
    r"(?!(?:and|or|but|i|im|my|me|from|here|hai|hoon|hu|hun|aur|the|a|an|order|please|pls|plz|with|"
    r"again|calling|writing|speaking|phone|email|mail|number|mobile|is|was|not|no|on|in|at|for|to|of|by|"
    r"sir|madam|ji|regarding|about|thanks|thank|you|your|we|our|it|this|that|why|what|when|how|can|could|"
    r"placed|ordered|bought|paid|wants|wanted|said|says|has|had|have|will|would|got|received|asap|he|she|"
    r"they|him|her|them|someone|somebody|anyone|anybody|everyone|nobody|"
    r"today|tomorrow|yesterday|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b)"
)
# A name is one to three words; stopping at a function word keeps the rest of the sentence.
_NAME = _NOT_NAME_WORD + _NAME_WORD + r"(?:[ \t]+" + _NOT_NAME_WORD + _NAME_WORD + r"){0,2}"
_CAPITALISED_WORD = r"[^\W\d_a-z][^\W\d_'\-]*(?:['\-][^\W\d_]+)*"
# An initial keeps its full stop: "Faina D. Yefremova".
_CAPITALISED_NAME = r"(?-i:" + _CAPITALISED_WORD + r"(?:[ \t]+" + _CAPITALISED_WORD + r"(?:(?<=\b[^\W\d_])\.)?){0,3})"
# A capitalised first and last name with initials between ("Szabina J Gelencsér", "Faina D. Yefremova"):
# the shape of a person's name wherever it stands, which the small NER model misses in names it never saw.
NAME_WITH_INITIAL_REGEX = (
    r"(?-i:\b[^\W\d_a-z][^\W\d_A-Z]+(?:[ \t]+[^\W\d_a-z]\.?){1,2}[ \t]+[^\W\d_a-z][^\W\d_A-Z]+"
    r"(?:-[^\W\d_a-z][^\W\d_A-Z]+)?\b)"
)
# What customers write after "I'm" or "this is" when no name follows.
_NOT_A_NAME_AFTER_I_AM = (
    r"(?!(?:sorry|urgent|ridiculous|unacceptable|frustrated|annoyed|disappointed|confused|worried|upset|"
    r"trying|waiting|looking|getting|having|still|so|very|really|just|also|going|contacting|asking|"
    r"interested|unable|able|happy|unhappy|sure|new|back|done|fine|ok|okay|there|now|ready|late|wrong|"
    r"correct|right|bad|good|great|terrible|awful|weird|strange|odd|important|afraid|tired|fed|sick|"
    r"abroad|away|home|out|moving|travelling|traveling|based|located|living|a|an|the|my|your|not)\b)"
)
# A name ends where the sentence does, or before the words that follow a name.
_NAME_ENDS = r"(?=[ \t]*(?:[,.!?;:]|$)|[ \t]+(?:here|again|from|and|my|did|i|want|wanted|placed|ordered|order)\b)"
_SIGN_OFF = (
    r"regards|kind\s+regards|best\s+regards|warm\s+regards|best|thanks|thank\s+you|many\s+thanks|cheers|"
    r"signed|sincerely|yours|br"
)

_HONORIFIC = r"(?:mr|mrs|ms|miss|mx|dr|prof|professor|sir|madam|dame|mme|mlle|herr|frau|sr|sra|srta|sig|sig\.ra)"
# Labels of forms, records and signatures after which a name follows: "Customer: Faina D. Yefremova",
# "Attn: …", "Signed: …"; the name is capitalised, as forms write it.
_PERSON_LABELS = (
    r"contact(?:\s+person)?|customer|client|patient|applicant|candidate|employee|attn|attention|recipient|"
    r"sender|signed|signature|author|manager|supervisor|landlord|tenant|guest|passenger|beneficiary|"
    r"(?:account\s+)?holder|owner|student|teacher|witness|emergency\s+contact|next\s+of\s+kin|spouse|"
    r"(?:first|last|middle|given|family|sur)\s*name|surname|forename"
)
# Address labels; an e-mail, IP or web address is another kind.
_ADDRESS_LABELS = (
    r"(?<!e-)(?<!e)(?<!ip)(?<!web)(?<!mac)(?<!email)\b(?:(?:street|home|postal|mailing|billing|shipping|"
    r"delivery|residential|permanent|current|office|work|business)\s+)?(?:address|addr\.?)"
)

CONTEXT_RULES = (
    # "my name is rubija", "mera naam Uwe hai", "Name: Ayinde Faleti": the words say a name follows,
    # whatever its case and however rare it is for the NER model.
    _rule(
        "PERSON",
        r"\b(?:(?:my\s+)?(?:full\s+)?(?:name\s+is|name's|naam(?:\s+hai)?|naam\s+is)|name\s*[:\-]|"
        r"mera\s+naam|account\s+holder|card\s*holder|on\s+behalf\s+of|from:|"
        r"(?:my|our)\s+(?:wife|husband|partner|son|daughter|mother|father|mum|mom|dad|brother|sister|friend|"
        r"colleague|neighbour|neighbor)|(?:parcel|package|delivery)\s+(?:is\s+)?(?:for|to))[ \t]*",
        _NAME,
    ),
    # A salutation or an honorific: "Dear Szabina,", "Dr. Kowalczyk", "Mrs O'Neill".
    _rule("PERSON", r"\bdear[ \t]+(?:" + _HONORIFIC + r"\.?[ \t]+)?|\b" + _HONORIFIC + r"\.?[ \t]+", _CAPITALISED_NAME),
    _rule("PERSON", r"\b(?:" + _PERSON_LABELS + r")[ \t]*:[ \t]*\n?[ \t]*", _CAPITALISED_NAME),
    # "Address:" then the rest of the line (or the next line when the label ends its own).
    # It ends where a reference or the next sentence starts: "delivery address: 4 Elm Road, order #8140".
    _rule(
        "LOCATION",
        _ADDRESS_LABELS + r"[ \t]*:[ \t]*\n?[ \t]*",
        r"[^\s:][^\n;|]{2,100}?(?=[ \t]*(?:[;|\n]|$)|[ \t]*[,.]?[ \t]+(?:order|pedido|invoice|ticket|ref|reference|"
        r"tracking|please|thanks|and\s+(?:my|the|phone|email|order))\b|[ \t]*[,.]?[ \t]*\#"
        r"|\.[ \t]+(?-i:[A-Z])[a-z]+[ \t])",
    ),
    # Where someone lives or wants a parcel, said in words: "lives at 333 Golfskálinn 78", "the corner of
    # Alšova 408 and …", "send a new one to …". Only a value with a house number: "send it to my office" is
    # not an address.
    _rule(
        "LOCATION",
        r"\b(?:(?:lives?|living|located|based|staying)[ \t]+(?:at|on)|(?:drops?[ \t]+(?:you[ \t]+)?off|meet[ \t]+"
        r"(?:me|us)|stop)[ \t]+at(?:[ \t]+the[ \t]+corner[ \t]+of)?|(?:the[ \t]+)?corner[ \t]+of|(?:send|ship|deliver|"
        r"mail|post|return)\w*[ \t]+(?:(?:it|them|this|that|a[ \t]+new[ \t]+one|everything)[ \t]+)?to|address[ \t]+"
        r"(?:is|to|with))[ \t]+",
        # A house number and a street's capitalised name: "meet me at 5 pm" is a time.
        r"(?=[^\n,;?!]{0,40}\d)(?=[^\n,;?!]{0,60}(?-i:\b[^\W\d_a-z][^\W\d_]{2,}))"
        r"(?-i:[^\W_a-z])[^\n,;?!]{2,80}?(?=[ \t]*(?:[,;?!\n]|\.(?:[ \t]|$)|$)"
        r"|[ \t]+(?:in|for|last|the|until|by|on|since|before|after|instead|please|thanks|asap|today|tomorrow|"
        r"or|but|because|so)\b)",
    ),
    # A sign-off, the name after it on the same line or the next: "Best,\nAntoni", "signed, erica lundqvist".
    _rule("PERSON", r"\b(?:" + _SIGN_OFF + r")\b[ \t]*[,\-]?[ \t]*\n?[ \t]*", _NAME),
    # "Name Akira Nakagawa" on a line of its own or after a bracket or comma, written without the colon;
    # "name on card ...".
    _rule(
        "PERSON",
        r"(?:^|(?<=\n)|(?<=\()|(?<=[,;:|][ \t]))[ \t]*(?:full[ \t]+)?name\b(?:[ \t]+on[ \t]+(?:the[ \t]+)?card)?[ \t]*",
        _NAME,
    ),
    # "Can Kaja pick up the lamp?", "will Ana Ruiz be able to sign for it".
    _rule(
        "PERSON",
        r"\b(?:can|could|will|may)[ \t]+",
        _NAME + r"(?=[ \t]+(?:collect|pick|sign|receive|take|get|be\s+able))",
    ),
    # The words after the name say what it is: "hello, pauline chauveau here", "Emilly again - ...",
    # "could you call Beatriz Angulo on <phone>", "is this Jin?", "Akinlabi Oyeyemi <a@b.com>".
    _rule(
        "PERSON",
        r"(?:^|\b(?:hello|hi|hey|hii|hiya)\b[,!]?)[ \t]*",
        _NAME + r"(?=[,.]?[ \t]+(?:here|again)\b)",
    ),
    _rule("PERSON", r"\b(?:call|ring|ask\s+for)[ \t]+", _NAME + r"(?=[ \t]+(?:on|at|when)\b)"),
    # "Is this Kaja?" on the phone; "is this possible?" is a question.
    _rule("PERSON", r"\bis\s+this[ \t]+", _CAPITALISED_NAME + r"(?=[ \t]*\?)"),
    _rule("PERSON", r"(?:^|(?<=\n)|\bfrom\b:?)[ \t]*", _NAME + r"(?=[ \t]*[<(][^>)\s]+@)"),
    # Weak cues ("this is", "I'm"): a capitalised name, or one in lower case that ends where a name
    # would and is not a word people write there ("i'm sorry, ...", "this is urgent").
    _rule("PERSON", r"\b(?:this\s+is|i'?m|i\s+am|it'?s|its)[ \t]+", _CAPITALISED_NAME),
    _rule("PERSON", r"\b(?:this\s+is|i'?m|i\s+am|it'?s|its)[ \t]+", _NOT_A_NAME_AFTER_I_AM + _NAME + _NAME_ENDS),
    _rule("PERSON", r"\b(?:ask\s+for|speak\s+(?:to|with)|talk\s+to)[ \t]+", _CAPITALISED_NAME),
    # What someone is called: "everyone calls me Christine", "people call me višeslav", "change the name to
    # Tristan Dennis"; in lower case only where a name ends. ("called" and "named" alone name songs and
    # products as often: on dev they cost more precision than they gained recall.)
    _rule(
        "PERSON",
        r"\b(?:calls?[ \t]+me|(?:change|changed|update|updated|correct)[ \t]+(?:it|the[ \t]+name|my[ \t]+name)"
        r"[ \t]+to)[ \t]+(?:" + _HONORIFIC + r"\.?[ \t]+)?",
        r"(?:" + _CAPITALISED_NAME + r"|" + _NOT_A_NAME_AFTER_I_AM + _NAME + _NAME_ENDS + r")",
    ),
    # A capitalised name signing off at the end of a message ("... after 18/03/2026, Merva Dumanlı"); in lower
    # case it is as likely the end of an address or a sentence.
    _rule("PERSON", r",[ \t]*", _CAPITALISED_NAME + r"(?=[.!]?\s*$)"),
    # "call me on 699 956 915", "whatsapp me at ...", "mobile: ...": after a word that says a phone number
    # follows, any run of digits with the usual separators is one (its length is checked by answering.privacy.masking).
    _rule(
        "PHONE_NUMBER",
        r"\b(?:call|calls|ring|phone|mobile|mob|cell|tel|telephone|whatsapp|sms|text|texts|reach|reached|"
        r"contact|messages|number|no|num|nr|fax)\b(?:[^\d\n+(]{0,20}|[ \t]*:[ \t]*\n[ \t]*)",
        r"(?:\+\s?|\(\+?)?\d[\d \t.\-()/]{5,20}\d",
    ),
    # "My card 4131034282458809939 is expiring": after "card", 12 to 19 digits are a card number even when
    # they fail the Luhn check (a mistyped digit is still the customer's card).
    _rule(
        "CREDIT_CARD",
        r"\b(?:card|cards|kaart|karte|carte|tarjeta|carta)\b[^\d\n]{0,25}",
        r"\d(?:[ \-]?\d){11,18}\b",
    ),
    # "ssn 366493433": nine bare digits are a social security number after the words that name one.
    _rule(
        "NATIONAL_ID",
        r"\b(?:ssn|ss\#|social\s+security(?:\s+(?:number|no\.?|\#))?)\b[^\d\n]{0,15}",
        r"\d{3}[ \-]?\d{2}[ \-]?\d{4}\b",
    ),
)

# Dates are what support messages are made of; written with dots or slashes they read as phone numbers.
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
DATE_REGEX = re.compile(
    r"\d{1,4}[./\-]\d{1,2}[./\-]\d{2,4}|\d{1,2}[./]\d{1,2}|"
    r"\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?"
    + _MONTH
    + r"(?:\s+\d{4})?|"
    + _MONTH
    + r"\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+\d{4})?",
    re.IGNORECASE,
)
