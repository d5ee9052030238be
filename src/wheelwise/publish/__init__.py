"""Publishing wheels: a static PEP 503 / PEP 691 index and a live index server.

* ``distfiles``: what the index needs from one file (hashes, core metadata,
  ``Requires-Python``, variant metadata), read from the zip directory and
  ``.dist-info`` only.
* ``catalog``: a directory of files grouped into projects and releases, with one
  merged ``{name}-{version}-variants.json`` per release that has variant wheels.
* ``consistency``: PEP 825 "Metadata consistency" per release, naming the wheels.
* ``pages``: PEP 503 HTML and PEP 691 JSON for ``/simple/`` and each project.
* ``static``, ``swap``: ``wheelwise index build``, an atomic, incremental static site.
* ``negotiation`` / ``http``: content negotiation, ETags and byte ranges.
* ``live`` / ``server`` / ``upload``: ``wheelwise index serve`` (starlette).

Nothing here prints; the server's few diagnostics go through ``logging``.
Imports ``wheels``, ``variants`` and the foundations; never the client side.
"""
