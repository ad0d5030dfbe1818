"""Whisper and call notes: exact texts for representative leads."""

from pathlib import Path

import pytest

from leads.adf import Customer, ParsedLead, Provider, Vehicle, Vendor, parse_adf
from leads.compose import compose_call_notes, compose_whisper

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "adf-samples"

CAMRY = Vehicle(
    status="new",
    year="2024",
    make="Toyota",
    model="Camry",
    license_plate="ABC123",
    bodystyle="Sedan",
    fueltype="Hybrid",
    comments="Wants the\nsunroof",
)
TRADE_IN = Vehicle(
    interest="trade-in", year="2015", make="Mazda", model="3", license_plate="OLD1"
)

FULL = ParsedLead(
    request_type="Sales",
    vehicles=(TRADE_IN, CAMRY),
    customer=Customer(
        comments="Call after 5\nor on Saturday", whisper="Asked about financing"
    ),
    vendor=Vendor(name="Best Motors"),
    provider=Provider(url="https://example.com/lead/1"),
)


@pytest.mark.parametrize(
    ("lead", "whisper"),
    [
        (
            FULL,
            "Sales lead. New 2024 Toyota Camry, plate ABC123. Asked about financing.",
        ),
        (ParsedLead(request_type="service"), "Service lead."),
        (ParsedLead(request_type="Internet Lead"), "Internet Lead."),
        (
            ParsedLead(
                vehicles=(Vehicle(make="Kia", model="Forte"),),
                customer=Customer(whisper="call after 5!"),
            ),
            "Used Kia Forte. Call after 5!",
        ),
        (
            ParsedLead(vehicles=(Vehicle(license_plate="XYZ9"),)),
            "Used vehicle, plate XYZ9.",
        ),
        # A vehicle with nothing but its default status is not worth reading out.
        (ParsedLead(request_type="Sales", vehicles=(Vehicle(),)), "Sales lead."),
        # The trade-in is never the vehicle of interest.
        (ParsedLead(vehicles=(TRADE_IN,)), ""),
        (ParsedLead(), ""),
    ],
)
def test_whisper(lead, whisper):
    assert compose_whisper(lead) == whisper


@pytest.mark.parametrize(
    ("lead", "notes"),
    [
        (
            FULL,
            "Request type: Sales\n"
            "Vendor: Best Motors\n"
            "Vehicle status: New\n"
            "Year: 2024\n"
            "Make: Toyota\n"
            "Model: Camry\n"
            "License plate: ABC123\n"
            "Body style: Sedan\n"
            "Fuel type: Hybrid\n"
            "Vehicle comments: Wants the\n"
            "  sunroof\n"
            "URL: https://example.com/lead/1\n"
            "Customer comments: Call after 5\n"
            "  or on Saturday",
        ),
        (
            ParsedLead(
                vehicles=(Vehicle(model="Forte"),), vendor=Vendor(name="Dealer")
            ),
            "Vendor: Dealer\nVehicle status: Used\nModel: Forte",
        ),
        (
            ParsedLead(vehicles=(TRADE_IN,), customer=Customer(comments="Hi")),
            "Customer comments: Hi",
        ),
        (ParsedLead(), ""),
    ],
)
def test_call_notes(lead, notes):
    assert compose_call_notes(lead) == notes


def test_whisper_and_notes_of_a_parsed_sample():
    [lead] = parse_adf(
        (SAMPLES / "idknerdyshit-adf__tests-core__FULL_LEAD.xml").read_bytes()
    )

    assert compose_whisper(lead) == "Used 1997 Chevrolet Blazer."
    assert compose_call_notes(lead) == (
        "Vendor: Koons Internet Outlet\n"
        "Vehicle status: Used\n"
        "Year: 1997\n"
        "Make: Chevrolet\n"
        "Model: Blazer\n"
        "Customer comments: Can deliver by Thursday?"
    )


def test_whisper_of_a_trade_in_listed_first_reads_the_buy_vehicle():
    path = SAMPLES / "unknown-repo-id61581943507__variant-trade-listed-before-buy.xml"
    [lead] = parse_adf(path.read_bytes())

    assert compose_whisper(lead) == "New 2026 Harley-Davidson Road Glide."
