"""The realistic ADF lead the benchmarks post and parse, shaped like ``tests.leads.factories.adf``
with the extras real senders add (VIN, stock, odometer, price, colours, address, vendor contact).
"""

from __future__ import annotations

from urllib.parse import urlencode

# Letters and digits only, so it survives URL encoding unchanged (see bench.load.Request.unique).
PROSPECT_PLACEHOLDER = "BENCHPROSPECTID"


def lead_xml(
    *,
    prospect_id: str = "P-1",
    vendor_id: str = "BENCH-1",
    phone: str = "303-555-0147",
) -> str:
    """One prospect for ``vendor_id`` whose customer can be called at ``phone``."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<?adf version="1.0"?>
<adf>
  <prospect status="new">
    <id sequence="1" source="Bench CRM">{prospect_id}</id>
    <requestdate>2026-11-20T10:15:00-07:00</requestdate>
    <requesttype>sales</requesttype>
    <vehicle interest="buy" status="new">
      <year>2025</year>
      <make>Toyota</make>
      <model>Camry</model>
      <vin>4T1G11AK5SU123456</vin>
      <stock>T25-0412</stock>
      <trim>XSE</trim>
      <doors>4</doors>
      <bodystyle>Sedan</bodystyle>
      <transmission>Automatic</transmission>
      <odometer status="original" units="mi">12</odometer>
      <colorcombination>
        <interiorcolor>Black</interiorcolor>
        <exteriorcolor>Blueprint</exteriorcolor>
        <preference>1</preference>
      </colorcombination>
      <price type="quote" currency="USD">32450</price>
      <comments>Blue please. Is the sunroof package available?</comments>
    </vehicle>
    <vehicle interest="trade-in" status="used">
      <year>2015</year>
      <make>Honda</make>
      <model>Civic</model>
      <odometer status="original" units="mi">98250</odometer>
    </vehicle>
    <customer>
      <contact primarycontact="1">
        <name part="first">Maria</name>
        <name part="last">Lopez</name>
        <email>maria.lopez@example.com</email>
        <phone type="voice" time="day">{phone}</phone>
        <phone type="fax">303-555-0199</phone>
        <address>
          <street line="1">1234 Larimer St</street>
          <city>Denver</city>
          <regioncode>CO</regioncode>
          <postalcode>80202</postalcode>
          <country>US</country>
        </address>
      </contact>
      <timeframe><description>Within a week</description></timeframe>
      <comments>Can I test drive Saturday morning?
Trade-in has new tires.</comments>
    </customer>
    <vendor>
      <id sequence="1" source="dealerId">{vendor_id}</id>
      <vendorname>Bench Toyota</vendorname>
      <contact primarycontact="1">
        <name part="full">Sam Sales</name>
        <email>sam@bench-toyota.example.com</email>
      </contact>
    </vendor>
    <provider>
      <name part="full">Web Form</name>
      <service>Bench Toyota website</service>
      <url>https://crm.example.com/lead/1</url>
    </provider>
  </prospect>
</adf>"""


def lead_form(*, api_user: str, api_key: str, **lead: str) -> bytes:
    """The urlencoded ``POST /api/nl`` body for ``lead_xml(**lead)``."""
    return urlencode(
        {"xml": lead_xml(**lead), "apiuser": api_user, "apikey": api_key}
    ).encode("ascii")
