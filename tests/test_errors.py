"""One root error class: every error the library raises on purpose is a
WheelwiseError, and the command line turns any of them into one line."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import wheelwise
from wheelwise.errors import WheelwiseError

# Exceptions that are not errors: signals inside the library, or an answer.
NOT_ERRORS = {
    # A body over its cap: the client and the downloader catch it and raise their own
    # SourceError / DownloadError naming the URL.
    "wheelwise.client.bounded.BodyLimit",
    # Another wheel of the transaction failed: the transaction catches it and raises
    # that wheel's InstallError.
    "wheelwise.install.unpack.Cancelled",
    # One try of a request failed: the retry loop tries again, or raises the error the
    # failure names (a SourceError or DownloadError).
    "wheelwise.policy.retry.RetryableFailure",
    # A wheel that cannot be unpacked as it downloads: the fetcher downloads it whole.
    "wheelwise.cache.stream_entry.NotStreamable",
    # The machine lacks what a provider detects: the provider's report says so.
    "wheelwise.providers.base.ProviderUnavailable",
    "wheelwise.providers.nvidia.NoNvidiaGpu",
}
CLI_PREFIXES = ("wheelwise.cli", "wheelwise.__main__")


def public_exceptions() -> list[type[Exception]]:
    """Each exception class defined (not imported) in a library module, its name public
    (an interrupt, a BaseException, is no error)."""
    found = []
    for module_info in pkgutil.walk_packages(wheelwise.__path__, "wheelwise."):
        if module_info.name.startswith(CLI_PREFIXES):
            continue
        module = importlib.import_module(module_info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, Exception)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found.append(value)
    return found


def test_the_walk_finds_every_layer() -> None:
    names = {cls.__name__ for cls in public_exceptions()}
    assert {"WheelError", "InstallError", "ResolveError", "LockError", "ProxyError"} <= names


def test_every_public_exception_is_a_wheelwise_error() -> None:
    strays = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in public_exceptions()
        if not issubclass(cls, WheelwiseError)
        and f"{cls.__module__}.{cls.__qualname__}" not in NOT_ERRORS
    ]
    assert strays == []


def test_layers_keep_their_other_bases() -> None:
    from wheelwise.lock.errors import LockError
    from wheelwise.publish.errors import IndexBuildError
    from wheelwise.userfiles import NotARegularFile
    from wheelwise.variants.errors import VariantError
    from wheelwise.wheels.errors import WheelError

    for cls in (IndexBuildError, LockError, VariantError, WheelError):
        assert issubclass(cls, ValueError)
    assert issubclass(NotARegularFile, OSError)


# One root per layer, built as the child process builds it: (module, class, arguments).
LAYER_ERRORS = [
    ("wheelwise.wheels.errors", "WheelError", ("broken wheel",)),
    ("wheelwise.variants.errors", "VariantError", ("broken label",)),
    ("wheelwise.publish.errors", "IndexBuildError", ("broken folder",)),
    ("wheelwise.publish.errors", "UploadRejected", (400, "broken upload")),
    ("wheelwise.client.errors", "SourceError", ("http://127.0.0.1:1/", "broken source")),
    ("wheelwise.models.errors", "InstallError", ("broken install",)),
    ("wheelwise.models.errors", "ResolveError", ("broken resolution",)),
    ("wheelwise.lock.errors", "LockError", ("broken lock",)),
    ("wheelwise.proxy.errors", "ProxyError", ("broken proxy",)),
    ("wheelwise.providers.plugin_runner", "PluginFailure", ("broken plugin",)),
    ("wheelwise.untrusted_json", "UntrustedDocumentError", ("broken document",)),
    ("wheelwise.doctor.elf", "ElfError", ("broken library",)),
]
# A command with its own handler, and one that has none (the top level's).
COMMANDS = [
    ("wheelwise.wheels.variant_info", "read_wheel_variant", ["variant", "show", "x.whl"]),
    ("wheelwise.publish.server", "serve", ["index", "serve", "."]),
]
CHILD = """
import importlib, sys
import wheelwise.cli
error = getattr(importlib.import_module({module!r}), {name!r})(*{args!r})
def fail(*args, **kwargs):
    raise error
setattr(importlib.import_module({where!r}), {function!r}, fail)
sys.argv = ["wheelwise", *{argv!r}]
wheelwise.cli.main()
"""


@pytest.mark.parametrize(("module", "name", "args"), LAYER_ERRORS, ids=[e[1] for e in LAYER_ERRORS])
@pytest.mark.parametrize(("where", "function", "argv"), COMMANDS, ids=["handled", "top-level"])
def test_the_cli_reports_a_wheelwise_error_from_any_layer_in_one_line(
    tmp_path: Path,
    module: str,
    name: str,
    args: tuple[object, ...],
    where: str,
    function: str,
    argv: list[str],
) -> None:
    code = CHILD.format(
        module=module, name=name, args=args, where=where, function=function, argv=argv
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [f"wheelwise: error: {args[-1]}"]
    assert result.stdout == ""
