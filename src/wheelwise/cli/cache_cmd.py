"""``wheelwise cache``: where the cache is, what it holds, checking and cleaning it."""

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


@cache.command("verify")
@click.option("--remove", is_flag=True, help="Remove each damaged or changed entry.")
def cache_verify(remove: bool) -> None:
    """Check every unpacked wheel against what it held when it was unpacked (every
    file read and hashed); exit status 1 if one differs (and was not removed).

    An install checks each entry's file sizes and times before linking it, and
    unpacks the wheel again when they differ; only this finds a change that kept
    both."""
    from wheelwise.cache.stores import ContentCache
    from wheelwise.cache.unpacked import verify_entries

    store = ContentCache.at(_root()).unpacked
    found = [(folder, store.read_entry(folder)) for folder in store.entries()]
    readable = [entry for _, entry in found if entry is not None]
    verified = iter(verify_entries(readable))
    checked = len(found)
    files = sum(len(entry.files) for entry in readable)
    damaged = 0
    for folder, entry in found:
        if entry is None:
            problems = ["no readable entry.json"]
            name = folder.name
        else:
            problems = next(verified)
            name = entry.filename
        if not problems:
            continue
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        action = "removed" if remove else "damaged"
        click.echo(f"{action}: {name} in {folder}: {'; '.join(problems[:3])}{more}")
        if remove:
            store.remove(folder)
        else:
            damaged += 1
    click.echo(f"checked {checked} unpacked wheel{'s' if checked != 1 else ''} ({files} files)")
    if damaged:
        click.echo(
            f"{damaged} differ{'s' if damaged == 1 else ''} from what was unpacked: "
            "run `wheelwise cache verify --remove` (environments that link them keep "
            "the changed files)",
            err=True,
        )
        raise SystemExit(1)


@cache.command("clean")
@click.argument("names", nargs=-1, metavar="[NAME]...")
def cache_clean(names: tuple[str, ...]) -> None:
    """Remove what the cache holds; with NAMEs, only those projects' wheels,
    unpacked wheels and metadata files. The journals of read-only and --target environments
    and the scratch folders of runs still going are kept."""
    from wheelwise.cache.cleanup import clean

    root = _root()
    removed = clean(root, names)
    if names and not removed.files:  # as uv says it: a misspelt name is seen
        click.echo(f"no cache entries found for {', '.join(names)} in {root}")
        return
    click.echo(f"removed {removed.files} files ({_size(removed.bytes)}) from {root}")


@cache.command("prune")
def cache_prune() -> None:
    """Remove what no install needs: scratch folders of runs that ended, damaged
    unpacked wheels, wheel files that are also kept unpacked, and temporary files
    killed runs left."""
    from wheelwise.cache.cleanup import prune

    root = _root()
    removed = prune(root)
    click.echo(f"removed {removed.files} files ({_size(removed.bytes)}) from {root}")
