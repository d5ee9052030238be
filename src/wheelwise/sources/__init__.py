"""The build stage: wheels made from what is not a wheel yet.

Direct references (project folders, archives, URLs, git) become wheels before
resolving (:mod:`wheelwise.sources.direct`); sdists the resolver picks are built
when their metadata is first needed (:mod:`wheelwise.sources.builder`), with their
build requirements installed by the installer that asked.
"""
