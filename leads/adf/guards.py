"""Reading an ADF document's bytes safely: the hostile-input guards.

Hostile documents are refused before libxml2 sees them: anything over
``MAX_ADF_BYTES`` and any document type declaration other than a bare
``<!DOCTYPE name>`` (so no entities, internal subsets or external DTDs). The parser
itself resolves no entities, loads no DTD, touches no network and never runs
XInclude, so an ``xi:include`` element is just an unknown element and is ignored.
A byte-order mark, white space or processing instructions before the XML declaration,
and Latin-1 and Windows-1252 declared encodings, are tolerated.
"""

import codecs
import re
import threading

from lxml import etree

from leads.adf.values import MAX_ADF_BYTES, MAX_DEPTH, AdfError

_TOO_LARGE = "The document is larger than 1 MiB."
_NOT_XML = "The document is not well-formed XML."
_BAD_ENCODING = (
    "The document's character encoding is unknown or does not match its bytes."
)
_DTD_REFUSED = (
    "The document declares a DTD, entities or an external reference; these are refused."
)
_TOO_DEEP = f"The document is nested deeper than {MAX_DEPTH} levels."

# White space and processing instructions, the XML declaration included, before the
# first real markup. Senders put `<?adf version="1.0"?>` or blank lines before the
# declaration, or write the declaration wrongly; none of it carries data.
# A processing instruction runs to the first "?>" after its "<?"; spelt out rather than
# as a lazy <\?.*?\?>, which took a regex step per character (a third of the guards' time),
# and possessive throughout: each step of the pattern has one way to go on, so nothing is
# lost by keeping no state to back into, and an unclosed "<?" a megabyte long (or 200,000
# instructions) is read in one pass instead of 45 ms of backtracking (6 ms).
_PROLOG_JUNK = re.compile(rb"(?:\s++|<\?[^?]*+\?++(?:[^?>][^?]*+\?++)*+>)*+")
# [^<>] rather than [^>]: each candidate declaration is scanned only up to the next
# tag, or a prolog of many "<?xml " would take quadratic time.
_DECLARED_ENCODING = re.compile(
    rb"<\?xml\s[^<>]*?\bencoding\s*=\s*[\"']([A-Za-z][A-Za-z0-9._:-]*)[\"']",
    re.IGNORECASE,
)
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
# A DOCTYPE other than a bare <!DOCTYPE name>: one search in C, however many there are.
_DOCTYPE_NOT_BARE = re.compile(rb"<!DOCTYPE(?!\s+[^\s\[\]>\"']+\s*>)")
_DEEPER_THAN_LIMIT = etree.XPath(
    "boolean(" + "/*" * (MAX_DEPTH + 1) + ")", regexp=False, smart_strings=False
)
# Leads are a few levels deep: a probe a few levels past theirs settles most documents
# for a third less than the full one, which only a deeper document then pays for.
_SHALLOW_DEPTH = 8
_DEEPER_THAN_SHALLOW = etree.XPath(
    "boolean(" + "/*" * (_SHALLOW_DEPTH + 1) + ")", regexp=False, smart_strings=False
)

_threads = threading.local()


def _parser() -> etree.XMLParser:
    # One parser per thread: lxml releases the GIL while parsing only when parsers
    # are not shared between threads.
    parser: etree.XMLParser | None = getattr(_threads, "parser", None)
    if parser is None:
        parser = _threads.parser = etree.XMLParser(
            # The bytes are UTF-8 by now; saying so stops libxml2 from guessing another
            # encoding and seeing markup the DOCTYPE scan did not.
            encoding="utf-8",
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            dtd_validation=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
        )
    return parser


def _utf8_body(data: bytes | str) -> bytes:
    """The document as UTF-8 bytes without its prolog junk, or AdfError."""
    if len(data) > MAX_ADF_BYTES:
        raise AdfError(_TOO_LARGE, too_large=True)
    if isinstance(data, str):
        # Already decoded: whatever encoding the declaration names no longer applies.
        try:
            raw = data.encode("utf-8")
        except UnicodeEncodeError:
            raise AdfError(_BAD_ENCODING) from None
        if len(raw) > MAX_ADF_BYTES:
            raise AdfError(_TOO_LARGE, too_large=True)
        return _strip_prolog(raw.removeprefix(codecs.BOM_UTF8))[1]
    if data.startswith(codecs.BOM_UTF8):
        return _strip_prolog(data[len(codecs.BOM_UTF8) :])[1]
    if data.startswith(_UTF16_BOMS):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            raise AdfError(_BAD_ENCODING) from None
        return _strip_prolog(text.encode("utf-8"))[1]
    encoding, body = _strip_prolog(data)
    return body if encoding is None else _transcode(body, encoding)


def _strip_prolog(raw: bytes) -> tuple[str | None, bytes]:
    """The encoding the XML declaration names (None if none) and the bytes after the prolog junk."""
    end = _PROLOG_JUNK.match(raw).end()  # type: ignore[union-attr]  # the pattern matches the empty string
    declared = _DECLARED_ENCODING.search(raw, 0, end)
    return (declared.group(1).decode("ascii") if declared else None), raw[end:]


def _transcode(body: bytes, encoding: str) -> bytes:
    try:
        codec = codecs.lookup(encoding).name
    except LookupError:
        raise AdfError(_BAD_ENCODING) from None
    # A declaration of ASCII or of any UTF on bytes we could read it from means UTF-8 in
    # practice; libxml2 treats a mislabelled UTF-16 declaration the same way.
    if codec == "ascii" or codec.startswith("utf"):
        return body
    try:
        return _decode(body, codec).encode("utf-8")
    except (UnicodeError, LookupError):
        # LookupError: the name is a codec, but not a text encoding (base64, rot13).
        raise AdfError(_BAD_ENCODING) from None


def _decode(data: bytes, codec: str) -> str:
    """``data`` decoded with a declared codec (a name `codecs.lookup` normalised)."""
    if codec == "iso8859-1":
        # Senders label Windows-1252 text (curly quotes, euro sign) as Latin-1, as
        # browsers know; bytes Windows-1252 leaves undefined fall back to Latin-1.
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError:
            return data.decode("iso8859-1")
    return data.decode(codec)


def document_text(data: bytes) -> str:
    """The characters of a document received as bytes, read as `parse_adf` reads them:
    after a byte-order mark in its encoding, else in the encoding the XML declaration
    names, else in UTF-8.

    For storing the document as text: the declaration is kept (parsing text ignores it),
    a byte-order mark is not, and bytes that do not decode are kept as ``\\xNN`` escapes
    rather than lost (`parse_adf` refuses such a document anyway)."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :].decode("utf-8", "backslashreplace")
    if data.startswith(_UTF16_BOMS):
        return data.decode("utf-16", "backslashreplace")
    declared, body = _strip_prolog(data)
    prolog = data[: len(data) - len(body)].decode("utf-8", "backslashreplace")
    try:
        codec = codecs.lookup(declared).name if declared else "utf-8"
        if codec == "ascii" or codec.startswith("utf"):
            codec = "utf-8"  # as `_transcode` reads it
        return prolog + _decode(body, codec)
    except (UnicodeError, LookupError):
        return prolog + body.decode("utf-8", "backslashreplace")


def _refuse_doctypes(body: bytes) -> None:
    # Entities and external DTDs can only be declared in a DOCTYPE, so refusing every
    # DOCTYPE but `<!DOCTYPE name>` stops billion laughs, quadratic blowup and XXE
    # before libxml2 reads a byte.
    if _DOCTYPE_NOT_BARE.search(body):
        raise AdfError(_DTD_REFUSED)


def parse_root(data: bytes | str) -> etree._Element:
    body = _utf8_body(data)
    _refuse_doctypes(body)
    try:
        root = etree.fromstring(body, _parser())
    except etree.XMLSyntaxError:
        # The syntax error's text quotes the document; it is deliberately dropped.
        raise AdfError(_NOT_XML) from None
    if _DEEPER_THAN_SHALLOW(root) and _DEEPER_THAN_LIMIT(root):
        raise AdfError(_TOO_DEEP)
    return root
