"""An internal error's log record carries its traceback in both formats, never the frames' locals."""

import json

import pytest
import structlog

from open4wd_node.runtime.logs import configure_logging


@pytest.fixture
def restore_structlog():
    yield
    structlog.reset_defaults()


def _log_an_error() -> None:
    secret_seed = "do-not-print-me"  # noqa: F841 - a local a rich traceback would show
    try:
        {}["missing"]
    except KeyError as exc:
        structlog.get_logger("test").error("internal-error", peer="zPeer", exc_info=exc)


@pytest.mark.parametrize("log_format", ["json", "console"])
def test_tracebacks_are_logged_without_locals(log_format, capsys, restore_structlog):
    configure_logging(log_format)
    _log_an_error()
    err = capsys.readouterr().err
    if log_format == "json":
        record = json.loads(err.splitlines()[0])
        assert record["level"] == "error" and record["event"] == "internal-error"
        err = record["exception"]
    assert "Traceback (most recent call last)" in err and "KeyError: 'missing'" in err and "_log_an_error" in err
    assert "do-not-print-me" not in err
