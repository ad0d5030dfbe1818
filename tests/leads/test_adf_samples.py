"""Every real-world sample in /work/shared/adf-samples parses into the values it holds.

Expectations are written out by hand from each file, as attribute paths on the
parsed lead (`customer.phone`, `buy_vehicle.make`, `vehicles.0.interest`);
"vehicle_count" and "phone_count" count vehicles and customer phones.
"""

from pathlib import Path
from typing import Any

import pytest

from leads.adf import AdfError, Identifier, parse_adf

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "adf-samples"

DANA = {
    "customer.full_name": "Dana Whitfield",
    "customer.first_name": "Dana",
    "customer.last_name": "Whitfield",
    "customer.email": "dana.whitfield@example.com",
    "prospect_status": "new",
    "prospect_id": "",
}
ROAD_GLIDE = {
    "buy_vehicle.year": "2026",
    "buy_vehicle.make": "Harley-Davidson",
    "buy_vehicle.model": "Road Glide",
}

EXPECTED: dict[str, list[dict[str, Any]]] = {
    "aayush-adf-xml-parser__lead1-approval-genie.xml": [
        {
            # The only <id> is empty: its source is still reported.
            "prospect_id": "",
            "prospect_source": "ABC",
            "prospect_ids": (Identifier("", "ABC"),),
            "prospect_status": "new",
            "request_date": "2019-01-15T18:46:36-06:00",
            "vehicle_count": 1,
            "buy_vehicle.interest": "buy",
            "buy_vehicle.status": "used",
            "buy_vehicle.year": "2023",
            "buy_vehicle.make": "Hyundai",
            "buy_vehicle.model": "i30",
            "customer.full_name": "John Test01292019",
            "customer.first_name": "John",
            "customer.last_name": "Test01292019",
            "customer.email": "testemail@domain.com",
            "customer.phone": "1234567890",
            "customer.phone_type": "phone",
            "phone_count": 4,
            "customer.address.street": "6299 Airport Road",
            "customer.address.city": "Mississauga",
            "customer.address.regioncode": "ON",
            "customer.address.postalcode": "L4V1N3",
            "customer.address.country": "Canada",
            "customer.comments": "\n".join(
                [
                    "Date of Birth: 1980-11-17",
                    "Monthly Payment: 1450",
                    "Rent_or_own: Rent",
                    "Time at address: 11 years 2 months",
                    "Occupation: Occupation1",
                    "Employer: EmployerName",
                    "Time with Employer: 2 years 2",
                    "Monthly Income: 5500",
                    "Lead Timestamp: 08/31/2019 04:30pm",
                    "IP Address: 70.25.4.55",
                    "Comments: looking for SUV, new to the country...",
                ]
            ),
            "vendor.name": "Approval Genie",
            "vendor.contact_name": "John B",
            "vendor.id": "",
            "provider.name": "PROSPECT",
            "provider.url": "leadprovider.domain.com",
        }
    ],
    "aayush-adf-xml-parser__x1-spec-minimal.xml": [
        {
            "prospect_id": "",
            "prospect_ids": (),
            "request_date": "2000-03-30T15:30:20-08:00",
            "buy_vehicle.status": "used",
            "buy_vehicle.year": "1999",
            "buy_vehicle.make": "Chevrolet",
            "buy_vehicle.model": "Blazer",
            "customer.full_name": "John Doe",
            "customer.first_name": "John",
            "customer.last_name": "Doe",
            "customer.phone": "393-999-3922",
            "customer.phone_type": "",
            "customer.email": "",
            # The spec's minimal example names the dealer only as the vendor contact.
            "vendor.name": "",
            "vendor.contact_name": "Acura of Bellevue",
        }
    ],
    "aayush-adfparser__sample-lendingarch-template.xml": [
        {
            "prospect_id": "{Lead_ID}",
            "prospect_source": "LendingArch",
            "request_date": "{Lead_Created_Date_Time}",
            "buy_vehicle.year": "",
            "buy_vehicle.make": "",
            "buy_vehicle.model": "",
            "buy_vehicle.bodystyle": "{desired_vehicle}",
            "customer.first_name": "{first_name}",
            "customer.last_name": "{last_name}",
            "customer.full_name": "{first_name} {last_name}",
            "customer.email": "{email_address}",
            # A placeholder without a digit is no phone number to call.
            "phone_count": 1,
            "customer.phone": "",
            "customer.address.street": "{address}",
            "customer.address.country": "Canada",
            "vendor.name": "{vendor_name}",
            "vendor.contact_name": "{contact_name}",
            "provider.name": "LendingArch",
            "provider.url": "lendingarch.com",
        }
    ],
    "activix-crm-docs__adf-md__2020-04.xml": [
        {
            "prospect_id": "12345",
            "prospect_source": "Activix",
            "prospect_status": "new",
            "request_date": "2020-04-28T15:30:20-05:00",
            "vehicle_count": 1,
            "buy_vehicle.status": "new",
            "buy_vehicle.year": "2020",
            "buy_vehicle.make": "Volvo",
            "buy_vehicle.model": "XC90",
            "buy_vehicle.vin": "2GTEK19R7V1511644",
            "buy_vehicle.stock": "V12345",
            "buy_vehicle.trim": "R-Design",
            "buy_vehicle.doors": "5",
            "buy_vehicle.bodystyle": "SUV",
            "buy_vehicle.transmission": "A",
            "buy_vehicle.odometer.value": "1500",
            "buy_vehicle.odometer.units": "km",
            "buy_vehicle.odometer.status": "original",
            "buy_vehicle.interior_color": "Red",
            "buy_vehicle.exterior_color": "Black",
            # The vehicle's price, not the option's price listed after it.
            "buy_vehicle.price.value": "59999.99",
            "buy_vehicle.price.type": "quote",
            "buy_vehicle.price.currency": "CAD",
            "buy_vehicle.comments": "Demo car",
            "customer.first_name": "Test",
            "customer.last_name": "Activix 2",
            "customer.full_name": "Test Activix 2",
            "customer.email": "test@activix.ca",
            "customer.phone": "+14382881008",
            "customer.phone_type": "phone",
            "phone_count": 3,
            "customer.language": "fr",
            "customer.address.street": "",
            "customer.address.city": "",
            "customer.address.regioncode": "QC",
            "customer.address.postalcode": "J1B2N3",
            "customer.address.country": "CA",
            "customer.comments": "Can you deliver the car to my house?",
            "vendor.name": "ABC Motors",
            "vendor.contact_name": "Jane Doe",
            "provider.name": "Activix",
            "provider.service": "ABC Motors' Website",
            "provider.url": "https://abcmotors.com/volvo/xc90",
        }
    ],
    "activix-crm-docs__adf-md__2021-03.xml": [
        {
            "prospect_id": "12345",
            "prospect_source": "Activix",
            "request_date": "2020-04-28T15:30:20-05:00",
            "buy_vehicle.status": "new",
            "buy_vehicle.make": "Volvo",
            "buy_vehicle.model": "XC90",
            "buy_vehicle.price.value": "59999.99",
            "buy_vehicle.price.type": "msrp",
            # The first of two colour combinations.
            "buy_vehicle.interior_color": "Red",
            "buy_vehicle.exterior_color": "Black",
            "customer.full_name": "Test Activix 2",
            "customer.phone": "+14382881008",
            "customer.language": "fr",
            "vendor.name": "ABC Motors",
            "vendor.contact_name": "Jane Doe",
            "provider.name": "Activix",
            "provider.url": "https://abcmotors.com/volvo/xc90",
        }
    ],
    "gcoombe-adf-leads__test-example.xml": [
        {
            "prospect_id": "1",
            "prospect_source": "fetch-auto",
            "request_date": "2018-04-15T15:30:20.000-08:00",
            "vehicle_count": 0,
            "buy_vehicle": None,
            # name type="full" (should be part=) is still the full name.
            "customer.full_name": "Test user",
            "customer.first_name": "Test",
            "customer.last_name": "user",
            "customer.email": "test@fetchauto.ca",
            "customer.phone": "778-555-4474",
            "phone_count": 1,
            "customer.address.street": "453 W 12th Ave",
            "customer.address.city": "Vancouver",
            "customer.address.regioncode": "BC",
            "customer.address.postalcode": "V5Y1V4",
            "customer.address.country": "CA",
            "vendor.name": "",
            "vendor.id": "",
            "provider.name": "Fetch Auto",
            "provider.url": "https://fetchauto.ca",
        }
    ],
    "idknerdyshit-adf__tests-core__FULL_LEAD.xml": [
        {
            "prospect_id": "38889",
            "prospect_source": "Cobalt",
            "prospect_status": "new",
            "request_date": "2000-03-30T15:30:20-08:00",
            "buy_vehicle.status": "used",
            "buy_vehicle.year": "1997",
            "buy_vehicle.make": "Chevrolet",
            "buy_vehicle.model": "Blazer",
            "buy_vehicle.vin": "1GNDT13W5V2200000",
            "buy_vehicle.price.value": "26995",
            "buy_vehicle.price.type": "quote",
            "buy_vehicle.price.currency": "USD",
            "customer.full_name": "John Doe",
            "customer.email": "jdoe@example.com",
            "customer.phone": "393-999-3922",
            "customer.phone_type": "voice",
            "customer.comments": "Can deliver by Thursday?",
            "vendor.name": "Koons Internet Outlet",
            "provider.name": "CarPoint",
            "provider.service": "Used Car Classifieds",
        }
    ],
    "idknerdyshit-adf__tests-core__MAXIMAL_ADF.xml": [
        {
            "prospect_id": "P-1",
            "prospect_source": "lead",
            "request_date": "2024-01-02T03:04:05-05:00",
            "buy_vehicle.status": "new",
            "buy_vehicle.year": "2024",
            "buy_vehicle.make": "Honda",
            "buy_vehicle.model": "Civic",
            "buy_vehicle.vin": "1HGCM82633A004352",
            "buy_vehicle.stock": "STK-1",
            "buy_vehicle.trim": "Touring",
            "buy_vehicle.doors": "4",
            "buy_vehicle.bodystyle": "Sedan",
            "buy_vehicle.transmission": "Automatic",
            "buy_vehicle.odometer.value": "123",
            "buy_vehicle.odometer.units": "mi",
            "buy_vehicle.interior_color": "Black",
            "buy_vehicle.exterior_color": "Blue",
            "buy_vehicle.price.value": "25000",
            "buy_vehicle.comments": "Vehicle comment",
            "customer.full_name": "Jane Doe",
            "customer.first_name": "Jane",
            "customer.last_name": "Doe",
            "customer.email": "jane@example.test",
            "customer.phone": "555-0100",
            "customer.address.street": "1 Main, Unit 2",
            "customer.address.city": "Detroit",
            "customer.address.regioncode": "MI",
            "customer.address.postalcode": "48201",
            "customer.address.country": "US",
            "customer.comments": "Customer comment",
            "vendor.id": "D-1",
            "vendor.id_source": "vendor",
            "vendor.name": "Dealer",
            "vendor.contact_name": "Sales",
            "provider.id": "PR-1",
            "provider.id_source": "provider",
            "provider.name": "Provider",
            "provider.service": "Leads",
            "provider.url": "https://provider.example",
        }
    ],
    "idknerdyshit-adf__tests-core__minimal-strict-valid.xml": [
        {
            "request_date": "2024-01-02T03:04:05-05:00",
            "buy_vehicle.year": "2024",
            "buy_vehicle.make": "Honda",
            "buy_vehicle.model": "Civic",
            "customer.full_name": "Jane Doe",
            "customer.email": "jane@example.com",
            "customer.phone": "",
            "vendor.name": "Dealer",
            "vendor.contact_name": "Sales Desk",
        }
    ],
    "idknerdyshit-adf__tests-core__two-prospects-resend.xml": [
        {
            "prospect_status": "",
            "request_date": "one",
            "buy_vehicle.year": "2024",
            "buy_vehicle.make": "Toyota",
            "buy_vehicle.model": "Camry",
            "customer.full_name": "A",
            "customer.first_name": "A",
            "customer.last_name": "",
            "customer.email": "a@example.com",
            "vendor.name": "Dealer One",
        },
        {
            "prospect_status": "resend",
            "request_date": "two",
            "buy_vehicle.year": "2025",
            "buy_vehicle.make": "Ford",
            "buy_vehicle.model": "F-150",
            "customer.full_name": "",
            "customer.phone": "",
            "vendor.name": "",
        },
    ],
    # Not well-formed as published (<?XML VERSION “1.0”?> after <?ADF ...?>); the
    # leading processing instructions are dropped, so the spec's own example reads.
    "rjwrobel86-adf-xml-generator__adf-xml-template.xml": [
        {
            "request_date": "2000-03-30T15:30:20-08:00",
            "buy_vehicle.year": "1999",
            "buy_vehicle.make": "Chevrolet",
            "buy_vehicle.model": "Blazer",
            "customer.full_name": "John Doe",
            "customer.phone": "393-999-3922",
            "vendor.contact_name": "Acura of Bellevue",
        }
    ],
    "unknown-repo-id22252128205__dealerspike-test-lead.xml": [
        {
            "prospect_id": "",
            "request_date": "2014-04-07T4:35:52 PM",
            "customer.full_name": "test test",
            "customer.first_name": "test",
            "customer.last_name": "test",
            # The first phone is empty; the next one is called.
            "phone_count": 3,
            "customer.phone": "8002885917",
            "customer.phone_type": "voice",
            "customer.email": "test@dealerspike.com",
            "customer.comments": "This is a Dealerspike Test",
            "vehicle_count": 1,
            "trade_in_vehicle": None,
            "buy_vehicle.status": "used",
            "buy_vehicle.year": "2013",
            "buy_vehicle.make": "EverGreen®",
            "buy_vehicle.model": "i-Go G256BH",
            "buy_vehicle.stock": "43698A",
            "buy_vehicle.vin": "5ZWTGKE29D1003396",
            "vendor.name": "Uhlmann RV",
            "vendor.contact_name": "",
            "provider.name": "Dealerspike",
            "provider.id": "1106",
            "provider.service": "uhlmannrv",
            "provider.url": "http://www.uhlmannrv.com/",
        }
    ],
    "unknown-repo-id59638277333__autotrader-ca-kijiji-canonical.xml": [
        {
            "request_date": "2026-05-01T10:00:00-04:00",
            "buy_vehicle.status": "used",
            "buy_vehicle.year": "2022",
            "buy_vehicle.make": "Kia",
            "buy_vehicle.model": "Forte",
            "buy_vehicle.trim": "EX",
            "customer.full_name": "Marie Tremblay",
            "customer.email": "marie@example.test",
            "customer.phone": "514-555-0100",
            "customer.comments": "Is this still available?",
            "vendor.name": "",
            "provider.name": "AutoTrader.ca",
        }
    ],
    "unknown-repo-id61581943507__variant-capitalized-elements.xml": [
        {
            **DANA,
            **ROAD_GLIDE,
            "buy_vehicle.status": "used",
            "customer.phone": "4195550188",
            "customer.phone_type": "cell",
        }
    ],
    "unknown-repo-id61581943507__variant-full-name-single-field.xml": [
        {
            **DANA,
            **ROAD_GLIDE,
            "buy_vehicle.status": "new",
            "buy_vehicle.stock": "U1234",
            "buy_vehicle.vin": "1HD1KRM12PB600001",
            "customer.phone": "4195550188",
        }
    ],
    "unknown-repo-id61581943507__variant-namespace-prefixed.xml": [
        {**DANA, **ROAD_GLIDE, "buy_vehicle.status": "used", "customer.phone": ""}
    ],
    "unknown-repo-id61581943507__variant-no-adf-envelope.xml": [
        {
            **DANA,
            **ROAD_GLIDE,
            "buy_vehicle.status": "new",
            "buy_vehicle.vin": "1HD1KRM12PB600001",
            "customer.phone": "4195550188",
        }
    ],
    "unknown-repo-id61581943507__variant-trade-listed-before-buy.xml": [
        {
            **DANA,
            **ROAD_GLIDE,
            "vehicle_count": 2,
            "vehicles.0.interest": "trade-in",
            "buy_vehicle.status": "new",
            "buy_vehicle.stock": "U1234",
            "trade_in_vehicle.status": "used",
            "trade_in_vehicle.year": "2019",
            "trade_in_vehicle.make": "Harley-Davidson",
            "trade_in_vehicle.model": "Road King",
            "trade_in_vehicle.odometer.value": "18400",
            "customer.phone": "4195550188",
        }
    ],
}

REFUSED = [
    "idknerdyshit-adf__fuzz-corpus__security-entities.xml",
    "unknown-repo-id59638277333__entity-bomb.xml",
]


def read_sample(name: str) -> bytes:
    if not SAMPLES.is_dir():
        pytest.fail(
            f"ADF samples directory not found at {SAMPLES}; the tests need /work/shared/adf-samples"
        )
    return (SAMPLES / name).read_bytes()


def actual(lead: Any, path: str) -> Any:
    if path == "vehicle_count":
        return len(lead.vehicles)
    if path == "phone_count":
        return len(lead.customer.phones)
    value = lead
    for step in path.split("."):
        value = value[int(step)] if step.isdigit() else getattr(value, step)
    return value


def test_every_sample_file_has_expectations():
    on_disk = {path.name for path in SAMPLES.glob("*.xml")}
    assert on_disk, f"no samples found in {SAMPLES}"
    assert on_disk == set(EXPECTED) | set(REFUSED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_parses_into_its_values(name):
    leads = parse_adf(read_sample(name))

    assert len(leads) == len(EXPECTED[name])
    for lead, expected in zip(leads, EXPECTED[name], strict=True):
        assert {path: actual(lead, path) for path in expected} == expected


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_sample_parses_the_same_from_text(name):
    data = read_sample(name)

    assert parse_adf(data.decode("utf-8")) == parse_adf(data)


@pytest.mark.parametrize("name", REFUSED)
def test_entity_sample_is_refused(name):
    with pytest.raises(AdfError) as caught:
        parse_adf(read_sample(name))

    assert not caught.value.too_large
    assert "payload" not in str(caught.value)
    assert "aaaa" not in str(caught.value)
