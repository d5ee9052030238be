"""The program that runs inside a plugin's isolated environment.

It is not imported by wheelwise: the plugin host reads this file's source and runs
it as ``VENV/bin/python -I -c SOURCE OBJECT_REFERENCE``. It therefore uses the
standard library only and must run on every Python the host supports.

It imports the PEP 817 API endpoint (``module`` or ``module:attr``), instantiates
it when it is a class, calls ``get_all_configs()`` and ``get_supported_configs()``
and writes one JSON document to its original standard output::

    {"namespace": "...", "all": [CONFIG, ...], "supported": [CONFIG, ...]}

where CONFIG is ``{"name": ..., "values": [...], "multi_value": ...}``, passed on as
the plugin returned them: the host validates. Before any plugin code runs,
file descriptor 1 is pointed at standard error, so whatever the plugin prints
(from Python or from C) cannot corrupt the document. On failure the last line on
standard error says which step failed, and the exit status is 1.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from typing import Any, TextIO

_STAGE_PREFIX = "plugin-host: "


def _describe(config: Any) -> dict[str, Any]:
    values = config.values
    return {
        "name": config.name,
        "values": list(values) if isinstance(values, (list, tuple)) else values,
        "multi_value": getattr(config, "multi_value", False),
    }


def _configs(plugin: Any, method: str) -> list[dict[str, Any]]:
    result = getattr(plugin, method)()
    return [_describe(config) for config in result]


def _load(reference: str) -> Any:
    module_name, _, attrs = reference.partition(":")
    obj: Any = importlib.import_module(module_name)
    for attr in filter(None, attrs.split(".")):
        obj = getattr(obj, attr)
    return obj() if isinstance(obj, type) else obj


def _protocol_channel() -> TextIO:
    """Keep the real stdout for the document; send fd 1 (and sys.stdout) to stderr."""
    sys.stdout.flush()
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")  # not inherited by children
    os.dup2(2, 1)
    return channel


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write(f"{_STAGE_PREFIX}usage: OBJECT_REFERENCE\n")
        return 2
    reference = argv[1]
    channel = _protocol_channel()
    stage = f"importing {reference!r}"
    try:
        plugin = _load(reference)
        namespace = getattr(plugin, "namespace", None)
        stage = "get_all_configs()"
        all_configs = _configs(plugin, "get_all_configs")
        stage = "get_supported_configs()"
        supported = _configs(plugin, "get_supported_configs")
        stage = "writing the result"
        document = json.dumps(
            {"namespace": namespace, "all": all_configs, "supported": supported},
            ensure_ascii=True,
        )
        channel.write(document)
        channel.write("\n")
        channel.flush()
    except BaseException as exc:  # the host turns this into a report
        traceback.print_exc()
        message = str(exc).strip().splitlines()
        detail = f"{type(exc).__name__}: {message[0]}" if message else type(exc).__name__
        sys.stderr.write(f"{_STAGE_PREFIX}{stage} failed: {detail}\n")
        sys.stderr.flush()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
