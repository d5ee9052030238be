"""``wheelwise detect --json | --format json|uv [--refresh]`` without click or rich.

These documents are what other tools call wheelwise for, often once per build
step, so their path imports only what detection needs: on a warm cache, for
``--json``, nothing but the fingerprint and the cache file.
"""

from __future__ import annotations

import sys

from wheelwise import __version__
from wheelwise.providers import cache
from wheelwise.providers.fingerprint import machine_fingerprint

TYPE_CHECKING = False

if TYPE_CHECKING:
    from wheelwise.providers.detect import Detection

# Values of `detect --format`; "table" needs rich, so click's command serves it.
FORMATS = ("table", "json", "uv")
FAST_FORMATS = ("json", "uv")


def handles(argv: list[str]) -> bool:
    """Whether *argv* (without the program name) is a plain ``detect`` that prints
    the JSON document or uv's TOML."""
    return bool(argv) and argv[0] == "detect" and _requested_format(argv[1:]) is not None


def _requested_format(args: list[str]) -> str | None:
    """The format *args* ask for, if they are exactly one format option and at most
    ``--refresh``; None for anything else (click then parses, and reports errors)."""
    formats: list[str] = []
    refresh = 0
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--json":
            formats.append("json")
        elif arg == "--refresh":
            refresh += 1
        elif arg == "--format" and rest:
            formats.append(rest.pop(0))
        elif arg.startswith("--format="):
            formats.append(arg.partition("=")[2])
        else:
            return None
    if len(formats) != 1 or refresh > 1 or formats[0] not in FAST_FORMATS:
        return None
    return formats[0]


def run(argv: list[str]) -> None:
    output_format = _requested_format(argv[1:])
    refresh = "--refresh" in argv
    if output_format == "uv":
        sys.stdout.write(detection_as_uv_target(_detection(refresh)))
        return
    if not refresh:
        text = cache.load(machine_fingerprint(__version__))
        if text is not None:
            sys.stdout.write(text)
            return
    from wheelwise.providers.detect import detect_cached

    _, text = detect_cached(refresh=True)
    sys.stdout.write(text)


def _detection(refresh: bool) -> Detection:
    from wheelwise.providers.detect import detect_cached

    detection, _ = detect_cached(refresh=refresh)
    return detection


def detection_as_uv_target(detection: Detection) -> str:
    """uv's variant target TOML for a detection: its system, commented with where
    each namespace's answer came from."""
    from wheelwise.providers.uv_target import UvTarget, render_uv_target

    target = UvTarget.from_system(detection.system, created_by=f"wheelwise {__version__}")
    return render_uv_target(target, reports=detection.reports)
