"""Options shared by the commands that look at the machine."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from wheelwise.client.index_strategy import INDEX_STRATEGIES

if TYPE_CHECKING:
    from wheelwise.client.connection import Connection, HostPattern
    from wheelwise.resolve.formats import FormatPolicy
    from wheelwise.resolve.reqfile import RequirementsSet
    from wheelwise.resolve.upload_cutoff import UploadCutoffs

_F = TypeVar("_F", bound=Callable[..., object])
_R = TypeVar("_R")


def _check_trust(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> tuple[str, ...]:
    """Each ``--allow-provider`` value must parse: a malformed one is one error line."""
    if not values:
        return values  # the trust module's imports are not needed then
    from wheelwise.cli.errors import InputError
    from wheelwise.providers.plugin_trust import PluginTrustError, parse_trust

    for value in values:
        try:
            parse_trust(value)
        except PluginTrustError as exc:
            raise InputError(str(exc)) from None
    return values


REFRESH_HELP = "Detect the machine again instead of using the cache."
# At most 20 digits: a byte count no disk reaches, and far below the length at which
# int() refuses a string (4300 digits) with an error of its own.
_SIZE = re.compile(r"([0-9]{1,20})\s*([kmgt]?)i?b?", re.IGNORECASE | re.ASCII)


def parse_size(text: str, source: str = "--max-cache-size") -> int:
    """``500M``, ``20G``, ``1048576``: bytes. *source*: where *text* was given
    (an option, a variable or a configuration key), for the error."""
    from wheelwise.cli.errors import InputError

    match = _SIZE.fullmatch(text.strip())
    if match is None:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise InputError(f"{source} {shown!r}: give a size such as 500M or 20G")
    number, unit = int(match.group(1)), match.group(2).lower()
    return number << {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[unit]


def provider_options(func: _F, *, refresh_help: str = REFRESH_HELP) -> _F:
    """``--allow-provider``, ``--enable-provider`` and ``--refresh`` (*refresh_help*:
    for a command whose ``--refresh`` does more)."""
    func = click.option("--refresh", is_flag=True, help=refresh_help)(func)
    func = click.option(
        "--enable-provider",
        multiple=True,
        metavar="NS",
        help="Turn on a provider the metadata marks optional (repeatable).",
    )(func)
    return click.option(
        "--allow-provider",
        multiple=True,
        metavar="NS=REQUIREMENT",
        callback=_check_trust,
        help="Trust the third-party plugin REQUIREMENT (as the metadata writes it) to "
        "answer namespace NS; NS:OBJECT=REQUIREMENT also trusts a plugin-api OBJECT "
        "other than the default; a trailing ' --hash=sha256:HEX' pins the plugin's file "
        "(repeatable). Metadata that maps NS to another plugin "
        "stops the command. Trusted for good: [providers] allow = [...] in "
        "~/.config/wheelwise/config.toml ($WHEELWISE_CONFIG).",
    )(func)


def selection_options(func: _F) -> _F:
    """``--extra``, ``--all-extras`` and ``--group`` (as ``extras``, ``all_extras``
    and ``groups``): a project's optional dependencies and dependency groups, or
    those a lock file marks as such."""
    func = click.option(
        "--group",
        "groups",
        multiple=True,
        metavar="[PATH:]NAME",
        help="Add the dependency group NAME (PEP 735) of PATH (default: pyproject.toml "
        "here), as pip's --group, or the lock file's group NAME (repeatable).",
    )(func)
    func = click.option(
        "--all-extras",
        is_flag=True,
        help="With -r pyproject.toml or a lock file: add every extra's optional dependencies.",
    )(func)
    return click.option(
        "--extra",
        "extras",
        multiple=True,
        metavar="NAME",
        help="With -r pyproject.toml or a lock file: add the optional dependencies of extra NAME "
        "(repeatable), as uv's --extra.",
    )(func)


def index_options(func: _F) -> _F:
    """``-i``/``--index-url``, ``--extra-index-url``, ``--index-strategy`` and
    ``-f``/``--find-links``: where packages come from (see
    :func:`wheelwise.cli.install_cmd.chosen_indexes` and ``chosen_index_strategy``)."""
    from wheelwise.client.defaults import DEFAULT_INDEX_URL

    func = click.option(
        "-f",
        "--find-links",
        multiple=True,
        metavar="DIR|URL",
        envvar="WHEELWISE_FIND_LINKS",
        help="A folder of wheels or an HTML page of links (repeatable) [env: "
        "WHEELWISE_FIND_LINKS, space-separated].",
    )(func)
    func = click.option(
        "--index-strategy",
        type=click.Choice(INDEX_STRATEGIES),
        default=None,
        envvar="WHEELWISE_INDEX_STRATEGY",
        help="How the indexes combine, as uv's: first-index (a project only from the "
        "first index that lists it), unsafe-first-match (the first index's releases "
        "tried before the next's) or unsafe-best-match (the best release of any index). "
        "With any of them, --extra-index-url comes before --index-url, as in uv. "
        "Default: every index, the best version wins (as pip), its files from the "
        "first source that has one that fits, --index-url first [env: "
        "WHEELWISE_INDEX_STRATEGY; config: [install] index-strategy].",
    )(func)
    func = click.option(
        "--extra-index-url",
        "--index",
        "extra_index_url",
        type=INDEX_LOCATION,
        multiple=True,
        envvar="WHEELWISE_EXTRA_INDEX_URL",
        help="More indexes, after --index-url (repeatable; --index is uv's name, and "
        "takes uv's NAME=URL too) [env: "
        "WHEELWISE_EXTRA_INDEX_URL, space-separated; config: [install] extra-index-url].",
    )(func)
    return click.option(
        "-i",
        "--index-url",
        "--default-index",
        "index_url",
        type=INDEX_LOCATION,
        default=None,
        envvar="WHEELWISE_INDEX_URL",
        help=f"The package index (default {DEFAULT_INDEX_URL}; --default-index is uv's "
        "name, and takes uv's NAME=URL too) [env: WHEELWISE_INDEX_URL; config: [install] "
        "index-url].",
    )(func)


def cutoff_options(func: _F) -> _F:
    """``--exclude-newer`` and ``--exclude-newer-package`` (see :func:`upload_cutoffs`)."""
    func = click.option(
        "--exclude-newer",
        type=UPLOAD_CUTOFF,
        metavar="MOMENT",
        envvar="WHEELWISE_EXCLUDE_NEWER",
        help="Only files uploaded before MOMENT, as uv's --exclude-newer: a date "
        "(2024-05-01, the whole day), a timestamp (2024-05-01T12:00:00Z) or a span "
        "back from now (7 days, P7D); an index's files without an upload time are "
        "left out, find-links files are not [env: WHEELWISE_EXCLUDE_NEWER].",
    )(func)
    return click.option(
        "--exclude-newer-package",
        type=PROJECT_CUTOFF,
        multiple=True,
        metavar="NAME=MOMENT",
        help="Only files of NAME uploaded before MOMENT (as --exclude-newer reads it), "
        "or NAME=false for no moment, in place of --exclude-newer's for NAME, as uv's "
        "--exclude-newer-package (repeatable).",
    )(func)


def source_options(requirement_help: str) -> Callable[[_F], _F]:
    """``-r`` (its help: *requirement_help*), ``-c``, ``-i``, ``--extra-index-url``,
    ``-f``, ``--extra``, ``--all-extras``, ``--group``, ``--exclude-newer`` and
    ``--exclude-newer-package``: what
    to install or lock, and where from. ``-r -`` or ``-c -`` reads standard input
    (:func:`wheelwise.cli.inputs.read_requirement_files`)."""

    def decorate(func: _F) -> _F:
        func = cutoff_options(func)
        func = selection_options(func)
        func = index_options(func)
        func = click.option(
            "-c",
            "--constraint",
            "constraint_files",
            multiple=True,
            type=click.Path(path_type=Path),
            help="Constrain versions with a constraints file (repeatable; -c - reads it "
            "from standard input).",
        )(func)
        return click.option(
            "-r",
            "--requirement",
            "requirement_files",
            multiple=True,
            type=click.Path(path_type=Path),
            help=f"{requirement_help} -r - reads a requirements file from standard input.",
        )(func)

    return decorate


class UploadCutoff(click.ParamType):  # type: ignore[type-arg] # generic in newer click only
    """``--exclude-newer``'s moment, in seconds since the epoch."""

    name = "moment"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        from wheelwise.resolve.upload_cutoff import CutoffError, parse_cutoff

        if isinstance(value, float):
            return value
        try:
            return parse_cutoff(str(value))
        except CutoffError as exc:
            self.fail(str(exc), param, ctx)


UPLOAD_CUTOFF = UploadCutoff()


class ProjectCutoff(click.ParamType):  # type: ignore[type-arg] # generic in newer click only
    """``--exclude-newer-package NAME=MOMENT``: the normalized name, and the moment
    (None for ``NAME=false``)."""

    name = "name=moment"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, float | None]:
        from wheelwise.resolve.upload_cutoff import CutoffError, parse_project_cutoff

        if isinstance(value, tuple):
            return value
        try:
            return parse_project_cutoff(str(value))
        except CutoffError as exc:
            self.fail(str(exc), param, ctx)


PROJECT_CUTOFF = ProjectCutoff()


def _check_torch_backend(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> str | None:
    if not value:
        return None
    from wheelwise.resolve.torch_backend import TorchBackendError, parse_backend

    try:
        return parse_backend(value)
    except TorchBackendError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


def torch_backend_option(func: _F) -> _F:
    """``--torch-backend`` (``torch_backend``), as uv's."""
    return click.option(
        "--torch-backend",
        default=None,
        callback=_check_torch_backend,
        envvar="WHEELWISE_TORCH_BACKEND",
        metavar="BACKEND",
        help="Take torch, torchvision, torchaudio, triton and the rest of the PyTorch "
        "ecosystem from PyTorch's index for BACKEND (cpu, cu130, cu128, ..., rocm7.2, ..., "
        "xpu), as uv's --torch-backend; auto: the best one this machine (or --system's) "
        "runs, from its detected CUDA driver, AMD GPU or Intel GPU, else cpu [env: "
        "WHEELWISE_TORCH_BACKEND].",
    )(func)


def upload_cutoffs(
    exclude_newer: float | None, projects: Sequence[tuple[str, float | None]]
) -> UploadCutoffs | None:
    """What ``--exclude-newer`` and ``--exclude-newer-package`` give together (the
    last value for a name given twice); None when neither is given."""
    if exclude_newer is None and not projects:
        return None
    from packaging.utils import canonicalize_name

    from wheelwise.resolve.upload_cutoff import UploadCutoffs

    return UploadCutoffs(exclude_newer, {canonicalize_name(n): m for n, m in projects})


class Seconds(click.ParamType):  # type: ignore[type-arg] # generic in newer click only
    """A number of seconds of at least 0.1 that a clock can reach: ``nan`` compares
    false with every bound (click's FloatRange lets it through) and would turn the
    limit off, as ``inf`` would."""

    name = "seconds"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            seconds = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or seconds < 0.1:
            self.fail(f"{value!r} is not a number of seconds of at least 0.1", param, ctx)
        return seconds


SECONDS = Seconds()


def request_deadline_option(help_text: str) -> Callable[[_F], _F]:
    """``--request-deadline SECONDS`` (also ``$WHEELWISE_REQUEST_DEADLINE``)."""
    from wheelwise.client.bounded import DEFAULT_DEADLINE

    return click.option(
        "--request-deadline",
        type=SECONDS,
        default=DEFAULT_DEADLINE,
        show_default=True,
        envvar="WHEELWISE_REQUEST_DEADLINE",
        metavar="SECONDS",
        help=help_text,
    )


class IndexLocation(click.ParamType):  # type: ignore[type-arg] # generic in newer click only
    """An index's URL or folder, also given as uv's ``NAME=URL`` (the name dropped)."""

    name = "url"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> str:
        from wheelwise.client.index_name import IndexNameError, index_location

        try:
            return index_location(str(value))
        except IndexNameError as exc:
            self.fail(str(exc), param, ctx)


INDEX_LOCATION = IndexLocation()


class HostEntry(click.ParamType):  # type: ignore[type-arg] # generic in newer click only
    """A ``--trusted-host`` value: ``HOST``, ``HOST:PORT`` or a URL."""

    name = "host"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> HostPattern:
        from wheelwise.client.connection import HostPattern, InsecureHostError, parse_host

        if isinstance(value, HostPattern):
            return value
        try:
            return parse_host(str(value))
        except InsecureHostError as exc:
            self.fail(str(exc).split(": ", 1)[-1], param, ctx)


def _environment_client_cert() -> Path | None:
    """``SSL_CLIENT_CERT``, as uv reads it: a file that does not load (missing, no
    key, not PEM) is left out with a warning, and the command goes on."""
    value = os.environ.get("SSL_CLIENT_CERT", "").strip()
    if not value:
        return None
    from wheelwise.cli.errors import warn
    from wheelwise.client.tls import client_cert_problem

    why = client_cert_problem(value)
    if why is not None:
        warn(
            f"SSL_CLIENT_CERT={value}: left out: it does not load as one PEM file holding "
            f"a certificate and its private key ({why})"
        )
        return None
    return Path(value)


def _check_proxy(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--proxy``'s URL (``http://`` when no scheme is given, as pip reads it): an
    http or https proxy, with a host and a port that is a number; ``""``: no proxy,
    the environment's left out too (as pip reads ``--proxy ""``)."""
    if value is None or value == "":
        return value
    from urllib.parse import urlsplit

    url = value if "://" in value else f"http://{value}"
    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port
    except ValueError as exc:
        raise click.BadParameter(f"{_shown(url)}: {exc}", ctx, param) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise click.BadParameter(
            f"{_shown(url)}: only http:// and https:// proxies are supported", ctx, param
        )
    if not host:
        raise click.BadParameter(f"{_shown(url)}: no host", ctx, param)
    return url


def _shown(url: str) -> str:
    """*url* without its credentials, for an error line."""
    from wheelwise.cli.errors import one_line

    return one_line(url)


def connection_options(func: Callable[..., _R]) -> Callable[..., _R]:
    """``--cert``, ``--client-cert``, ``--native-tls``, ``--trusted-host`` and
    ``--proxy``, which *func* gets as one keyword argument, ``connection`` (a
    :class:`~wheelwise.client.connection.Connection`)."""

    @functools.wraps(func)
    def collected(*args: Any, **kwargs: Any) -> _R:
        from wheelwise.client.connection import Connection

        client_cert = kwargs.pop("client_cert")
        kwargs["connection"] = Connection(
            cert=kwargs.pop("cert"),
            native_tls=kwargs.pop("native_tls"),
            client_cert=client_cert if client_cert is not None else _environment_client_cert(),
            insecure_hosts=tuple(dict.fromkeys(kwargs.pop("trusted_host"))),
            proxy=kwargs.pop("proxy"),
        )
        return func(*args, **kwargs)

    options = [
        click.option(
            "--cert",
            type=click.Path(exists=True, path_type=Path),
            default=None,
            metavar="PATH",
            help="Trust the CA certificates in PATH (a PEM bundle, or a folder OpenSSL "
            "reads) instead of SSL_CERT_FILE, SSL_CERT_DIR or the built-in bundle, as pip's "
            "--cert.",
        ),
        click.option(
            "--client-cert",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            default=None,
            metavar="PATH",
            help="Show the servers this client certificate: one PEM file holding the "
            "certificate and its private key, as pip's --client-cert [env: SSL_CLIENT_CERT, "
            "left out with a warning when it cannot be loaded, as uv does].",
        ),
        click.option(
            "--native-tls",
            is_flag=True,
            envvar="WHEELWISE_NATIVE_TLS",
            help="Trust the operating system's certificates instead of the built-in bundle, "
            "as uv's --native-tls (SSL_CERT_FILE and --cert still come first) "
            "[env: WHEELWISE_NATIVE_TLS].",
        ),
        click.option(
            "--trusted-host",
            "--allow-insecure-host",
            "trusted_host",
            type=HostEntry(),
            multiple=True,
            envvar="WHEELWISE_TRUSTED_HOST",
            metavar="HOST[:PORT]",
            help="Do not check the certificate of this host (on any port, or on PORT), as "
            "pip's --trusted-host and uv's --allow-insecure-host: only for a server you "
            "trust, on a network you trust (repeatable) [env: WHEELWISE_TRUSTED_HOST, "
            "space separated].",
        ),
        click.option(
            "--proxy",
            default=None,
            callback=_check_proxy,
            metavar="URL",
            help="Send every request through this proxy ([scheme://][user:password@]host:port, "
            "http or https) instead of HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY, as "
            "pip's --proxy; --proxy '' sends them directly, whatever those say.",
        ),
    ]
    wrapped: Callable[..., _R] = collected
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


def connection_with(connection: Connection, files: RequirementsSet) -> Connection:
    """*connection* and the ``--trusted-host`` lines of the requirements files."""
    if not files.trusted_hosts:
        return connection
    hosts = dict.fromkeys([*connection.insecure_hosts, *files.trusted_hosts])
    return dataclasses.replace(connection, insecure_hosts=tuple(hosts))


def network_options(func: _F) -> _F:
    """``--timeout``, ``--request-deadline``, ``--retries``, ``--concurrent-downloads``
    and ``--no-cache-dir``, and :func:`connection_options`."""
    func = connection_options(func)  # type: ignore[assignment]
    func = click.option(
        "--concurrent-downloads",
        type=click.IntRange(min=1, max=256),
        default=None,
        envvar="WHEELWISE_CONCURRENT_DOWNLOADS",
        metavar="N",
        help="Wheels downloaded at once (default: one per core, at least 4, at most 16; "
        "a big wheel is unpacked as it downloads) [env: WHEELWISE_CONCURRENT_DOWNLOADS].",
    )(func)
    func = click.option(
        "--no-cache-dir",
        "--no-cache",
        "no_cache",
        is_flag=True,
        help="Neither read nor keep wheels, metadata files and index pages in the cache.",
    )(func)
    func = click.option(
        "--retries",
        type=click.IntRange(min=0),
        default=3,
        show_default=True,
        envvar="WHEELWISE_RETRIES",
        help="Tries after the first on connection errors, timeouts and 5xx answers.",
    )(func)
    func = request_deadline_option(
        "Seconds one request may take in all: an index page, a metadata file, or a "
        "wheel, which also gets 1 s per 16 KiB received [env: WHEELWISE_REQUEST_DEADLINE]."
    )(func)
    return click.option(
        "--timeout",
        type=SECONDS,
        default=15.0,
        show_default=True,
        metavar="SECONDS",
        help="Network timeout: seconds to connect, and between bytes read.",
    )(func)


def format_options(func: _F) -> _F:
    """``--only-binary``, ``--no-binary`` and ``--prefer-binary`` (pip's), as
    ``only_binary``, ``no_binary`` and ``prefer_binary``; :func:`format_policy`
    reads them."""
    func = click.option(
        "--prefer-binary",
        is_flag=True,
        help="Take an older release with a wheel for this machine over a newer one that "
        "would be built from its source distribution, as pip's --prefer-binary.",
    )(func)
    func = click.option(
        "--no-binary",
        multiple=True,
        metavar="NAMES",
        help="Build these projects from their source distributions, never take their "
        "published wheels: names, :all: or :none: (repeatable, comma separated).",
    )(func)
    return click.option(
        "--only-binary",
        multiple=True,
        metavar="NAMES",
        help="Never build these projects from source distributions: names, :all: or "
        ":none: (repeatable, comma separated).",
    )(func)


def format_policy(
    files: RequirementsSet,
    only_binary: Sequence[str],
    no_binary: Sequence[str],
    prefer_binary: bool = False,
) -> FormatPolicy:
    """The policy of the options and of the requirements files' own lines (first)."""
    from wheelwise.resolve.formats import FormatPolicy, format_names

    return FormatPolicy(
        format_names([*files.only_binary, *only_binary], "--only-binary"),
        format_names([*files.no_binary, *no_binary], "--no-binary"),
        prefer_binary=prefer_binary or files.prefer_binary,
    )
