"""Parse ADF (Auto-lead Data Format) XML leads into typed, immutable values.

Hostile documents are refused before libxml2 sees them: anything over
``MAX_ADF_BYTES`` and any document type declaration other than a bare
``<!DOCTYPE name>`` (so no entities, internal subsets or external DTDs). The parser
itself resolves no entities, loads no DTD, touches no network and never runs
XInclude, so an ``xi:include`` element is just an unknown element and is ignored.

Real-world quirks are tolerated: a byte-order mark, white space or processing
instructions (``<?adf version="1.0"?>``) before or instead of the XML declaration,
Latin-1 and Windows-1252 declared encodings, CDATA, element and attribute names in
any case, and namespace prefixes. Elements are matched on their lower-cased local name.

No ``AdfError`` message quotes the document or anything it references.

The work is split by job: ``leads.adf.guards`` (reading the bytes safely),
``leads.adf.mapping`` (the tree to values, ``parse_adf``) and ``leads.adf.values``
(the values and the fields rules test).
"""

from leads.adf.guards import document_text
from leads.adf.mapping import parse_adf
from leads.adf.values import (
    FIELDS,
    MAX_ADF_BYTES,
    MAX_DEPTH,
    Address,
    AdfError,
    Customer,
    Identifier,
    Odometer,
    ParsedLead,
    Phone,
    Price,
    Provider,
    Vehicle,
    Vendor,
)

__all__ = [
    "FIELDS",
    "MAX_ADF_BYTES",
    "MAX_DEPTH",
    "Address",
    "AdfError",
    "Customer",
    "Identifier",
    "Odometer",
    "ParsedLead",
    "Phone",
    "Price",
    "Provider",
    "Vehicle",
    "Vendor",
    "document_text",
    "parse_adf",
]
