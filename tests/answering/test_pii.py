"""Personal data masking: each kind found and replaced, numbers checked, names and places kept where they are not
personal."""

import logging

import pytest

from answering.privacy.masking import MaskedText, PiiMaskingFilter, mask_pii, searchable
from answering.privacy.patterns import luhn_valid, national_id_valid

DEFAULT_KINDS = [
    "PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "LOCATION", "IBAN_CODE", "IP_ADDRESS", "NATIONAL_ID"
]  # fmt: skip


@pytest.fixture(autouse=True)
def default_kinds(settings):
    # The deployment may configure other kinds; these tests describe the shipped default.
    settings.PII_ENTITIES = DEFAULT_KINDS


def found(text: str, masked: MaskedText) -> dict[str, str]:
    return {text[span.start : span.end]: span.kind for span in masked.spans}


def test_it_masks_each_kind_of_personal_data():
    text = (
        "My name is Sarah Connor and my email is sarah.connor@example.com. "
        "Call me on +44 20 7946 0958 or 07700 900123. "
        "Please charge 4111 1111 1111 1111 and ship to 221B Baker Street, London NW1 6XE."
    )

    masked = mask_pii(text)

    assert found(text, masked) == {
        "Sarah Connor": "PERSON",
        "sarah.connor@example.com": "EMAIL_ADDRESS",
        "+44 20 7946 0958": "PHONE_NUMBER",
        "07700 900123": "PHONE_NUMBER",
        "4111 1111 1111 1111": "CREDIT_CARD",
        "221B Baker Street, London NW1 6XE": "LOCATION",
    }
    assert masked.text == (
        "My name is <PERSON_1> and my email is <EMAIL_ADDRESS_1>. "
        "Call me on <PHONE_NUMBER_1> or <PHONE_NUMBER_2>. "
        "Please charge <CREDIT_CARD_1> and ship to <LOCATION_1>."
    )
    for value in found(text, masked):
        assert value not in masked.text


def test_it_masks_iban_and_ip_address():
    text = "Refund to GB82 WEST 1234 5698 7654 32 please; my IP is 192.168.1.10."

    masked = mask_pii(text)

    assert found(text, masked) == {"GB82 WEST 1234 5698 7654 32": "IBAN_CODE", "192.168.1.10": "IP_ADDRESS"}


def test_it_leaves_a_number_that_fails_luhn_when_nothing_says_it_is_a_card():
    text = "The code 4111111111111112 from the leaflet did not work."

    assert mask_pii(text) == MaskedText(text, ())


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        # The misses a tester reported (issue 16), each now masked as what the customer's words say it is.
        ("My name is Rubija", "My name is <PERSON_1>"),
        (
            "I would like to stop receiving messages to 699 956 915",
            "I would like to stop receiving messages to <PHONE_NUMBER_1>",
        ),
        ("Here's my SSN: 460-89-9847", "Here's my SSN: <NATIONAL_ID_1>"),
        # 19 digits that fail the Luhn check, and 12 digits: still cards after the word "card".
        ("My card 4111 1111 1111 1112 was declined.", "My card <CREDIT_CARD_1> was declined."),
        ("My card 4131034282458809939 is expiring", "My card <CREDIT_CARD_1> is expiring"),
        ("card number 630427373398 is lost", "card number <CREDIT_CARD_1> is lost"),
    ],
)
def test_the_words_around_a_value_say_what_it_is(text, masked):
    assert mask_pii(text).text == masked


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("mera naam rubija hai, order LO-2048173 kab aayega", "mera naam <PERSON_1> hai, order LO-2048173 kab aayega"),
        ("hello, pauline chauveau here. is it shipped?", "hello, <PERSON_1> here. is it shipped?"),
        ("i'm claire godard, the lamp is broken", "i'm <PERSON_1>, the lamp is broken"),
        ("Best,\nWu\n", "Best,\n<PERSON_1>\n"),
        ("Can Kaja pick up the parcel?", "Can <PERSON_1> pick up the parcel?"),
    ],
)
def test_it_masks_a_name_its_cue_announces_in_any_case(text, masked):
    assert mask_pii(text).text == masked


@pytest.mark.parametrize(
    "text",
    [
        "i'm sorry, this is urgent: my order LO-2048173 is late",
        "I'm so frustrated, it's the third time",
        "The reading lamp was delivered on 04.01.2027, tracking 4821 0365 9731.",
        "Tracking number RM482913507GB shows nothing since 17 Jun",
        "Order 1042 cost £89.00 on 2026-11-15 and failed with e-4012",
        "Can I return it after 30 days? Is this possible?",
        "Can we meet at 5 pm? I ordered 2 Linen napkins and it is 3 weeks late.",
    ],
)
def test_what_a_customer_writes_around_personal_data_stays(text):
    assert mask_pii(text) == MaskedText(text, ())


@pytest.mark.parametrize(
    "phone",
    ["+91 597.0111.528", "(0118) 496 0982", "+49(0) 843056510", "+1-851-932-3724", "06 12 34 56 78", "699-956-915"],
)
def test_it_masks_a_phone_number_in_the_formats_customers_use(phone):
    assert mask_pii(f"please call me on {phone} tomorrow").text == "please call me on <PHONE_NUMBER_1> tomorrow"


@pytest.mark.parametrize(
    "national_id",
    [
        "460-89-9847",  # US SSN
        "AB 12 34 56 C",  # UK National Insurance number
        "AB123456C",
        "12345678Z",  # Spanish DNI, check letter right
        "X1234567L",  # Spanish NIE
        "RSSMRA85T10A562S",  # Italian codice fiscale
        "ABCPE1234F",  # Indian PAN
    ],
)
def test_it_masks_national_id_numbers(national_id):
    masked = mask_pii(f"my id is {national_id} for the invoice")

    assert masked.text == "my id is <NATIONAL_ID_1> for the invoice"


def test_a_spanish_dni_with_the_wrong_check_letter_is_not_one():
    assert national_id_valid("12345678Z") and not national_id_valid("12345678A")
    assert mask_pii("ref 12345678A please") == MaskedText("ref 12345678A please", ())


@pytest.mark.parametrize(
    "address",
    [
        "8353 Kathleen Highway Apt. 681, Lake Victoria, VI 39349",
        "12 baker street",
        "Annelise-Hartung-Straße 68, 74068 Erding",
        "6, rue Michel, 83654 Sainte Marianne",
        "Paseo de Joan Ojeda 83 Piso 2",
        "Viale Simone, 5, 96019, Rosolini (SR)",
        "ul. Malczewskiego 81",
        "Basbaan 8, 6783 OR, Hoevelaken",
        "H.No. 806, Sami Ganj, Muzaffarnagar 406812",
    ],
)
def test_it_masks_street_addresses_of_several_countries_whole(address):
    masked = mask_pii(f"Please ship it to {address} instead")

    assert masked.text == "Please ship it to <LOCATION_1> instead"


@pytest.mark.parametrize("card", ["2223 0031 2200 3222", "2223-0031-2200-3222", "4111-1111-1111-1111"])
def test_it_catches_a_grouped_card_number_whatever_its_issuer(card):
    # 2223… is a Mastercard 2-series number, outside the prefixes Presidio's own pattern knows.
    masked = mask_pii(f"Card {card} was charged twice.")

    assert masked.text == "Card <CREDIT_CARD_1> was charged twice."


@pytest.mark.parametrize(
    "text",
    [
        "My order LO-482913 for $45.00 failed with error E-4012.",
        "Refunds take 5 to 10 business days.",
        "Refund of $1,234.56 arrives in 5-10 days, order #123456789.",
        "Export fails with code E-4012 after 3 retries; order number 48291375.",
        "The Settings page shows Error 500 when I click Save.",
        "Version 10.2.3.4 crashed after the update.",
        # Both were masked as names by spaCy's small model, which cost the golden set its identifier questions.
        "I've been getting E-5001 for three hours now and I'm worried the items will sell out.",
        "My order says Packed. What does that mean?",
    ],
)
def test_it_leaves_references_amounts_and_delays_alone(text):
    assert mask_pii(text) == MaskedText(text, ())


def test_a_name_after_a_status_word_is_still_a_name_when_it_is_one():
    assert mask_pii("My name is Jane Doe and my order says Packed.").text == (
        "My name is <PERSON_1> and my order says Packed."
    )


def test_a_number_after_order_is_a_reference_even_when_it_could_be_a_phone():
    text = "order 4155551234 hasn't arrived, my number is 4155551234"

    masked = mask_pii(text)

    assert masked.text == "order 4155551234 hasn't arrived, my number is <PHONE_NUMBER_1>"


def test_a_repeated_value_gets_the_same_placeholder_and_spans_point_into_the_original():
    text = "Write to a@b.com, not c@d.com. Again: a@b.com. Ask Sarah Connor; Sarah Connor knows."

    masked = mask_pii(text)

    assert masked.text == (
        "Write to <EMAIL_ADDRESS_1>, not <EMAIL_ADDRESS_2>. Again: <EMAIL_ADDRESS_1>. Ask <PERSON_1>; <PERSON_1> knows."
    )
    assert [(text[span.start : span.end], span.placeholder) for span in masked.spans] == [
        ("a@b.com", "<EMAIL_ADDRESS_1>"),
        ("c@d.com", "<EMAIL_ADDRESS_2>"),
        ("a@b.com", "<EMAIL_ADDRESS_1>"),
        ("Sarah Connor", "<PERSON_1>"),
        ("Sarah Connor", "<PERSON_1>"),
    ]


def test_a_card_written_two_ways_is_one_card():
    masked = mask_pii("Was it 4111 1111 1111 1111 or 4111-1111-1111-1111?")

    assert masked.text == "Was it <CREDIT_CARD_1> or <CREDIT_CARD_1>?"


def test_it_merges_the_url_presidio_finds_inside_an_email():
    text = "Write to sarah.connor@example.com or see example.org."

    masked = mask_pii(text, kinds={"EMAIL_ADDRESS", "URL"})

    assert found(text, masked) == {"sarah.connor@example.com": "EMAIL_ADDRESS", "example.org": "URL"}
    assert masked.text == "Write to <EMAIL_ADDRESS_1> or see <URL_1>."


def test_kinds_override_the_setting():
    text = "My name is Sarah Connor and my email is sarah@example.com."

    masked = mask_pii(text, kinds={"EMAIL_ADDRESS"})

    assert masked.text == "My name is Sarah Connor and my email is <EMAIL_ADDRESS_1>."


def test_no_kinds_masks_nothing():
    text = "My email is sarah@example.com."

    assert mask_pii(text, kinds=()) == MaskedText(text, ())


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="PASSPORT"):
        mask_pii("hello", kinds={"PASSPORT"})


def test_empty_text():
    assert mask_pii("") == MaskedText("", ())


def test_it_masks_long_text():
    filler = "The router restarts every few minutes and the lights blink orange. " * 300
    text = filler + "Reach me at sarah@example.com."
    assert len(text) > 20_000

    masked = mask_pii(text)

    assert masked.text == filler + "Reach me at <EMAIL_ADDRESS_1>."
    assert [text[span.start : span.end] for span in masked.spans] == ["sarah@example.com"]


def test_the_logging_filter_masks_the_formatted_message(caplog):
    logger = logging.getLogger("tests.answering.privacy.masking")
    pii_filter = PiiMaskingFilter()
    logger.addFilter(pii_filter)
    try:
        with caplog.at_level(logging.INFO, logger=logger.name):
            logger.info("Customer %s asked about order %s", "sarah@example.com", "LO-482913")
    finally:
        logger.removeFilter(pii_filter)

    assert [record.getMessage() for record in caplog.records] == [
        "Customer <EMAIL_ADDRESS_1> asked about order LO-482913"
    ]


class ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_the_logging_filter_lets_presidio_log_while_it_masks():
    # Presidio logs from inside the analysis; masking those records would call Presidio again.
    handler = ListHandler()
    handler.addFilter(PiiMaskingFilter())
    presidio_logger = logging.getLogger("presidio-analyzer")
    level = presidio_logger.level
    presidio_logger.addHandler(handler)
    presidio_logger.setLevel(logging.DEBUG)
    try:
        masked = mask_pii("Mail sarah@example.com")
    finally:
        presidio_logger.removeHandler(handler)
        presidio_logger.setLevel(level)

    assert masked.text == "Mail <EMAIL_ADDRESS_1>"
    assert handler.records, "Presidio logged nothing at DEBUG; this test no longer covers re-entry"


@pytest.mark.parametrize(
    ("digits", "valid"),
    [("4111111111111111", True), ("4111111111111112", False), ("79927398713", True), ("", False), ("4111 1111", False)],
)
def test_luhn(digits, valid):
    assert luhn_valid(digits) is valid


def test_searchable_text_drops_national_ids_but_keeps_the_question():
    assert searchable("My SSN 460-89-9847 was asked for a refund?") == "My SSN was asked for a refund?"


def test_searchable_text_drops_contact_details_and_card_numbers_but_keeps_names_and_places():
    text = "I'm Sarah Connor, mail sarah.connor@example.com or call +44 20 7946 0958; card 4111 1111 1111 1111. UK delivery?"
    assert searchable(text) == "I'm Sarah Connor, mail or call ; card . UK delivery?"


def test_a_two_letter_place_is_still_a_place_but_an_order_number_is_not():
    assert mask_pii("delivery to the UK, invoice for LO-6085507").text == (
        "delivery to the <LOCATION_1>, invoice for LO-6085507"
    )


@pytest.mark.parametrize("phone", ["(37) 788-063", "60-56-85-91", "0171 498 2210", "555.014.2233 x12", "4 71 23 90 15"])
def test_it_masks_a_phone_number_in_any_countrys_grouping(phone):
    assert mask_pii(f"you can reach me at {phone} after six").text == "you can reach me at <PHONE_NUMBER_1> after six"


def test_a_form_label_on_its_own_line_still_announces_its_value():
    masked = mask_pii(
        "Customer: Marta K. Nowak\nPhone:\n06-12-34-56\nAddress: Rua das Flores 8, Porto\nOrder LO-2048173"
    )

    assert masked.text == "Customer: <PERSON_1>\nPhone:\n<PHONE_NUMBER_1>\nAddress: <LOCATION_1>\nOrder LO-2048173"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("Tomasz W Zielinski asked about the lamp", "<PERSON_1> asked about the lamp"),
        ("Dear Mrs Okonkwo, thank you", "Dear <PERSON_1>, thank you"),
        ("my friends call me tunde, can you help", "my friends call me <PERSON_1>, can you help"),
        ("please change the name to Mr. Ilkka Rautio", "please change the name to Mr. <PERSON_1>"),
    ],
)
def test_a_name_is_known_by_its_shape_or_its_salutation(text, masked):
    assert mask_pii(text).text == masked


@pytest.mark.parametrize(
    "address",
    ["Andrássy út 12", "Bahçe Sokak No: 12", "Storgatan 5", "Nørrebrogade 31", "14 Kaivokatu 8", "PO Box 4417"],
)
def test_it_masks_addresses_written_street_name_first(address):
    assert mask_pii(f"I moved to {address} last week").text == "I moved to <LOCATION_1> last week"


def test_an_iban_in_lower_case_is_masked_and_one_failing_its_check_is_not():
    assert mask_pii("my iban is de89 3704 0044 0532 0130 00").text == "my iban is <IBAN_CODE_1>"
    assert mask_pii("my iban is de88 3704 0044 0532 0130 00").text == "my iban is de88 3704 0044 0532 0130 00"


def test_an_address_said_in_words_is_masked_up_to_where_the_sentence_goes_on():
    masked = mask_pii("She lives at 9 Vesterbro Torv, and the parcel went to the corner of Rua Augusta 12 and Praça 3")

    assert masked.text == "She lives at <LOCATION_1>, and the parcel went to the corner of <LOCATION_2>"


def test_a_local_number_of_seven_digits_is_a_phone_when_a_word_announces_it_and_a_reference_never_is():
    assert mask_pii("Phone: 451 5986").text == "Phone: <PHONE_NUMBER_1>"
    assert mask_pii("order no LO-3022303, contact on INV-4417200").text == "order no LO-3022303, contact on INV-4417200"


@pytest.mark.parametrize(
    "text",
    ["Why was KX-5521907 charged twice?", "is AB/77120 the right return label", "parcel 4410-DE never came"],
)
def test_letters_joined_to_digits_are_a_code_and_never_a_name(text):
    assert mask_pii(text).text == text
