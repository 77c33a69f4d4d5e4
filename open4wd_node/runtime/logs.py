"""structlog set up once per process: readable on a terminal, JSON lines with ``--log-format json``."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(log_format: str, level: int = logging.INFO) -> None:
    """Send structlog's records to stderr: JSON lines for ``json``, else readable (coloured on a terminal)."""
    # a record with ``exc_info`` (an internal error) carries its traceback: as an ``exception`` text
    # field in JSON, printed under the line by the console renderer; plain in both, never with the
    # frames' local variables (rich's default), which may hold keys and secrets
    renderers: list[structlog.typing.Processor] = (
        [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
        if log_format == "json"
        else [structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty(), exception_formatter=structlog.dev.plain_traceback)]
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            *renderers,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # resolve sys.stderr at each call: tests and embedders may swap it after configuration
        logger_factory=lambda *args: structlog.PrintLogger(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
