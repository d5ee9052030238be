"""``file:`` URLs to paths: the result urllib.request's ``url2pathname`` gives."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.request import url2pathname

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wheelwise.client.index_client import local_path

NAMES = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="/\0"), min_size=1, max_size=12
)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths")
@settings(max_examples=200, deadline=None)
@given(st.lists(NAMES, min_size=1, max_size=5))
def test_a_file_url_names_the_path_it_was_made_from(parts: list[str]) -> None:
    path = Path("/", *parts)
    url = path.as_uri()
    assert local_path(url) == path
    assert local_path(url) == Path(url2pathname(url.removeprefix("file://")))


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths")
def test_a_name_that_is_not_utf8_comes_back_as_os_gives_it() -> None:
    path = Path(os.fsdecode(b"/tmp/caf\xe9.whl"))  # a Latin-1 name on a UTF-8 system
    assert local_path(path.as_uri()) == path


def test_quoted_and_hosted_forms() -> None:
    assert local_path("file:///tmp/a%20b/c.whl") == Path("/tmp/a b/c.whl")
    assert local_path("file://localhost/tmp/x.whl") == Path("/tmp/x.whl")
    assert local_path("file:/tmp/x.whl#sha256=00") == Path("/tmp/x.whl")
