"""Getting wheels: downloads and their checks.

* ``download``: the one ``Fetcher`` (retries from the client's policy, hashes checked
  while streaming, the wheel cache, one memory budget, progress).
* ``verify``: ``verify_wheel``, a wheel's structure, RECORD listing and METADATA
  checked before it may be installed (``VerifiedWheel``).
* ``handover``: the interpreter's switch interval while wheels unpack as they
  download, shortened when the program asks (the command line does).
* ``core_metadata``, ``consistency``: a wheel's METADATA against its PEP 658 file, and
  its ``variant.json`` against the release's variant metadata.

Imports ``client``, ``cache``, ``wheels``, ``variants`` and the foundations.
"""
