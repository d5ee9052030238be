"""The ``wheelwise`` command line. Only this package prints or exits.

``wheelwise detect --json`` is served without importing click (see fast_detect);
every other invocation goes to the click app.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys

# The cyclic garbage collector's default thresholds, (700, 10, 10), start a young
# collection after every 700 new container objects, and a full one (walking every
# object the process holds) every 100 young ones once the objects that survived them
# outnumber a quarter of the older ones. Reading a
# PyPI-sized project page creates millions of objects (90,000 links of dicts and
# tuples), so those collections took a fifth of a cold install's time
# (docs/benchmarks-method.md, "Figures behind design choices"). Rarer young collections keep
# garbage cycles bounded, as the defaults do, at a fraction of the work.
GC_THRESHOLDS = (100_000, 20, 20)


def main() -> None:
    collect_garbage_less_often()
    try:
        _run()
    except SystemExit as exc:
        _exit_now(exc.code)
    except BrokenPipeError:
        # Whoever read the output stopped (`wheelwise freeze | head`): nothing more
        # can be told there, nor flushed at exit; stop quietly, as pip and uv do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        _exit_now(1)
    _exit_now(0)


def collect_garbage_less_often() -> None:
    """Set this process's collector thresholds to :data:`GC_THRESHOLDS` (a program's
    choice, so made here and never by the library)."""
    gc.set_threshold(*GC_THRESHOLDS)


def hand_over_promptly_while_streaming() -> None:
    """Have the interpreter switch threads every
    :data:`~wheelwise.fetch.handover.HANDOVER_INTERVAL` while wheels unpack as they
    download (the switch interval is the process's, so the program chooses it)."""
    from wheelwise.fetch.handover import HANDOVER_INTERVAL, prompt_handover

    prompt_handover.interval = HANDOVER_INTERVAL


def _run() -> None:
    from wheelwise.cli import fast_detect

    if fast_detect.handles(sys.argv[1:]):
        fast_detect.run(sys.argv[1:])
        return
    hand_over_promptly_while_streaming()
    # On import, httpx loads its own command line (click, rich and pygments) whenever
    # those are installed; this process never runs it, so it is never loaded.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    import click

    from wheelwise.cli.app import cli
    from wheelwise.cli.errors import INPUT_ERROR_EXIT, one_line
    from wheelwise.errors import WheelwiseError

    # click >= 8.2 raises this for a bare `wheelwise`; older versions print the help.
    help_error = getattr(click.exceptions, "NoArgsIsHelpError", ())
    try:
        status = cli.main(standalone_mode=False)
    except help_error as exc:
        exc.show()  # the help text, as click prints it
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        # One line, as every other error: click's usage errors quote what was typed.
        message = exc.format_message()
        if isinstance(exc, click.UsageError) and exc.ctx is not None:
            message = f"{message.rstrip('.')} (see {exc.ctx.command_path} --help)"
        print(f"wheelwise: error: {one_line(message)}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except click.Abort:
        print("Aborted!", file=sys.stderr)
        sys.exit(1)
    except WheelwiseError as exc:  # from a command without its own handler
        print(f"wheelwise: error: {one_line(str(exc))}", file=sys.stderr)
        sys.exit(INPUT_ERROR_EXIT)
    # standalone_mode=False returns the status of `click.exceptions.Exit` (--help,
    # --version, an interrupted install) and the command's own return value (None).
    if isinstance(status, int):
        sys.exit(status)


def _exit_now(code: object) -> None:
    """Exit as ``sys.exit(code)`` would, without the interpreter's teardown (a last
    garbage collection and the unloading of every loaded module), which no command
    needs: every command has closed its files and joined its threads by now. atexit
    handlers still run, and both standard streams are flushed."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (``| head``): as Python does
            status = status or 120
    os._exit(status)


__all__ = ["main"]
