"""Types in the command modules' signatures, for the type checker only (the commands import this module
under ``TYPE_CHECKING``: declaring the options must stay light, see ``open4wd_node.cli.main``)."""

from __future__ import annotations

import argparse
from typing import TypeAlias

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What ``register(subparsers)`` adds its command's parser to."""
