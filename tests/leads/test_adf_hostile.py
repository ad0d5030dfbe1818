"""Hostile ADF documents are refused quickly, read no file, touch no network, and the
error never repeats the document or what it points at."""

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from leads.adf import MAX_ADF_BYTES, MAX_DEPTH, AdfError, parse_adf

SECRET = "TOP-SECRET-42"
XINCLUDE = "http://www.w3.org/2001/XInclude"
LEAD_BODY = (
    "<prospect><id source='crm'>77</id><customer><contact><name part='full'>Ann Lee</name>"
    "<phone>5145550100</phone></contact><comments>{comments}</comments></customer>"
    "<vendor><vendorname>Dealer</vendorname></vendor></prospect>"
)


def adf(comments: str = "", doctype: str = "") -> str:
    return f'<?xml version="1.0"?>{doctype}<adf>{LEAD_BODY.format(comments=comments)}</adf>'


def refusal(document: str | bytes) -> tuple[AdfError, float]:
    """The error parse_adf raises and the fastest of three refusals, in seconds."""
    timings = []
    for _ in range(3):
        started = time.perf_counter()
        with pytest.raises(AdfError) as caught:
            parse_adf(document)
        timings.append(time.perf_counter() - started)
    return caught.value, min(timings)


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


def test_billion_laughs_is_refused_fast():
    error, seconds = refusal(billion_laughs())

    assert seconds < 0.05
    assert not error.too_large
    assert "lol" not in str(error)


def test_quadratic_blowup_is_refused_fast():
    document = quadratic_blowup()
    assert len(document) < MAX_ADF_BYTES

    error, seconds = refusal(document)

    assert seconds < 0.05
    assert "xxxx" not in str(error)


def test_external_entity_to_etc_passwd_is_refused():
    document = adf(
        "&xxe;", '<!DOCTYPE adf [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
    )

    error, seconds = refusal(document)

    assert seconds < 0.05
    assert "root:" not in str(error)
    assert "passwd" not in str(error)


def test_external_entity_to_a_local_file_never_reads_it(secret_file):
    document = adf(
        "&xxe;", f'<!DOCTYPE adf [<!ENTITY xxe SYSTEM "{secret_file.as_uri()}">]>'
    )

    error, _ = refusal(document)

    assert SECRET not in str(error)
    assert SECRET not in repr(error.args)
    assert error.__cause__ is None


def test_external_entity_by_url_touches_no_network(listener):
    document = adf(
        "&xxe;", f'<!DOCTYPE adf [<!ENTITY xxe SYSTEM "{url(listener, "x")}">]>'
    )

    error, seconds = refusal(document)

    assert seconds < 0.05
    assert "127.0.0.1" not in str(error)
    assert_nobody_connected(listener)


def test_external_parameter_entity_is_refused(listener, secret_file):
    doctype = (
        f'<!DOCTYPE adf [<!ENTITY % remote SYSTEM "{url(listener, "evil.dtd")}"> %remote;'
        f'<!ENTITY % local SYSTEM "{secret_file.as_uri()}"> %local;]>'
    )

    error, seconds = refusal(adf("", doctype))

    assert seconds < 0.05
    assert SECRET not in str(error)
    assert_nobody_connected(listener)


@pytest.mark.parametrize("identifier", ["SYSTEM", 'PUBLIC "-//ADF//DTD ADF 1.0//EN"'])
def test_external_dtd_is_refused(listener, identifier):
    doctype = f'<!DOCTYPE adf {identifier} "{url(listener, "adf.dtd")}">'

    error, seconds = refusal(adf("", doctype))

    assert seconds < 0.05
    assert "adf.dtd" not in str(error)
    assert_nobody_connected(listener)


def test_external_dtd_from_a_local_file_is_refused(secret_file):
    error, _ = refusal(adf("", f'<!DOCTYPE adf SYSTEM "{secret_file.as_uri()}">'))

    assert SECRET not in str(error)


def test_internal_entity_is_refused_not_expanded():
    error, _ = refusal(
        adf("&greeting;", '<!DOCTYPE adf [<!ENTITY greeting "hello there">]>')
    )

    assert "hello" not in str(error)


def test_internal_subset_without_entities_is_refused():
    refusal(adf("", "<!DOCTYPE adf [<!ELEMENT adf ANY>]>"))


def test_bare_doctype_is_tolerated():
    [lead] = parse_adf(adf("fine", "<!DOCTYPE adf>"))

    assert lead.customer.comments == "fine"


def test_doctype_after_comments_and_processing_instructions_is_refused():
    document = (
        '<?xml version="1.0"?>\n<?adf version="1.0"?>\n<!-- hello -->\n'
        '<!DOCTYPE adf [<!ENTITY x "y">]>\n<adf>'
        + LEAD_BODY.format(comments="&x;")
        + "</adf>"
    )

    refusal(document)


def test_lower_case_doctype_is_not_well_formed():
    refusal(adf("&x;", '<!doctype adf [<!ENTITY x "y">]>'))


def test_doctype_hidden_in_utf16_is_refused():
    document = adf("&x;", '<!DOCTYPE adf [<!ENTITY x "y">]>').replace(
        '"1.0"?>', '"1.0" encoding="UTF-16"?>'
    )

    refusal(document.encode("utf-16"))


def test_utf16_without_byte_order_mark_is_not_read_as_utf16():
    document = adf("&x;", '<!DOCTYPE adf [<!ENTITY x "y">]>').replace(
        '<?xml version="1.0"?>', ""
    )

    refusal(document.encode("utf-16-le"))


def test_doctype_in_a_declared_ebcdic_body_is_refused():
    # The body is decoded before the DOCTYPE scan, so another encoding hides nothing.
    body = (
        '<!DOCTYPE adf [<!ENTITY x "y">]><adf>'
        + LEAD_BODY.format(comments="&x;")
        + "</adf>"
    )
    document = b'<?xml version="1.0" encoding="cp500"?>' + body.encode("cp500")

    refusal(document)


@pytest.mark.parametrize(
    "document",
    [
        b"<?xml " * 100_000 + b"?><adf/>",
        b"<?xml encoding=" * 50_000 + b"?><adf/>",
        b"<?" * 500_000,
        b"<?a?>" * 200_000,
        b"<!DOCTYPE a " * 80_000,
        b"<!DOCTYPE a>" * 80_000 + b"<adf/>",
    ],
)
def test_pathological_prologs_are_refused_fast(document):
    assert len(document) <= MAX_ADF_BYTES

    _, seconds = refusal(document)

    assert seconds < 0.05


def test_elements_with_thousands_of_attributes_are_read_in_linear_time():
    # lxml's items() is quadratic in the attribute count; a case-insensitive lookup
    # must not use it.
    many = " ".join(f'a{i}="1"' for i in range(80_000))
    document = f"<adf><prospect><vehicle {many}/></prospect></adf>"
    assert len(document) <= MAX_ADF_BYTES

    started = time.perf_counter()
    [lead] = parse_adf(document)

    assert time.perf_counter() - started < 0.5
    assert lead.buy_vehicle.status == "used"


def test_undeclared_entity_is_not_well_formed():
    error, _ = refusal(adf("&xxe;"))

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


def test_document_over_the_limit_is_too_large():
    document = adf("x" * MAX_ADF_BYTES).encode()

    error, seconds = refusal(document)

    assert error.too_large
    assert seconds < 0.05


def test_text_over_the_limit_is_too_large():
    error, _ = refusal(adf("x" * MAX_ADF_BYTES))

    assert error.too_large


def test_text_over_the_limit_once_encoded_is_too_large():
    # Fewer characters than the limit, more bytes than it in UTF-8.
    comments = "é" * (MAX_ADF_BYTES // 2)
    document = adf(comments)
    assert len(document) < MAX_ADF_BYTES

    error, _ = refusal(document)

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
    error, _ = refusal(adf(SECRET * (MAX_ADF_BYTES // len(SECRET))))

    assert SECRET not in str(error)


def nested(depth: int) -> str:
    """An ADF lead whose deepest element sits at `depth` (the root is at 1)."""
    inner = depth - 2
    return f"<adf><prospect>{'<x>' * inner}{'</x>' * inner}<id>1</id></prospect></adf>"


def test_100k_deep_nesting_is_refused_fast_without_recursion():
    document = "<adf>" + "<x>" * 100_000 + "</x>" * 100_000 + "</adf>"
    assert len(document) < MAX_ADF_BYTES

    error, seconds = refusal(document)

    assert seconds < 0.05
    assert not error.too_large


def test_nesting_at_the_depth_limit_is_read():
    [lead] = parse_adf(nested(MAX_DEPTH))

    assert lead.prospect_id == "1"


def test_nesting_past_the_depth_limit_is_refused():
    error, _ = refusal(nested(MAX_DEPTH + 1))

    assert str(error) == f"The document is nested deeper than {MAX_DEPTH} levels."


def test_syntax_error_quotes_nothing_from_the_document():
    error, _ = refusal(f"<adf><prospect><{SECRET}></prospect></adf>")

    assert SECRET not in str(error)
    assert error.__cause__ is None
    assert error.__suppress_context__


def test_adf_error_is_a_value_error():
    error, _ = refusal("<adf>")

    assert isinstance(error, ValueError)
    assert not error.too_large
