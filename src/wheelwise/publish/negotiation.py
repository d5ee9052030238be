"""PEP 691 content negotiation: which form of a simple page to answer with.

The server offers PEP 691 JSON, PEP 691 HTML and plain ``text/html`` (PEP 503).
The client's ``Accept`` header decides by q-value (RFC 9110); for a media range
the most specific match counts. Ties go to JSON where the client named it (or
``application/*``), and to ``text/html`` for ``*/*`` (what a browser or ``curl``
wants). No
``Accept`` header means ``text/html``. The ``latest`` aliases of PEP 691 are
understood. Nothing acceptable: None (the server answers 406).
"""

from __future__ import annotations

JSON_V1 = "application/vnd.pypi.simple.v1+json"
HTML_V1 = "application/vnd.pypi.simple.v1+html"
TEXT_HTML = "text/html"
OFFERS = (JSON_V1, HTML_V1, TEXT_HTML)
_ALIASES = {
    "application/vnd.pypi.simple.latest+json": JSON_V1,
    "application/vnd.pypi.simple.latest+html": HTML_V1,
}
# Tie-breaks, indexed by specificity: matched by */*, by type/*, named exactly.
_PREFERENCE = {JSON_V1: (1, 3, 3), HTML_V1: (2, 2, 2), TEXT_HTML: (3, 1, 1)}


def _parse(accept: str) -> list[tuple[str, float]]:
    ranges: list[tuple[str, float]] = []
    for item in accept.split(","):
        media, *params = (part.strip() for part in item.split(";"))
        media = media.lower()
        if not media:
            continue
        media = _ALIASES.get(media, media)
        quality = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = -1.0
                if not 0.0 <= quality <= 1.0:
                    quality = -1.0
        if quality >= 0.0:
            ranges.append((media, quality))
    return ranges


def _specificity(media_range: str, offer: str) -> int | None:
    if media_range == offer:
        return 2
    kind, _, subtype = media_range.partition("/")
    if subtype == "*" and offer.startswith(kind + "/"):
        return 1
    if media_range == "*/*":
        return 0
    return None


def choose(accept: str | None) -> str | None:
    """The offered media type that best matches *accept*, or None."""
    if accept is None or not accept.strip():
        return TEXT_HTML
    ranges = _parse(accept)
    best: tuple[float, int, int] | None = None
    chosen: str | None = None
    for offer in OFFERS:
        matched: tuple[int, float] | None = None
        for media_range, quality in ranges:
            specificity = _specificity(media_range, offer)
            if specificity is not None and (matched is None or specificity > matched[0]):
                matched = (specificity, quality)
        if matched is None or matched[1] <= 0.0:
            continue
        key = (matched[1], matched[0], _PREFERENCE[offer][matched[0]])
        if best is None or key > best:
            best, chosen = key, offer
    return chosen


def from_format(value: str) -> str | None:
    """The ``?format=`` URL parameter of PEP 691: an offered type, or None."""
    media = _ALIASES.get(value.strip().lower(), value.strip().lower())
    return media if media in OFFERS else None
