"""The `poolplan` command line: one root group, one module per subcommand.

This is the only place where exceptions become exit codes:
0 = done or clean, 1 = findings or infeasible, 2 = bad input or usage, 3 = a failure that is not the input's
(a solver result that breaks its post-conditions, a Spark job that ran out of memory or lost its JVM).
"""

from __future__ import annotations

import errno
import logging
import sys
from collections.abc import Sequence

import click
from rich.console import Console
from rich.markup import escape

from planner.cli.stage import outcome_label
from pools.errors import InfeasibleError, InputError, JobError, SolverError

__all__ = ["cli", "main", "report_outcome", "EXIT_OK", "EXIT_FINDINGS", "EXIT_INPUT", "EXIT_FAILED"]

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT, EXIT_FAILED = 0, 1, 2, 3

_err = Console(stderr=True, highlight=False, soft_wrap=True)


@click.group(name="poolplan", context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="poolplan")
@click.option("-v", "--verbose", is_flag=True,
              help="Show every step, poolplan's debug log and the log of Spark, the JVM and the solver "
                   "(--log-level DEBUG).")
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    default="INFO",
    show_default=True,
    help="What the console shows: WARNING and ERROR each command's summary and warnings; INFO also the progress "
         "of long work with the time left; DEBUG also every step and the log of Spark, the JVM and the solver.",
)
def cli(verbose: bool, log_level: str) -> None:
    """Capacity planner for Apache Kafka resource pools: ingest, place, isolate, emit, audit."""
    from planner.cli.console import configure_logging

    configure_logging(logging.DEBUG if verbose else getattr(logging, log_level.upper()))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code (the console script exits with it)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = cli.main(args=args, prog_name="poolplan", standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:  # a bare `poolplan` or group: its help, as click shows it
        exc.show()
        return EXIT_INPUT
    except click.exceptions.UsageError as exc:
        return _usage_error(exc)
    except click.exceptions.Abort:
        _err.print("aborted")
        return EXIT_INPUT
    except click.exceptions.ClickException as exc:
        exc.show()
        return EXIT_INPUT
    except (InputError, InfeasibleError, SolverError, JobError) as exc:
        return report_outcome(exc)
    except OSError as exc:
        return _os_error(exc)
    return result if isinstance(result, int) else EXIT_OK


#: The OS errors that say a path the user gave cannot be used as given (exit 2); any other (a full disk, an I/O
#: error) is the machine's (exit 3).
_PATH_ERRNOS = frozenset({errno.ENOENT, errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG, errno.ELOOP,
                          errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTEMPTY, errno.EXDEV})


def _os_error(exc: OSError) -> int:
    """One line for an OS error no command turned into its own message: the path and what the OS said.

    >>> _os_error(FileNotFoundError(errno.ENOENT, "No such file or directory", "/no/such"))
    2
    >>> _os_error(OSError(errno.ENOSPC, "No space left on device", "/full/disk"))
    3
    """
    what = exc.strerror or str(exc)
    where = f"{exc.filename}: " if exc.filename else ""
    if exc.errno in _PATH_ERRNOS:
        _err.print(f"[bold red]error:[/] {escape(where)}{escape(what[:1].lower() + what[1:])}", markup=True)
        return EXIT_INPUT
    _err.print(f"[bold red]failed:[/] {escape(where)}{escape(what[:1].lower() + what[1:])}", markup=True)
    return EXIT_FAILED


def _usage_error(exc: click.exceptions.UsageError) -> int:
    """The one line for a usage error of any command (click's own is three: Usage, Try, Error), exit 2.

    >>> import click
    >>> _usage_error(click.exceptions.UsageError("No such command 'x'."))
    2
    """
    where = exc.ctx.command_path if exc.ctx is not None else "poolplan"
    _err.print(f"[bold red]error:[/] {escape(where)}: {escape(exc.format_message())} (see '{escape(where)} --help')",
               markup=True)
    return EXIT_INPUT


def report_outcome(exc: InputError | InfeasibleError | SolverError | JobError) -> int:
    """Print the one line for a poolplan error and return its exit code: the one mapping, used by `main` and by
    `poolplan run` for a stage whose result is an `InfeasibleError` (the run goes on)."""
    if isinstance(exc, InfeasibleError):
        _err.print(f"[bold yellow]{outcome_label(exc)}:[/] {escape(str(exc))}", markup=True)
        return EXIT_FINDINGS
    if isinstance(exc, SolverError):
        _err.print(f"[bold red]solver failed:[/] {escape(str(exc))}", markup=True)
        return EXIT_FAILED
    if isinstance(exc, JobError):
        _err.print(f"[bold red]job failed:[/] {escape(str(exc))}", markup=True)
        return EXIT_FAILED
    _err.print(f"[bold red]error:[/] {escape(str(exc))}", markup=True)
    return EXIT_INPUT


def _register() -> None:
    """Attach every subcommand listed in `planner.cli.commands`."""
    from planner.cli.commands import COMMANDS

    for command in COMMANDS:
        cli.add_command(command)


def _console_script() -> None:  # pragma: no cover - exercised through the installed script
    sys.exit(main())


_register()
