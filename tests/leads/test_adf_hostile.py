"""Hostile ADF documents are refused before the expensive path, read no file, touch no
network, and the error never repeats the document or what it points at.

No test here measures time (a busy machine makes that flaky): each asserts the refusal,
its reason, and how far the document got, through a spy on the one lxml parse of
``leads.adf``. ``make bench`` (part 5) times these refusals against an ordinary lead.
"""

import inspect
import random
import re
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from leads.adf import MAX_ADF_BYTES, MAX_DEPTH, AdfError, parse_adf
from leads.adf import guards as adf_guards
from leads.adf import mapping as adf_mapping

SECRET = "TOP-SECRET-42"
XINCLUDE = "http://www.w3.org/2001/XInclude"
LEAD_BODY = (
    "<prospect><id source='crm'>77</id><customer><contact><name part='full'>Ann Lee</name>"
    "<phone>5145550100</phone></contact><comments>{comments}</comments></customer>"
    "<vendor><vendorname>Dealer</vendorname></vendor></prospect>"
)


def adf(comments: str = "", doctype: str = "") -> str:
    return f'<?xml version="1.0"?>{doctype}<adf>{LEAD_BODY.format(comments=comments)}</adf>'


# The reasons leads/adf.py documents.
DTD_REFUSED = (
    "The document declares a DTD, entities or an external reference; these are refused."
)
NOT_XML = "The document is not well-formed XML."
NO_PROSPECT = "The document holds no prospect."
TOO_LARGE = "The document is larger than 1 MiB."


class LxmlSpy:
    """Stands in for ``leads.adf.guards.etree``: records every body handed to lxml's parser."""

    def __init__(self) -> None:
        self.parsed: list[bytes] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(etree, name)

    def fromstring(self, body: bytes, parser: Any = None) -> Any:
        self.parsed.append(body)
        return etree.fromstring(body, parser)


@pytest.fixture(autouse=True)
def lxml(monkeypatch) -> LxmlSpy:
    spy = LxmlSpy()
    monkeypatch.setattr(adf_guards, "etree", spy)
    return spy


def refusal(document: str | bytes) -> AdfError:
    """The error parse_adf raises."""
    with pytest.raises(AdfError) as caught:
        parse_adf(document)
    return caught.value


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret.txt"
    path.write_text(f"root:x:0:0:{SECRET}\n")
    return path


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A local port that records whether anyone connected to it."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def assert_nobody_connected(server: socket.socket) -> None:
    with pytest.raises(BlockingIOError):
        server.accept()


def url(server: socket.socket, path: str) -> str:
    host, port = server.getsockname()
    return f"http://{host}:{port}/{path}"


def billion_laughs() -> str:
    entities = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
    ]
    return adf("&lol9;", f"<!DOCTYPE adf [{''.join(entities)}]>")


def quadratic_blowup() -> str:
    entity = "x" * 50_000
    return adf("&a;" * 15_000, f'<!DOCTYPE adf [<!ENTITY a "{entity}">]>')


def test_billion_laughs_is_refused_before_lxml(lxml):
    error = refusal(billion_laughs())

    assert str(error) == DTD_REFUSED
    assert lxml.parsed == []
    assert not error.too_large
    assert "lol" not in str(error)


def test_quadratic_blowup_is_refused_before_lxml(lxml):
    document = quadratic_blowup()
    assert len(document) < MAX_ADF_BYTES

    error = refusal(document)

    assert str(error) == DTD_REFUSED
    assert lxml.parsed == []
    assert "xxxx" not in str(error)


def test_external_entity_to_etc_passwd_is_refused(lxml):
    document = adf(
        "&xxe;", '<!DOCTYPE adf [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
    )

    error = refusal(document)

    assert str(error) == DTD_REFUSED
    assert lxml.parsed == []
    assert "root:" not in str(error)
    assert "passwd" not in str(error)


def test_external_entity_to_a_local_file_never_reads_it(secret_file):
    document = adf(
        "&xxe;", f'<!DOCTYPE adf [<!ENTITY xxe SYSTEM "{secret_file.as_uri()}">]>'
    )

    error = refusal(document)

    assert SECRET not in str(error)
    assert SECRET not in repr(error.args)
    assert error.__cause__ is None


def test_external_entity_by_url_touches_no_network(listener, lxml):
    document = adf(
        "&xxe;", f'<!DOCTYPE adf [<!ENTITY xxe SYSTEM "{url(listener, "x")}">]>'
    )

    error = refusal(document)

    assert str(error) == DTD_REFUSED
    assert lxml.parsed == []
    assert "127.0.0.1" not in str(error)
    assert_nobody_connected(listener)


def test_external_parameter_entity_is_refused(listener, secret_file, lxml):
    doctype = (
        f'<!DOCTYPE adf [<!ENTITY % remote SYSTEM "{url(listener, "evil.dtd")}"> %remote;'
        f'<!ENTITY % local SYSTEM "{secret_file.as_uri()}"> %local;]>'
    )

    error = refusal(adf("", doctype))

    assert str(error) == DTD_REFUSED
    assert lxml.parsed == []
    assert SECRET not in str(error)
    assert_nobody_connected(listener)


@pytest.mark.parametrize("identifier", ["SYSTEM", 'PUBLIC "-//ADF//DTD ADF 1.0//EN"'])
def test_external_dtd_is_refused(listener, identifier, lxml):
    doctype = f'<!DOCTYPE adf {identifier} "{url(listener, "adf.dtd")}">'

    error = refusal(adf("", doctype))

    assert str(error) == DTD_REFUSED
    assert lxml.parsed == []
    assert "adf.dtd" not in str(error)
    assert_nobody_connected(listener)


def test_external_dtd_from_a_local_file_is_refused(secret_file):
    error = refusal(adf("", f'<!DOCTYPE adf SYSTEM "{secret_file.as_uri()}">'))

    assert SECRET not in str(error)


def test_internal_entity_is_refused_not_expanded():
    error = refusal(
        adf("&greeting;", '<!DOCTYPE adf [<!ENTITY greeting "hello there">]>')
    )

    assert "hello" not in str(error)


def test_internal_subset_without_entities_is_refused(lxml):
    error = refusal(adf("", "<!DOCTYPE adf [<!ELEMENT adf ANY>]>"))

    assert str(error) == DTD_REFUSED
    assert lxml.parsed == []


def test_bare_doctype_is_tolerated():
    [lead] = parse_adf(adf("fine", "<!DOCTYPE adf>"))

    assert lead.customer.comments == "fine"


def test_doctype_after_comments_and_processing_instructions_is_refused(lxml):
    document = (
        '<?xml version="1.0"?>\n<?adf version="1.0"?>\n<!-- hello -->\n'
        '<!DOCTYPE adf [<!ENTITY x "y">]>\n<adf>'
        + LEAD_BODY.format(comments="&x;")
        + "</adf>"
    )

    assert str(refusal(document)) == DTD_REFUSED
    assert lxml.parsed == []


def test_lower_case_doctype_is_not_well_formed():
    assert str(refusal(adf("&x;", '<!doctype adf [<!ENTITY x "y">]>'))) == NOT_XML


def test_doctype_hidden_in_utf16_is_refused(lxml):
    document = adf("&x;", '<!DOCTYPE adf [<!ENTITY x "y">]>').replace(
        '"1.0"?>', '"1.0" encoding="UTF-16"?>'
    )

    assert str(refusal(document.encode("utf-16"))) == DTD_REFUSED
    assert lxml.parsed == []


def test_utf16_without_byte_order_mark_is_not_read_as_utf16():
    document = adf("&x;", '<!DOCTYPE adf [<!ENTITY x "y">]>').replace(
        '<?xml version="1.0"?>', ""
    )

    refusal(document.encode("utf-16-le"))


def test_doctype_in_a_declared_ebcdic_body_is_refused(lxml):
    # The body is decoded before the DOCTYPE scan, so another encoding hides nothing.
    body = (
        '<!DOCTYPE adf [<!ENTITY x "y">]><adf>'
        + LEAD_BODY.format(comments="&x;")
        + "</adf>"
    )
    document = b'<?xml version="1.0" encoding="cp500"?>' + body.encode("cp500")

    assert str(refusal(document)) == DTD_REFUSED
    assert lxml.parsed == []


@pytest.mark.parametrize(
    ("document", "reason", "handed_to_lxml"),
    [
        # One processing instruction spanning the prolog: stripped in one pass, so lxml
        # sees only what follows it.
        (b"<?xml " * 100_000 + b"?><adf/>", NO_PROSPECT, [b"<adf/>"]),
        (b"<?xml encoding=" * 50_000 + b"?><adf/>", NO_PROSPECT, [b"<adf/>"]),
        # Never closed: not prolog junk, so lxml reads it once and refuses it.
        (b"<?" * 500_000, NOT_XML, [b"<?" * 500_000]),
        # Nothing but junk: lxml is handed nothing.
        (b"<?a?>" * 200_000, NOT_XML, [b""]),
        # A DOCTYPE that is not bare: refused before lxml.
        (b"<!DOCTYPE a " * 80_000, DTD_REFUSED, []),
        # Bare DOCTYPEs pass the check; lxml refuses more than one, reading once.
        (
            b"<!DOCTYPE a>" * 80_000 + b"<adf/>",
            NOT_XML,
            [b"<!DOCTYPE a>" * 80_000 + b"<adf/>"],
        ),
    ],
    ids=[
        "xml-declarations",
        "encoding-declarations",
        "unclosed-instructions",
        "instructions-only",
        "unclosed-doctypes",
        "bare-doctypes",
    ],
)
def test_pathological_prologs_are_refused_reading_the_document_once(
    document, reason, handed_to_lxml, lxml
):
    assert len(document) <= MAX_ADF_BYTES

    error = refusal(document)

    assert str(error) == reason
    assert lxml.parsed == handed_to_lxml


def test_the_prolog_junk_pattern_strips_what_its_plain_spelling_strips():
    # The guards' pattern is spelt out and possessive for speed; this is what it means:
    # white space and processing instructions, each from "<?" to the first "?>" after it.
    plain = re.compile(rb"(?:\s+|<\?.*?\?>)*", re.DOTALL)
    pieces = [b"<?", b"?>", b"?", b">", b"<", b" ", b"\n", b"\t", b"x", b"<?xml ", b"a"]
    chosen = random.Random(22)
    for _ in range(20_000):
        prolog = b"".join(chosen.choices(pieces, k=chosen.randint(0, 12)))
        expected = plain.match(prolog).end()  # type: ignore[union-attr]
        assert adf_guards._PROLOG_JUNK.match(prolog).end() == expected, prolog  # type: ignore[union-attr]


def test_every_doctype_but_a_bare_one_is_refused_wherever_it_stands():
    # The guards find a DOCTYPE that is not bare in one search; this is what it means:
    # any "<!DOCTYPE" not followed by white space, a name and ">" is refused.
    bare = re.compile(rb"<!DOCTYPE\s+[^\s\[\]>\"']+\s*>")
    pieces = [b"<!DOCTYPE", b" ", b"\n", b"a", b">", b"[", b"]", b"'", b'"', b"<adf/>"]
    chosen = random.Random(9)
    for _ in range(20_000):
        body = b"".join(chosen.choices(pieces, k=chosen.randint(0, 10)))
        starts = [m.start() for m in re.finditer(b"<!DOCTYPE", body)]
        if any(not bare.match(body, start) for start in starts):
            with pytest.raises(AdfError, match="declares a DTD"):
                adf_guards._refuse_doctypes(body)
        else:
            adf_guards._refuse_doctypes(body)  # passes


class _AttribSpy:
    """An element's attrib that records the calls that cost quadratic time in lxml."""

    def __init__(self, attrib: Any, quadratic: list[str]) -> None:
        self._attrib, self._quadratic = attrib, quadratic

    def __iter__(self) -> Iterator[Any]:
        return iter(self._attrib)

    def __len__(self) -> int:
        return len(self._attrib)

    def __contains__(self, key: object) -> bool:
        return key in self._attrib

    def __getitem__(self, key: Any) -> Any:
        return self._attrib[key]

    def __getattr__(self, name: str) -> Any:
        if name in ("items", "values", "iteritems", "itervalues"):
            self._quadratic.append(f"attrib.{name}")
        return getattr(self._attrib, name)


@pytest.fixture
def quadratic_calls(monkeypatch) -> list[str]:
    """Every element of the parse records calls of items() and values(), on the element
    or its attrib: lxml takes quadratic time in the attribute count for those."""
    quadratic: list[str] = []

    class Element(etree.ElementBase):
        def items(self) -> Any:
            quadratic.append("items")
            return super().items()

        def values(self) -> Any:
            quadratic.append("values")
            return super().values()

        @property
        def attrib(self) -> Any:
            return _AttribSpy(super().attrib, quadratic)

    # A parser of the service's own making, in a thread-local of the test's, so the
    # service's cached parser is left as it was.
    monkeypatch.setattr(adf_guards, "_threads", threading.local())
    adf_guards._parser().set_element_class_lookup(
        etree.ElementDefaultClassLookup(element=Element)
    )
    return quadratic


def test_elements_with_thousands_of_attributes_are_read_in_linear_work(
    quadratic_calls, monkeypatch
):
    # lxml's items() and values() are quadratic in the attribute count; a
    # case-insensitive lookup must go through the keys, a bounded number of times each.
    attributes = 80_000
    many = " ".join(f'a{i}="1"' for i in range(attributes))
    document = f"<adf><prospect><vehicle {many}/></prospect></adf>"
    assert len(document) <= MAX_ADF_BYTES
    names = []
    real_name = adf_mapping.local_name

    def counted(tag: str) -> str:
        names.append(1)
        return real_name(tag)

    monkeypatch.setattr(adf_mapping, "local_name", counted)

    [lead] = parse_adf(document)

    assert lead.buy_vehicle is not None
    assert lead.buy_vehicle.status == "used"
    assert quadratic_calls == []
    assert 0 < len(names) <= 4 * attributes


def test_undeclared_entity_is_not_well_formed():
    error = refusal(adf("&xxe;"))

    assert "xxe" not in str(error)


def test_xinclude_is_never_processed(secret_file):
    include = f'<xi:include xmlns:xi="{XINCLUDE}" href="{secret_file.as_uri()}" parse="text"/>'

    [lead] = parse_adf(adf(f"before{include}after"))

    assert lead.customer.comments == "beforeafter"
    assert SECRET not in repr(lead)


def test_xinclude_to_etc_passwd_is_ignored():
    include = (
        f'<xi:include xmlns:xi="{XINCLUDE}" href="file:///etc/passwd" parse="text"/>'
    )

    [lead] = parse_adf(adf(include))

    assert "root:" not in repr(lead)


def test_document_over_the_limit_is_too_large_before_anything_is_read(
    lxml, monkeypatch
):
    document = adf("x" * MAX_ADF_BYTES).encode()
    scanned = []

    def scanning(raw: bytes) -> tuple[str | None, bytes]:
        scanned.append(raw)
        return None, raw

    monkeypatch.setattr(adf_guards, "_strip_prolog", scanning)

    error = refusal(document)

    assert error.too_large
    assert str(error) == TOO_LARGE
    assert scanned == []
    assert lxml.parsed == []


def test_text_over_the_limit_is_too_large():
    error = refusal(adf("x" * MAX_ADF_BYTES))

    assert error.too_large


def test_text_over_the_limit_once_encoded_is_too_large():
    # Fewer characters than the limit, more bytes than it in UTF-8.
    comments = "é" * (MAX_ADF_BYTES // 2)
    document = adf(comments)
    assert len(document) < MAX_ADF_BYTES

    error = refusal(document)

    assert error.too_large


def test_document_of_exactly_the_limit_is_read():
    document = adf("").encode()
    document = document.replace(
        b"<adf>", b"<adf>" + b" " * (MAX_ADF_BYTES - len(document))
    )
    assert len(document) == MAX_ADF_BYTES

    [lead] = parse_adf(document)

    assert lead.prospect_id == "77"


def test_size_error_quotes_nothing():
    error = refusal(adf(SECRET * (MAX_ADF_BYTES // len(SECRET))))

    assert SECRET not in str(error)


def nested(depth: int) -> str:
    """An ADF lead whose deepest element sits at `depth` (the root is at 1)."""
    inner = depth - 2
    return f"<adf><prospect>{'<x>' * inner}{'</x>' * inner}<id>1</id></prospect></adf>"


def test_100k_deep_nesting_is_refused_without_recursion(lxml):
    document = "<adf>" + "<x>" * 100_000 + "</x>" * 100_000 + "</adf>"
    assert len(document) < MAX_ADF_BYTES
    # Fifty Python frames above this one: a walk that recursed per level would need 100,000.
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack()) + 50)
    try:
        error = refusal(document)
    finally:
        sys.setrecursionlimit(limit)

    assert str(error) == NOT_XML
    assert len(lxml.parsed) == 1
    assert not error.too_large


def test_nesting_at_the_depth_limit_is_read():
    [lead] = parse_adf(nested(MAX_DEPTH))

    assert lead.prospect_id == "1"


def test_nesting_past_the_depth_limit_is_refused():
    error = refusal(nested(MAX_DEPTH + 1))

    assert str(error) == f"The document is nested deeper than {MAX_DEPTH} levels."


def test_syntax_error_quotes_nothing_from_the_document():
    error = refusal(f"<adf><prospect><{SECRET}></prospect></adf>")

    assert SECRET not in str(error)
    assert error.__cause__ is None
    assert error.__suppress_context__


def test_adf_error_is_a_value_error():
    error = refusal("<adf>")

    assert isinstance(error, ValueError)
    assert not error.too_large
