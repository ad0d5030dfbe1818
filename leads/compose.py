"""Compose the whisper read to the agent and the call notes shown to them from a parsed lead.

Both use the buy vehicle (the first vehicle that is not a trade-in) and skip every
empty part, so a sparse lead gives a short text and an empty lead gives "".
"""

from leads.adf import ParsedLead

__all__ = ["compose_call_notes", "compose_whisper"]


def compose_whisper(lead: ParsedLead) -> str:
    """Compose the whisper: request type, vehicle status, year, make, model, plate, whisper.

    Up to three sentences, each left out when it would be empty:

    - the request type: "Sales lead." (a type already ending in "lead" is not
      repeated: "Internet lead.");
    - the vehicle, when it has a year, make, model or plate: status, year, make and
      model, then the plate: "New 2024 Toyota Camry, plate ABC123." or, with a plate
      only, "Used vehicle, plate ABC123.";
    - the lead's own whisper text, as sent, ending in a full stop.

    Example: "Sales lead. New 2024 Toyota Camry, plate ABC123. Call after 5."
    """
    sentences: list[str] = []
    request_type = lead.request_type
    if request_type:
        ends_in_lead = request_type.lower().rsplit(" ", 1)[-1] == "lead"
        sentences.append(
            _sentence(request_type if ends_in_lead else f"{request_type} lead")
        )
    vehicle = lead.buy_vehicle
    if vehicle:
        description = " ".join(
            part for part in (vehicle.year, vehicle.make, vehicle.model) if part
        )
        if description or vehicle.license_plate:
            text = f"{vehicle.status} {description or 'vehicle'}"
            if vehicle.license_plate:
                text += f", plate {vehicle.license_plate}"
            sentences.append(_sentence(text))
    if lead.customer.whisper:
        sentences.append(_sentence(lead.customer.whisper))
    return " ".join(sentences)


def compose_call_notes(lead: ParsedLead) -> str:
    """Compose the call notes as "Label: value" lines, empty parts left out.

    Lines in this order: Request type, Vendor, Vehicle status, Year, Make, Model,
    License plate, Body style, Fuel type, Vehicle comments, URL (provider/url),
    Customer comments. The vehicle lines appear only when the lead has a buy vehicle.
    A value spanning several lines continues on lines indented by two spaces.
    """
    vehicle = lead.buy_vehicle
    parts: list[tuple[str, str]] = [
        ("Request type", lead.request_type),
        ("Vendor", lead.vendor.name),
    ]
    if vehicle:
        parts += [
            ("Vehicle status", vehicle.status.capitalize()),
            ("Year", vehicle.year),
            ("Make", vehicle.make),
            ("Model", vehicle.model),
            ("License plate", vehicle.license_plate),
            ("Body style", vehicle.bodystyle),
            ("Fuel type", vehicle.fueltype),
            ("Vehicle comments", vehicle.comments),
        ]
    parts += [
        ("URL", lead.provider.url),
        ("Customer comments", lead.customer.comments),
    ]
    return "\n".join(
        f"{label}: {_indent_continuation(value)}" for label, value in parts if value
    )


def _indent_continuation(value: str) -> str:
    return value.replace("\n", "\n  ")


def _sentence(text: str) -> str:
    """The text with a capital first letter and a closing full stop unless it has one."""
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else f"{text}."
