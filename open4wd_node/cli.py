"""The ``open4wd-node`` console script: global options, then one sub-command per module.

Every error that reaches the user is printed as ``error[<code>]: <sentence>`` (and as a JSON object
with ``--json`` where the command has it); exit status 1 means "rejected", 2 means "bad usage".
"""

from __future__ import annotations

import argparse
import os
import importlib
import pkgutil
import sys
from pathlib import Path

from open4wd_node import commands
from open4wd_node.context import NodeContext, UserError
from open4wd_node.context_errors import first_coded
from open4wd_node.logs import LOG_FORMATS, configure_logging
from open4wd_node.paths import default_data_dir
from protocol.errors import ProtocolError
from sim_core.errors import SimError



def command_modules() -> list[str]:
    """Every module in ``open4wd_node.commands`` is a command; adding one needs no edit here."""
    return sorted(info.name for info in pkgutil.iter_modules(commands.__path__))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="open4wd-node", description="Open4WD peer-to-peer race node")
    parser.add_argument("--log-format", choices=LOG_FORMATS, default="console", help="log rendering")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where this node keeps identity, stores and logs (default: $OPEN4WD_DATA_DIR or the XDG data dir)",
    )
    parser.add_argument("--config", type=Path, default=None, help="node configuration TOML file")
    parser.add_argument(
        "--economy-config-version",
        type=int,
        default=None,
        metavar="N",
        help="governance epoch this node plays under (overrides the configuration)",
    )
    parser.add_argument(
        "--deprecated-material",
        action="append",
        default=[],
        metavar="ID",
        help="add a material id to the client-local deprecated list (repeatable)",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in command_modules():
        importlib.import_module(f"open4wd_node.commands.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.log_format)
    try:
        ctx = NodeContext.open(args.data_dir or default_data_dir(), args.config).with_overrides(
            economy_config_version=args.economy_config_version,
            deprecated_materials=args.deprecated_material,
        )
        return int(args.run(args, ctx) or 0)
    except (ProtocolError, SimError, UserError) as exc:
        print(f"error[{exc.code}]: {exc.message}", file=sys.stderr)
        return 1
    except BaseExceptionGroup as group:  # a coded error raised inside a trio nursery
        coded = first_coded(group, (ProtocolError, SimError, UserError))
        if coded is None:
            raise
        print(f"error[{coded.code}]: {coded.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into a reader that stopped early (| head): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # as the Python docs advise
        return 141


if __name__ == "__main__":
    sys.exit(main())
