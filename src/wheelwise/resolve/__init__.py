"""Deciding what to install: requirements, finding releases, resolving, selecting.

* ``variant_requirement``, ``reqfile``: requirements as typed and requirements files.
* ``finder``: ``IndexFinder``, releases and their files from every source.
* ``lookahead``, ``prefetch``: what the resolver will ask next, fetched ahead (the one
  place for the resolver's speed tricks).
* ``candidates``, ``selection``, ``version_window``, ``resolver``: resolvelib's
  provider, the PEP 825 choice of a release's wheel, the release window of a range.
* ``decide``: the ``Plan`` (resolve and select, no writes).
* ``lock_selection``: the wheels a ``pylock.toml`` selects for a target.

Imports ``fetch``, ``client``, ``cache``, ``environment``, ``lock``, ``providers``,
``wheels``, ``variants`` and the foundations.
"""
