"""The cache on disk, shared by every stage that keeps something between runs.

* ``wheel_cache``: wheels and PEP 658 metadata files, kept by the hash their index
  page gives (``CACHE/wheels``, ``CACHE/metadata``).
* ``unpacked``: wheels unpacked once, by the same hash, whose files installs link
  into environments (``CACHE/unpacked``).
* ``http_cache``: index pages and ``*-variants.json`` with their HTTP validators and
  lifetimes (``CACHE/http``).
* ``scratch``: per-process scratch folders (``CACHE/scratch``), and the removal of
  those whose process is gone.

Imports only wheelwise's foundation modules.
"""
