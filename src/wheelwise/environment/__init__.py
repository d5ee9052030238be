"""The target environment: the interpreter wheelwise installs for, and what is
installed in it.

* ``interpreter``: ``TargetEnvironment`` (paths, marker values, tags and PEP 668 state,
  queried from the interpreter once), ``find_python``, ``compute_tags``.
* ``targets``: synthetic targets for ``wheelwise lock`` (a Python version on a named
  platform).
* ``installed``: the one reader of installed distributions (``.dist-info`` folders),
  used by install, list, uninstall, sync and doctor.
* ``shared_files``: a file two distributions both install, shared where its bytes
  are the same.

Imports ``wheels``, ``models`` and the foundations.
"""
