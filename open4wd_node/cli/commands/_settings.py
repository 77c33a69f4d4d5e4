"""Command-line flags declared from the configuration keys (``open4wd_node.runtime.config``): one flag per
key, with the key's rule and "not given" as its default, so the file or the built-in default applies."""

from __future__ import annotations

import argparse

from open4wd_node.runtime.config import DEFAULTS, Scope, flag_dest, settings, shown_default


def add_settings(parser: argparse.ArgumentParser, scope: Scope, only: frozenset[str] | None = None) -> None:
    """One flag for every configuration key of ``scope`` (module docstring); with ``only``, just those keys
    (a command that has no use for the others, such as ``watch``, which drives no car)."""
    for key, setting in settings(scope):
        if only is not None and key.name not in only:
            continue
        parser.add_argument(
            setting.flag,
            dest=flag_dest(key.name),
            type=setting.rule,
            action="append" if setting.rule.repeatable else "store",
            default=None,
            metavar=setting.metavar or setting.rule.metavar,
            help=f"{setting.help} [key {key.name}, default {shown_default(getattr(DEFAULTS, key.name))}]",
        )
