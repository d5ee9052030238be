"""``wheelwise index``: publish a directory of wheels (static site or live server)."""

from __future__ import annotations

from pathlib import Path

import click

from wheelwise.cli.errors import InputError, input_errors, one_line


@click.group()
def index() -> None:
    """Publish wheels as a simple repository (PEP 503 / 691 / 658 / 825 / 850)."""


@index.command("build")
@click.argument("wheel_dir", type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--output",
    "site",
    required=True,
    type=click.Path(path_type=Path),
    help="Directory to write the site to (replaced atomically; re-runs are incremental).",
)
@click.option(
    "--base-url",
    default=None,
    help="URL the site will be served at (http:// or https://, or a relative path); "
    "links start with it then (default: relative).",
)
@input_errors
def build(wheel_dir: Path, site: Path, base_url: str | None) -> None:
    """Build a static index of the wheels and sdists in WHEEL_DIR."""
    from wheelwise.publish.errors import IndexBuildError
    from wheelwise.publish.static import build_site, check_base_url

    try:
        if base_url is not None:
            check_base_url(base_url, what="--base-url")
        report = build_site(wheel_dir, site, base_url=base_url)
    except IndexBuildError as exc:
        raise InputError(str(exc)) from None
    for reason in report.skipped:
        click.echo(f"wheelwise: skipped {one_line(reason)}", err=True)
    click.echo(
        f"{report.site}: {report.projects} project(s), {report.files} file(s) "
        f"({report.read} read, {report.unchanged} unchanged), "
        f"{report.variants_files} variants.json file(s)"
    )


@index.command("serve")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--upload-token",
    envvar="WHEELWISE_UPLOAD_TOKEN",
    default=None,
    help="Accept uploads (twine: user __token__, this as password). "
    "Also read from $WHEELWISE_UPLOAD_TOKEN.",
)
def serve(directory: Path, host: str, port: int, upload_token: str | None) -> None:
    """Serve DIRECTORY's wheels as a live index (rescanned when it changes)."""
    try:
        from wheelwise.publish.server import serve as run_server
    except ImportError as exc:
        raise InputError(
            f"the server needs the 'serve' extra ({exc.name} is missing): "
            "pip install 'wheelwise[serve]'"
        ) from None
    if not directory.is_dir():
        raise InputError(f"{directory}: no such directory (the wheels to serve)")
    if upload_token is not None and not upload_token:
        raise InputError("--upload-token must not be empty")
    run_server(directory.resolve(), host=host, port=port, upload_token=upload_token)
