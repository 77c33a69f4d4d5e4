"""The ``open4wd-node`` console script: global options, then one sub-command per module.

Every error that reaches the user is printed as ``error[<code>]: <sentence>`` on stderr and, when the
command was given ``--json``, also as ``{"event": "error", "code": …, "message": …}`` on stdout. Exit
status: 1 the input was refused, 2 the command line itself was wrong, 130 / 143 stopped by SIGINT /
SIGTERM (one line, no traceback).

Start-up cost matters (``open4wd-node version`` should cost about as much as ``import trio``): the
command modules only declare their options; each imports what it runs when it runs.
"""

from __future__ import annotations

import argparse
import os
import pkgutil
import re
import sys
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Protocol

from open4wd_node.cli import commands
from open4wd_node.cli.commands._settings import add_settings
from open4wd_node.runtime.config import Scope, given_settings
from open4wd_node.runtime.context import NodeContext
from open4wd_node.runtime.errors import UsageError, first_coded
from open4wd_node.runtime.paths import default_data_dir
from open4wd_node.runtime.signals import Interrupted, received_signal, stop_signals_raise
from open4wd_base.errors import CodedError
from sim_core.derived_cache import backed_by

if TYPE_CHECKING:
    from open4wd_node.assets.cache_dir import CacheDir



class CommandLineParser(argparse.ArgumentParser):
    """argparse that raises a coded ``UsageError`` instead of printing and exiting by itself."""

    def error(self, message: str) -> NoReturn:
        """Raise ``UsageError`` (exit 2) with argparse's sentence and a pointer to ``--help``."""
        message = re.sub(r"^argument ([^:]+): takes ", r"\1 takes ", message)  # a value rule (values.py)
        raise UsageError(f"{message} (see: {self.prog} --help)")


def command_modules() -> list[str]:
    """Every public module in ``open4wd_node.cli.commands`` is a command; adding one needs no edit here
    (``_``-prefixed modules hold options that several commands share)."""
    return sorted(info.name for info in pkgutil.iter_modules(commands.__path__) if not info.name.startswith("_"))


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: the global options, then every command module's sub-command."""
    parser = CommandLineParser(prog="open4wd-node", description="Open4WD peer-to-peer race node")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where this node keeps identity, stores and logs (default: $OPEN4WD_DATA_DIR or the XDG data dir)",
    )
    parser.add_argument("--config", type=Path, default=None,
                        help="node configuration TOML file (default: <data-dir>/node.toml if it exists); "
                             "every key has the flag of the same name, and a flag wins over the file")
    add_settings(parser, Scope.GLOBAL)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in command_modules():
        import_module(f"open4wd_node.cli.commands.{name}").register(subparsers)
    return parser


class _Reported(Protocol):
    """What the CLI reports to the user: a ``CodedError``, or the ``Interrupted`` of a stop signal."""

    @property
    def code(self) -> str: ...

    @property
    def message(self) -> str: ...


def _report(error: _Reported, as_json: bool) -> None:
    """The human line on stderr; with ``--json`` also one JSON object on stdout."""
    print(f"error[{error.code}]: {error.message}", file=sys.stderr)
    if as_json:
        from open4wd_node.events.sink import event_json  # the event vocabulary only when it is needed
        from protocol.room.events import ErrorReported

        print(event_json(ErrorReported(error.code, error.message)), flush=True)


def node_context(args: argparse.Namespace) -> NodeContext:
    """The data directory and the effective configuration: flags > configuration file > defaults."""
    return NodeContext.open(args.data_dir or default_data_dir(), args.config).with_overrides(**given_settings(args))


def _run(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    ctx = node_context(args)
    if getattr(args, "logs", False):  # set by the commands that log (the networked ones)
        from open4wd_node.runtime.logs import configure_logging

        configure_logging(ctx.config.log_format)
    with backed_by(lambda: _cache_dir(ctx.data_dir)):  # admitted assets and routes outlive the process
        return int(args.run(args, ctx) or 0)


def _cache_dir(data_dir: Path) -> CacheDir:
    """The data dir's cache folder, imported only when a command first derives something."""
    from open4wd_node.assets.cache_dir import CacheDir

    return CacheDir.in_data_dir(data_dir)


def _attempt(argv: list[str], as_json: bool) -> int:
    """Run the command; report a coded error. A stop signal is left to ``main`` (``received_signal``)."""
    try:
        return _run(argv)
    except CodedError as exc:
        _report(exc, as_json)
        return exc.exit_status
    except BaseExceptionGroup as group:  # raised inside a trio nursery
        if first_coded(group, (Interrupted, KeyboardInterrupt)) is not None:
            return 1  # replaced by the signal's status in main
        coded, rest = group.split(CodedError)
        reported = _leaves(coded) if coded is not None else []
        for error in reported:
            _report(error, as_json)
        if rest is not None:  # anything else is a bug: its traceback is shown, after the coded errors
            raise rest from None
        return reported[0].exit_status
    except BrokenPipeError:  # output piped into a reader that stopped early (| head): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # as the Python docs advise
        return 141


def _leaves(group: BaseExceptionGroup[CodedError]) -> list[CodedError]:
    """Every coded error of a group (nurseries nest groups), in order."""
    return [leaf for item in group.exceptions
            for leaf in (_leaves(item) if isinstance(item, BaseExceptionGroup) else [item])]


def main(argv: list[str] | None = None) -> int:
    """Run one command (``argv``, default ``sys.argv[1:]``) and return its exit status: the command's,
    1 for a coded error, 2 for a usage error, 128 + signal for SIGINT / SIGTERM (module docstring)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in argv
    status = 1
    try:
        with stop_signals_raise():
            status = _attempt(argv, as_json)
    except (KeyboardInterrupt, Interrupted):  # wherever the signal landed, even while reporting
        pass
    signum = received_signal()
    if signum is not None:
        stop = Interrupted(signum)
        _report(stop, as_json)
        return stop.exit_status
    return status


def run() -> NoReturn:
    """The console script (and ``python -m open4wd_node.cli.main``): ``main`` on the process's own
    arguments, then exit with its status.

    After a stop signal the process leaves through ``os._exit`` once its output is flushed (every
    ``finally`` has run by then: race logs are closed, children reaped). CPython remembers a
    KeyboardInterrupt that once passed through Python source run from C (an extension doing so during
    an import the signal interrupted) and, at a normal exit, would kill the process with SIGINT instead
    of returning the 130 the CLI promises."""
    status = main()
    if received_signal() is not None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed or broken pipe: there is nothing more to say
                pass
        os._exit(status)
    sys.exit(status)


if __name__ == "__main__":
    run()
