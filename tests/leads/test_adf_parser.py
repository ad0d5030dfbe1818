"""parse_adf on hand-written documents: tolerance, defaults, names, phones, field paths,
storage round trip, threads and the work a parse does (`make bench` times it)."""

import dataclasses
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from lxml import etree

from leads.adf import (
    FIELDS,
    AdfError,
    Identifier,
    ParsedLead,
    Phone,
    Vehicle,
    parse_adf,
)
from leads.adf import guards as adf_guards
from leads.adf import mapping as adf_mapping

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "adf-samples"

FULL = """<?xml version="1.0" encoding="UTF-8"?>
<?adf version="1.0"?>
<adf>
  <prospect status="resend">
    <id sequence="1" source="CRM">PID-1</id>
    <id sequence="2" source="Other">PID-2</id>
    <requestdate>2024-05-06T07:08:09</requestdate>
    <requesttype>Sales</requesttype>
    <vehicle interest="trade-in" status="new">
      <year>2015</year><make>Mazda</make><model>3</model><vin>TRADEVIN</vin>
      <odometer status="original" units="km">120000</odometer>
    </vehicle>
    <vehicle interest="buy" status="new">
      <year>2024</year><make>Toyota</make><model>Camry</model><vin>BUYVIN</vin>
      <license_plate>ABC123</license_plate><stock>S-9</stock><trim>XSE</trim><doors>4</doors>
      <bodystyle>Sedan</bodystyle><transmission>Automatic</transmission>
      <fueltype>Hybrid</fueltype><type>car</type>
      <odometer units="mi">12</odometer>
      <colorcombination>
        <interiorcolor>Black</interiorcolor><exteriorcolor>Red</exteriorcolor>
      </colorcombination>
      <price type="quote" currency="EUR">31000</price>
      <comments>Wants the
        sunroof</comments>
    </vehicle>
    <customer>
      <contact>
        <name part="full">Ann Marie Lee</name>
        <email>ann@example.com</email>
        <phone type="fax">111-111-1111</phone>
        <phone type="cellphone" time="evening">514-555-0100</phone>
        <language>fr</language>
        <address><street line="1">1 Main St</street><street line="2">Apt 4</street>
          <city>Montreal</city><regioncode>QC</regioncode><postalcode>H2X 1Y4</postalcode>
          <country>CA</country></address>
      </contact>
      <comments>Call after 5</comments>
      <whisper>Asked about financing</whisper>
    </customer>
    <vendor>
      <id source="dealerId">D-42</id>
      <vendorname>Best Motors</vendorname>
      <contact><name part="full">Sales Desk</name></contact>
    </vendor>
    <provider>
      <id source="bucket">B-7</id>
      <name part="full">Web Form</name>
      <service>Test drive</service>
      <url>https://example.com/lead/1</url>
    </provider>
    <lms><name part="full">LeadCRM</name></lms>
  </prospect>
</adf>
"""

FULL_FIELDS = {
    "prospect/id": "PID-1",
    "prospect/id@source": "CRM",
    "prospect@status": "resend",
    "prospect/requestdate": "2024-05-06T07:08:09",
    "prospect/requesttype": "Sales",
    "vehicle/status": "new",
    "vehicle/year": "2024",
    "vehicle/make": "Toyota",
    "vehicle/model": "Camry",
    "vehicle/vin": "BUYVIN",
    "vehicle/license_plate": "ABC123",
    "vehicle/stock": "S-9",
    "vehicle/trim": "XSE",
    "vehicle/doors": "4",
    "vehicle/bodystyle": "Sedan",
    "vehicle/transmission": "Automatic",
    "vehicle/fueltype": "Hybrid",
    "vehicle/type": "car",
    "vehicle/odometer": "12",
    "vehicle/price": "31000",
    "vehicle/interiorcolor": "Black",
    "vehicle/exteriorcolor": "Red",
    "vehicle/comments": "Wants the\nsunroof",
    "tradein/year": "2015",
    "tradein/make": "Mazda",
    "tradein/model": "3",
    "tradein/vin": "TRADEVIN",
    "tradein/odometer": "120000",
    "customer/name": "Ann Marie Lee",
    "customer/email": "ann@example.com",
    "customer/phone": "514-555-0100",
    "customer/phone@type": "cellphone",
    "customer/language": "fr",
    "customer/address/street": "1 Main St, Apt 4",
    "customer/address/city": "Montreal",
    "customer/address/regioncode": "QC",
    "customer/address/postalcode": "H2X 1Y4",
    "customer/address/country": "CA",
    "customer/comments": "Call after 5",
    "customer/whisper": "Asked about financing",
    "vendor/id": "D-42",
    "vendor/id@source": "dealerId",
    "vendor/vendorname": "Best Motors",
    "vendor/contact/name": "Sales Desk",
    "provider/id": "B-7",
    "provider/id@source": "bucket",
    "provider/name": "Web Form",
    "provider/service": "Test drive",
    "provider/url": "https://example.com/lead/1",
    "lms/name": "LeadCRM",
}


def lead_of(document: str | bytes) -> ParsedLead:
    [lead] = parse_adf(document)
    return lead


def minimal(inner: str = "", declaration: str = '<?xml version="1.0"?>') -> str:
    return f"{declaration}<adf><prospect><id>1</id>{inner}</prospect></adf>"


def customer(contact: str = "", rest: str = "") -> str:
    return minimal(f"<customer><contact>{contact}</contact>{rest}</customer>")


# --- The full document and field paths ----------------------------------------------


def test_full_document_has_every_field():
    lead = lead_of(FULL)

    assert {path: lead.field(path) for path in FIELDS} == FULL_FIELDS


def test_every_field_path_has_a_label():
    assert set(FIELDS) == set(FULL_FIELDS)
    assert all(label.strip() for label in FIELDS.values())


def test_every_field_is_empty_for_an_empty_prospect():
    lead = lead_of("<adf><prospect/></adf>")

    assert {path: lead.field(path) for path in FIELDS} == dict.fromkeys(FIELDS, "")


def test_unknown_field_path_raises_key_error():
    with pytest.raises(KeyError):
        lead_of(FULL).field("vehicle/colour")


def test_full_document_structure():
    lead = lead_of(FULL)

    assert lead.prospect_ids == (
        Identifier("PID-1", "CRM"),
        Identifier("PID-2", "Other"),
    )
    assert [v.interest for v in lead.vehicles] == ["trade-in", "buy"]
    assert lead.buy_vehicle is lead.vehicles[1]
    assert lead.trade_in_vehicle is lead.vehicles[0]
    assert lead.vehicles[0].odometer.status == "original"
    assert lead.vehicles[1].price.currency == "EUR"
    assert lead.customer.first_name == "Ann"
    assert lead.customer.last_name == "Marie Lee"
    assert lead.customer.phones == (
        Phone("111-111-1111", "fax", ""),
        Phone("514-555-0100", "cellphone", "evening"),
    )


# --- Storage ------------------------------------------------------------------------


def test_as_dict_is_plain_json_and_round_trips():
    lead = lead_of(FULL)
    stored = json.loads(json.dumps(lead.as_dict()))

    assert stored == lead.as_dict()
    assert ParsedLead.from_dict(stored) == lead


def test_as_dict_shape():
    data = lead_of(FULL).as_dict()

    assert data["prospect_ids"] == [
        {"value": "PID-1", "source": "CRM"},
        {"value": "PID-2", "source": "Other"},
    ]
    assert data["vehicles"][1]["price"] == {
        "value": "31000",
        "type": "quote",
        "currency": "EUR",
    }
    assert data["customer"]["phones"][1] == {
        "number": "514-555-0100",
        "type": "cellphone",
        "time": "evening",
    }


def test_from_dict_fills_missing_keys_with_defaults():
    lead = ParsedLead.from_dict({"prospect_id": "9", "vehicles": [{"make": "Kia"}]})

    assert lead == ParsedLead(prospect_id="9", vehicles=(Vehicle(make="Kia"),))


def test_parsed_lead_is_frozen():
    lead = lead_of(FULL)

    with pytest.raises(dataclasses.FrozenInstanceError):
        lead.prospect_id = "other"  # type: ignore[misc]
    assert hash(lead) == hash(lead_of(FULL))


# --- Documents and prospects ----------------------------------------------------------


def test_several_prospects_give_one_lead_each_in_order():
    document = (
        "<adf><prospect><id>a</id></prospect><note/>"
        "<prospect><id>b</id></prospect><prospect><id>c</id></prospect></adf>"
    )

    assert [lead.prospect_id for lead in parse_adf(document)] == ["a", "b", "c"]


def test_bare_prospect_root_is_accepted():
    assert lead_of("<prospect><id>7</id></prospect>").prospect_id == "7"


def test_other_root_is_not_adf():
    with pytest.raises(AdfError, match="not an ADF lead"):
        parse_adf("<html><prospect><id>1</id></prospect></html>")


def test_adf_without_prospect_is_refused():
    with pytest.raises(AdfError, match="no prospect"):
        parse_adf("<adf><vendor/></adf>")


@pytest.mark.parametrize(
    "document",
    [
        "",
        "   \n",
        b"",
        "not xml",
        "<adf><prospect></adf>",
        "<adf/><adf/>",
        "<adf>\x00</adf>",
        "<?xml",
    ],
)
def test_malformed_documents_raise_adf_error(document):
    with pytest.raises(AdfError) as caught:
        parse_adf(document)

    assert not caught.value.too_large


def test_text_with_lone_surrogate_raises_adf_error():
    with pytest.raises(AdfError):
        parse_adf(minimal("<requesttype>\ud800</requesttype>"))


# --- Real-world tolerance -------------------------------------------------------------


def test_utf8_byte_order_mark_is_tolerated():
    assert lead_of(b"\xef\xbb\xbf" + minimal().encode()).prospect_id == "1"


def test_byte_order_mark_in_text_is_tolerated():
    assert lead_of("\ufeff" + minimal()).prospect_id == "1"


@pytest.mark.parametrize(
    "junk", ["\n", "  \r\n\t", '<?adf version="1.0"?>\n', '\n<?ADF VERSION="1.0"?> \n']
)
def test_junk_before_the_xml_declaration_is_tolerated(junk):
    assert lead_of(junk + minimal()).prospect_id == "1"
    assert lead_of((junk + minimal()).encode()).prospect_id == "1"


def test_processing_instruction_without_xml_declaration_is_tolerated():
    assert lead_of('<?adf version="1.0"?>' + minimal(declaration="")).prospect_id == "1"


@pytest.mark.parametrize("label", ["ISO-8859-1", "iso-8859-1", "latin1", "Latin-1"])
def test_latin1_bytes_honour_the_declaration(label):
    document = minimal(
        "<requesttype>Véhicule d\u2019occasion</requesttype>",
        f'<?xml version="1.0" encoding="{label}"?>',
    )

    # The right single quotation mark is not Latin-1: senders that say Latin-1 mean
    # Windows-1252.
    lead = lead_of(document.encode("cp1252"))

    assert lead.request_type == "Véhicule d\u2019occasion"


def test_latin1_bytes_undefined_in_windows1252_are_read_as_latin1():
    document = minimal(
        "<requesttype>a\x81b</requesttype>",
        "<?xml version='1.0' encoding='ISO-8859-1'?>",
    )

    assert lead_of(document.encode("latin-1")).request_type == "a\x81b"


def test_windows1252_bytes_honour_the_declaration():
    document = minimal(
        "<requesttype>5 000 € “cash”</requesttype>",
        '<?xml version="1.0" encoding="windows-1252"?>',
    )

    assert lead_of(document.encode("cp1252")).request_type == "5 000 € “cash”"


def test_text_with_a_latin1_declaration_is_read_as_text():
    # lxml refuses str input that carries an encoding declaration; the text is already decoded.
    document = minimal(
        "<requesttype>Québec</requesttype>",
        '<?xml version="1.0" encoding="ISO-8859-1"?>',
    )

    assert lead_of(document).request_type == "Québec"


def test_utf16_with_byte_order_mark_is_read():
    document = minimal(
        "<requesttype>Québec</requesttype>", '<?xml version="1.0" encoding="UTF-16"?>'
    )

    assert lead_of(document.encode("utf-16")).request_type == "Québec"


def test_utf16_declaration_on_utf8_bytes_is_read_as_utf8():
    document = minimal(
        "<requesttype>Québec</requesttype>", '<?xml version="1.0" encoding="UTF-16"?>'
    )

    assert lead_of(document.encode("utf-8")).request_type == "Québec"


@pytest.mark.parametrize("label", ["no-such-charset", "base64", "rot13"])
def test_unknown_or_non_text_encoding_is_refused(label):
    with pytest.raises(AdfError, match="encoding"):
        parse_adf(
            minimal(declaration=f'<?xml version="1.0" encoding="{label}"?>').encode()
        )


def test_bytes_that_do_not_match_the_declared_encoding_are_refused():
    with pytest.raises(AdfError):
        parse_adf(minimal("<requesttype>\xe9</requesttype>").encode("latin-1"))


def test_cdata_is_read_as_text():
    lead = lead_of(
        customer(rest="<comments><![CDATA[Call <after> 5 & ask for Bob]]></comments>")
    )

    assert lead.customer.comments == "Call <after> 5 & ask for Bob"


def test_character_references_are_read():
    assert (
        lead_of(minimal("<requesttype>Caf&#233; &amp; co</requesttype>")).request_type
        == "Café & co"
    )


def test_upper_and_mixed_case_names_are_matched():
    document = """<ADF><Prospect STATUS="New"><ID SOURCE="Crm">X1</ID><RequestType>Sales</RequestType>
      <VEHICLE INTEREST="BUY" Status="NEW"><YEAR>2023</YEAR><Make>Ford</Make><MODEL>Focus</MODEL></VEHICLE>
      <Customer><Contact><Name Part="First">Ann</Name><NAME PART="LAST">Lee</NAME>
      <Phone Type="Cell">555-0101</Phone></Contact></Customer>
      <Vendor><VENDORNAME>Best Motors</VENDORNAME></Vendor></Prospect></ADF>"""

    lead = lead_of(document)

    assert (lead.prospect_id, lead.prospect_source, lead.prospect_status) == (
        "X1",
        "Crm",
        "new",
    )
    assert lead.buy_vehicle is not None
    assert (lead.buy_vehicle.status, lead.buy_vehicle.make, lead.buy_vehicle.model) == (
        "new",
        "Ford",
        "Focus",
    )
    assert (lead.customer.full_name, lead.customer.phone, lead.customer.phone_type) == (
        "Ann Lee",
        "555-0101",
        "cell",
    )
    assert lead.vendor.name == "Best Motors"


def test_default_namespace_is_matched():
    document = (
        '<adf xmlns="http://www.adf.org"><prospect><id>N1</id>'
        "<vendor><vendorname>V</vendorname></vendor></prospect></adf>"
    )

    lead = lead_of(document)

    assert (lead.prospect_id, lead.vendor.name) == ("N1", "V")


def test_prefixed_elements_and_attributes_are_matched():
    document = """<a:adf xmlns:a="urn:adf"><a:prospect><a:id a:source="S">P1</a:id>
      <a:customer><a:contact>
        <a:name a:part="last">Lee</a:name><a:name a:part="first">Ann</a:name>
      </a:contact></a:customer>
      </a:prospect></a:adf>"""

    lead = lead_of(document)

    assert (lead.prospect_id, lead.prospect_source) == ("P1", "S")
    assert (
        lead.customer.first_name,
        lead.customer.last_name,
        lead.customer.full_name,
    ) == ("Ann", "Lee", "Ann Lee")


def test_comments_and_processing_instructions_inside_are_dropped():
    document = minimal("<requesttype>Sa<!-- x -->les<?pi y?></requesttype><!-- z -->")

    assert lead_of(document).request_type == "Sales"


def test_single_line_values_collapse_white_space():
    lead = lead_of(
        minimal(
            "<requesttype>\n   Sales \t  lead \n</requesttype>"
            "<vendor><vendorname> A  B </vendorname></vendor>"
        )
    )

    assert (lead.request_type, lead.vendor.name) == ("Sales lead", "A B")


def test_comments_keep_their_lines_but_lose_indentation_and_blank_ends():
    lead = lead_of(
        customer(
            rest="<comments>\r\n\n   First   line\r\n     second line  \n\n  third\n   </comments>"
        )
    )

    assert lead.customer.comments == "First line\nsecond line\n\nthird"


def test_text_of_nested_markup_is_kept():
    lead = lead_of(customer(rest="<comments>Hello <b>there</b> friend</comments>"))

    assert lead.customer.comments == "Hello there friend"


def test_unknown_elements_are_ignored():
    lead = lead_of(
        minimal(
            "<partner-score>9</partner-score>"
            "<vehicle><option><price>5</price></option><make>Kia</make></vehicle>"
        )
    )

    assert lead.buy_vehicle == Vehicle(make="Kia")


# --- Vehicles -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attributes", "interest", "status"),
    [
        ("", "buy", "used"),
        ('status="new"', "buy", "new"),
        ('status=" NEW "', "buy", "new"),
        ('status="used"', "buy", "used"),
        ('status="cpo"', "buy", "used"),
        ('interest="buy" status="new"', "buy", "new"),
        ('interest="lease" status="new"', "lease", "new"),
        ('interest="trade-in"', "trade-in", "used"),
        ('interest="trade-in" status="new"', "trade-in", "used"),
        ('interest="Trade-In"', "trade-in", "used"),
        ('interest="tradein"', "trade-in", "used"),
        ('interest="trade"', "trade-in", "used"),
    ],
)
def test_vehicle_interest_and_status_defaults(attributes, interest, status):
    vehicle = lead_of(
        minimal(f"<vehicle {attributes}><make>Kia</make></vehicle>")
    ).vehicles[0]

    assert (vehicle.interest, vehicle.status) == (interest, status)


def test_buy_vehicle_is_the_first_that_is_not_a_trade_in():
    lead = lead_of(
        minimal(
            '<vehicle interest="trade-in"><make>A</make></vehicle>'
            '<vehicle interest="lease"><make>B</make></vehicle>'
            '<vehicle interest="buy"><make>C</make></vehicle>'
        )
    )

    assert lead.buy_vehicle is not None
    assert lead.trade_in_vehicle is not None
    assert (lead.buy_vehicle.make, lead.trade_in_vehicle.make) == ("B", "A")


def test_only_a_trade_in_means_no_buy_vehicle():
    lead = lead_of(minimal('<vehicle interest="trade-in"><make>A</make></vehicle>'))

    assert lead.buy_vehicle is None
    assert lead.field("vehicle/make") == ""
    assert lead.field("vehicle/status") == ""
    assert lead.field("tradein/make") == "A"


def test_first_non_empty_vehicle_value_counts():
    lead = lead_of(
        minimal(
            "<vehicle><year></year><year>2020</year><year>2021</year>"
            "<licenseplate>P1</licenseplate></vehicle>"
        )
    )

    assert lead.buy_vehicle is not None
    assert (lead.buy_vehicle.year, lead.buy_vehicle.license_plate) == ("2020", "P1")


def test_colour_combination_without_colours_is_skipped():
    lead = lead_of(
        minimal(
            "<vehicle><colorcombination><preference>1</preference></colorcombination>"
            "<colorcombination><exteriorcolor>Blue</exteriorcolor></colorcombination></vehicle>"
        )
    )

    assert lead.buy_vehicle is not None
    assert (lead.buy_vehicle.interior_color, lead.buy_vehicle.exterior_color) == (
        "",
        "Blue",
    )


# --- Ids ------------------------------------------------------------------------------


def test_first_non_empty_id_is_the_prospect_id():
    lead = lead_of(
        "<adf><prospect><id source='a'> </id><id source='b'>B-1</id><id>C-1</id></prospect></adf>"
    )

    assert (lead.prospect_id, lead.prospect_source) == ("B-1", "b")
    assert lead.prospect_ids == (
        Identifier("", "a"),
        Identifier("B-1", "b"),
        Identifier("C-1", ""),
    )


def test_missing_id_gives_empty_prospect_id():
    lead = lead_of(
        "<adf><prospect><requestdate>2024-01-01T00:00:00</requestdate></prospect></adf>"
    )

    assert (lead.prospect_id, lead.prospect_source, lead.prospect_ids) == ("", "", ())


# --- Names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("names", "full", "first", "last"),
    [
        (
            '<name part="full">Dana Whitfield</name>',
            "Dana Whitfield",
            "Dana",
            "Whitfield",
        ),
        (
            '<name part="full">Jean Luc Picard</name>',
            "Jean Luc Picard",
            "Jean",
            "Luc Picard",
        ),
        ('<name part="full">Cher</name>', "Cher", "Cher", ""),
        ("<name>No Part</name>", "No Part", "No", "Part"),
        ('<name type="full">Type Full</name>', "Type Full", "Type", "Full"),
        (
            '<name part="first">Ann</name><name part="middle">B</name><name part="last">Lee</name>',
            "Ann B Lee",
            "Ann",
            "Lee",
        ),
        ('<name part="last">Lee</name>', "Lee", "", "Lee"),
        (
            '<name part="full">Ann Lee</name><name part="first">Annie</name>',
            "Ann Lee",
            "Annie",
            "",
        ),
        ("", "", "", ""),
    ],
)
def test_customer_names(names, full, first, last):
    found = lead_of(customer(names)).customer

    assert (found.full_name, found.first_name, found.last_name) == (full, first, last)


# --- Phones and contact ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("phones", "number", "kind"),
    [
        (
            '<phone type="fax">1</phone><phone type="pager">2</phone><phone type="voice">3</phone>',
            "3",
            "voice",
        ),
        ('<phone type="FAX">1</phone><phone type="mobile">2</phone>', "2", "mobile"),
        (
            '<phone type="cell"></phone><phone>N/A</phone><phone time="day">4</phone>',
            "4",
            "",
        ),
        ('<phone type="fax">1</phone>', "", ""),
        ("", "", ""),
    ],
)
def test_phone_is_the_first_callable_number(phones, number, kind):
    found = lead_of(customer(phones)).customer

    assert (found.phone, found.phone_type) == (number, kind)


def test_first_contact_email_language_and_address_count():
    lead = lead_of(
        minimal(
            "<customer><contact><email></email><email>a@x.test</email><email>b@x.test</email>"
            "<address><city>One</city></address><address><city>Two</city></address></contact>"
            "<contact><email>c@x.test</email></contact></customer>"
        )
    )

    assert (lead.customer.email, lead.customer.address.city) == ("a@x.test", "One")


def test_language_wins_over_locale():
    lead = lead_of(customer("<locale>fr</locale><language>en</language>"))

    assert lead.customer.language == "en"


def test_customer_without_contact_keeps_comments_and_whisper():
    lead = lead_of(
        minimal(
            "<customer><comments>Hi</comments><whisper>Hot lead</whisper></customer>"
        )
    )

    assert (lead.customer.comments, lead.customer.whisper, lead.customer.full_name) == (
        "Hi",
        "Hot lead",
        "",
    )


# --- Speed and threads -----------------------------------------------------------------


def test_parses_concurrently_in_threads():
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(parse_adf, [FULL] * 200))

    assert all(result == results[0] for result in results)
    assert results[0][0].prospect_id == "PID-1"


def test_parsing_is_one_lxml_parse_and_one_visit_per_element(monkeypatch):
    # What keeps parse_adf a small multiple of bare lxml: lxml reads the bytes once, and
    # the walk lists each element's children once. `make bench` (part 3) times the ratio.
    data = (SAMPLES / "activix-crm-docs__adf-md__2021-03.xml").read_bytes()
    parses: list[bytes] = []
    visited: list[str] = []

    class Lxml:
        def __getattr__(self, name):
            return getattr(etree, name)

        def fromstring(self, body, parser=None):
            parses.append(body)
            return etree.fromstring(body, parser)

    real_children = adf_mapping.children_of

    def children(element):
        visited.append(element.getroottree().getpath(element))
        return real_children(element)

    monkeypatch.setattr(adf_guards, "etree", Lxml())
    monkeypatch.setattr(adf_mapping, "children_of", children)

    [lead] = parse_adf(data)

    assert lead.prospect_id
    assert len(parses) == 1
    assert visited
    assert len(visited) == len(set(visited))
