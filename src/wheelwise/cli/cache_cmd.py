"""``wheelwise cache``: where the cache is, and what it holds."""

from __future__ import annotations

import json
from pathlib import Path

import click


def _root() -> Path:
    from wheelwise.cachedir import user_cache_dir

    return Path(user_cache_dir())


def _size(count: int) -> str:
    """*count* bytes as pip and uv print sizes (``1.2 GiB``)."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


@click.group()
def cache() -> None:
    """Show the cache (WHEELWISE_CACHE_DIR, else the per-user cache folder)."""


@cache.command("dir")
def cache_dir() -> None:
    """Print the cache folder."""
    click.echo(str(_root()))


@cache.command("info")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON document.")
def cache_info(as_json: bool) -> None:
    """What the cache holds: files and size of each kind."""
    from wheelwise.cache.usage import cache_usage

    root = _root()
    usage = cache_usage(root)
    if as_json:
        document = {
            "cache-dir": str(root),
            "kinds": [
                {
                    "name": item.kind.name,
                    "path": str(root / item.kind.path),
                    "what": item.kind.what,
                    "files": item.files,
                    "bytes": item.bytes,
                    "unreadable": item.unreadable,
                }
                for item in usage
            ],
            "bytes": sum(item.bytes for item in usage),
        }
        click.echo(json.dumps(document, indent=2))
        return
    click.echo(f"cache: {root}" + ("" if root.is_dir() else " (not created yet)"))
    for item in usage:
        note = f", {item.unreadable} unreadable" if item.unreadable else ""
        files = f"{item.files} file{'s' if item.files != 1 else ''}"
        click.echo(
            f"  {item.kind.name:<13} {_size(item.bytes):>10}  {files:<12} {item.kind.what}{note}"
        )
    total = sum(item.bytes for item in usage)
    click.echo(f"  {'total':<13} {_size(total):>10}")
