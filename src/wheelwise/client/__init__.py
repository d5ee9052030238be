"""Reading package sources: the Simple API client (PEP 503 HTML, PEP 691 JSON) for
``http(s)://`` and ``file://`` indexes and find-links locations.

* ``index_client``: ``IndexClient``, one project listing per source, files and pages
  fetched with retries, timeouts and the HTTP cache.
* ``simple_parse``, ``simple_html``, ``page_files``, ``project_list``: the page readers.
* ``grouped_cache``: a big JSON page kept grouped by version beside the HTTP cache.
* ``bounded``, ``deadline_transport``, ``lazy_http``, ``tls``: bodies read within their
  caps and deadlines, the httpx transport, the client made on first use, the TLS context.
* ``defaults``: the default index URL.

Nothing here prints. Imports ``cache``, ``wheels``, ``variants`` and the foundations.
"""
