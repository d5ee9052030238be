"""Reading an index's project list (``/simple/``) as the proxy does."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wheelwise.client.errors import InvalidPage
from wheelwise.client.project_list import read_project_names

URL = "http://index.example/simple/"
JSON = "application/vnd.pypi.simple.v1+json"


def test_json_names_are_normalized_sorted_and_unique() -> None:
    body = json.dumps(
        {
            "meta": {"api-version": "1.1"},
            "projects": [{"name": "Zeta_Pkg"}, {"name": "alpha"}, {"name": "zeta-pkg"}],
        }
    ).encode()
    assert read_project_names(body, URL, JSON) == ["alpha", "zeta-pkg"]


def test_html_names_come_from_the_links() -> None:
    body = (
        b'<!DOCTYPE html><html><body><a href="/simple/Foo.Bar/">Foo.Bar</a>'
        b'<a href="baz/">baz</a><a href="https://elsewhere.example/simple/qux">qux</a>'
        b"</body></html>"
    )
    assert read_project_names(body, URL, "text/html; charset=utf-8") == ["baz", "foo-bar", "qux"]


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (b"{}", JSON, "no 'meta' object"),
        (b'{"meta": {"api-version": "1.0"}}', JSON, "no 'projects' list"),
        (b'{"meta": {"api-version": "1.0"}, "projects": [1]}', JSON, "projects[0]"),
        (b'{"meta": {"api-version": "2.0"}, "projects": []}', JSON, "version 2.0"),
        (b"\xff", JSON, "not a valid PEP 691 project list"),
        (b"{}", "application/pdf", "not a simple index root page"),
    ],
)
def test_a_broken_project_list_is_one_clear_error(
    body: bytes, content_type: str, message: str
) -> None:
    with pytest.raises(InvalidPage) as caught:
        read_project_names(body, URL, content_type)
    assert message in str(caught.value)
    assert URL in str(caught.value)
    assert "\n" not in str(caught.value)


@settings(max_examples=300, deadline=None)
@given(body=st.binary(max_size=512), as_json=st.booleans())
def test_any_bytes_give_names_or_invalid_page(body: bytes, as_json: bool) -> None:
    content_type = JSON if as_json else "text/html"
    try:
        names = read_project_names(body, URL, content_type)
    except InvalidPage:
        return
    assert names == sorted(set(names))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(["name", "meta", "x"]), children, max_size=3)
    ),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(projects=JSON_VALUES, version=st.sampled_from(["1.0", "1.1", "2", "x", None]))
def test_any_json_document_gives_names_or_invalid_page(projects: object, version: object) -> None:
    body = json.dumps({"meta": {"api-version": version}, "projects": projects}).encode()
    try:
        names = read_project_names(body, URL, JSON)
    except InvalidPage as exc:
        message = str(exc)
    else:
        message = ""
        assert isinstance(projects, list)
        assert len(names) <= len(projects)
    assert "\n" not in message
