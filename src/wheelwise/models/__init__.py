"""Plain values shared by the pipeline's stages.

* ``errors``: the errors of resolving, fetching and installing, one hierarchy
  (``InstallError``, ``DownloadError``, ``ResolveError``, ...) raised by every stage.

Imports only ``wheelwise.errors``.
"""
