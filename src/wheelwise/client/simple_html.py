"""The HTML side of PEP 503 pages: the anchors, ``<base>`` and API version of a page.

Its own module so that ``html.parser`` is imported only when an HTML page comes.
"""

from __future__ import annotations

from html.parser import HTMLParser

__all__ = ["AnchorCollector"]


class AnchorCollector(HTMLParser):
    """Collects the attributes of every ``<a href>``, the first ``<base href>`` and the
    ``pypi:repository-version`` meta value; counts tags."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags = 0
        self.base: str | None = None
        self.version: str | None = None
        self.anchors: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags += 1
        values = dict(attrs)
        if tag == "a" and values.get("href"):
            self.anchors.append(values)
        elif tag == "base" and self.base is None and values.get("href"):
            self.base = values["href"]
        elif tag == "meta" and values.get("name") == "pypi:repository-version":
            self.version = values.get("content")
