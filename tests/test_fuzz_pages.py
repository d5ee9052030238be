"""Fuzzing the simple repository page parsers (PEP 503 HTML, PEP 691 JSON).

Whatever an index sends, a page gives a list of files or
:class:`~wheelwise.client.errors.InvalidPage`, never another exception; a link that
is not a URL is skipped with a warning.
"""

from __future__ import annotations

import html
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.utils import canonicalize_name

from fuzzkit import bounded
from wheelwise.client.errors import InvalidPage
from wheelwise.client.index_file import IndexFile
from wheelwise.client.page_files import PageFiles
from wheelwise.client.simple_parse import (
    parse_html_page,
    parse_json_page,
    parse_page,
    read_html_page,
)

URL = "https://example.test/simple/demo/"
FUZZ = bounded(100)

links = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "http://[::1/x-1.0-py3-none-any.whl",
            "//[::1/x.whl",
            "http://h:port/x.whl",
            "http://h:99999/x.whl",
            "../../files/demo-1.0-py3-none-any.whl#sha256=" + "a" * 64,
            "demo-1.0.tar.gz#md5=zz",
            "",
            "#",
            "?q",
            "file:///etc/passwd",
        ]
    ),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=12,
)
entries = st.fixed_dictionaries(
    {},
    optional={
        "filename": st.one_of(st.text(max_size=30), json_values),
        "url": st.one_of(links, json_values),
        "hashes": st.one_of(
            st.dictionaries(st.sampled_from(["sha256", "md5", "x"]), st.text(max_size=70)),
            json_values,
        ),
        "requires-python": st.one_of(st.text(max_size=10), json_values),
        "yanked": json_values,
        "core-metadata": st.one_of(
            st.dictionaries(st.sampled_from(["sha256"]), st.text(max_size=70)), json_values
        ),
        "dist-info-metadata": json_values,
        "size": json_values,
    },
)
documents = st.fixed_dictionaries(
    {},
    optional={
        "meta": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "api-version": st.one_of(st.sampled_from(["1.0", "1.1", "2.0"]), json_values)
                },
            ),
            json_values,
        ),
        "name": json_values,
        "files": st.one_of(st.lists(st.one_of(entries, json_values), max_size=5), json_values),
    },
)


def _checked(files: list[IndexFile]) -> None:
    for file in files:
        assert isinstance(file.url, str)
        assert "#" not in file.url
        file.kind, file.project, file.version  # noqa: B018 - must not raise


def _parse(parser: Any, *args: Any) -> list[str]:
    warnings: list[str] = []
    problem = None
    try:
        _checked(parser(*args, warn=warnings.append))
    except InvalidPage as exc:
        problem = exc.message
    assert problem is None or problem.startswith(URL)
    for warning in warnings:
        assert warning.startswith(URL)
    return warnings


@FUZZ
@given(st.binary(max_size=300))
def test_any_bytes_as_json(body: bytes) -> None:
    _parse(parse_json_page, body, URL)


@FUZZ
@given(st.binary(max_size=300), st.sampled_from([None, "text/html", "text/html; charset=bogus"]))
def test_any_bytes_as_html(body: bytes, content_type: str | None) -> None:
    _parse(parse_html_page, body, URL, content_type)


@FUZZ
@given(st.text(max_size=300), st.sampled_from([None, "application/json", "text/plain", ""]))
def test_any_text_as_either_page(text: str, content_type: str | None) -> None:
    _parse(parse_page, text.encode("utf-8", "surrogatepass"), URL, content_type)


@pytest.mark.slow
@FUZZ
@given(documents)
def test_structured_but_wrong_json_documents(document: dict[str, Any]) -> None:
    _parse(parse_json_page, json.dumps(document).encode(), URL)


@FUZZ
@given(
    st.lists(
        st.tuples(
            links,
            st.dictionaries(
                st.sampled_from(
                    [
                        "data-core-metadata",
                        "data-dist-info-metadata",
                        "data-yanked",
                        "data-requires-python",
                    ]
                ),
                st.text(max_size=30).map(lambda s: s.replace('"', "")),
            ),
        ),
        max_size=5,
    ),
    st.one_of(st.none(), links),
)
def test_structured_but_wrong_html_pages(
    anchors: list[tuple[str, dict[str, str]]], base: str | None
) -> None:
    def attribute(value: str) -> str:
        return value.replace("&", "&amp;").replace('"', "&quot;")

    head = f'<base href="{attribute(base)}">' if base is not None else ""
    body = "".join(
        f'<a href="{attribute(href)}"'
        + "".join(f' {key}="{attribute(value)}"' for key, value in attrs.items())
        + ">x</a>"
        for href, attrs in anchors
    )
    _parse(parse_html_page, f"<html><head>{head}</head><body>{body}</body></html>".encode(), URL)


def test_deep_json_nesting_is_an_invalid_page() -> None:
    """The one shape random documents do not reach: nesting past the recursion limit."""
    warnings = _parse(parse_json_page, b'{"files": ' + b"[" * 200_000, URL)
    assert warnings == []


# -- pages read lazily --------------------------------------------------------------

filenames = st.one_of(
    st.text(max_size=30),
    st.builds(
        "-".join,
        st.lists(
            st.sampled_from(["demo", "Demo_Pkg", "1.0", "2.0rc1", "1!2", "x", ""]), max_size=7
        ),
    ).flatmap(
        lambda stem: st.sampled_from(
            [stem + ".whl", stem + ".tar.gz", stem + ".zip", stem + "-variants.json", stem]
        )
    ),
)


@FUZZ
@given(filenames)
def test_a_lazy_page_groups_a_file_where_its_name_puts_it(filename: str) -> None:
    """The cheap split of a file name gives the version IndexFile reads from it."""
    file = IndexFile(filename, URL + "f")
    page = PageFiles.of([file])
    if file.version is None:
        assert all(file not in page.files_for(v) for v in page.versions())
    else:
        assert page.versions() == [file.version]
        assert page.files_for(file.version) == [file]
        assert page.only(canonicalize_name(str(file.project))).files_for(file.version) == [file]


@FUZZ
@given(st.lists(links, max_size=6), st.one_of(st.none(), links))
def test_a_lazy_html_page_names_each_link_as_the_full_read_does(
    hrefs: list[str], base: str | None
) -> None:
    head = f'<base href="{html.escape(base)}">' if base is not None else ""
    body = "".join(f'<a href="{html.escape(href)}">x</a>' for href in hrefs)
    page = f"<html><head>{head}</head><body>{body}</body></html>".encode()
    try:
        lazy = read_html_page(page, URL)
    except InvalidPage:
        return
    for link in lazy.links():
        try:
            file = lazy._build(link)
        except InvalidPage:  # a bad hash, raised when the link is read in full
            continue
        # The name it was grouped by is the name its full read gives.
        assert file is None or file.filename == link.filename
