"""Runs a check in a child Python that imports the installed package rather than the checkout's sources.

The suite imports the sources of the checkout it runs in, but an install from a wheel (``pip install .``:
the README's commands and CI) carries modules compiled by mypyc (setup.py). The compiled-build tests run
their figures in a child (``-P``, from an empty directory, the checkout only appended to its path for the
``tests`` helpers) and compare them with the same runs here; where the install is not compiled (an
editable or pure-Python install) they are skipped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

CHECKOUT = Path(__file__).resolve().parents[1]


def installed_report(child: str, what: str, where: Path) -> dict[str, Any]:
    """The JSON report ``child`` prints, run from ``where`` with the checkout as its ``sys.argv[1]``; the
    test is skipped when the report says the installed ``what`` is not compiled (``compiled``, ``where``)."""
    done = subprocess.run([sys.executable, "-P", "-c", child, str(CHECKOUT)], cwd=where, capture_output=True,
                          text=True, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    if not report["compiled"]:
        assert not _build_fell_back(Path(report["where"])), (
            f"the installed {what} is not compiled ({report['where']}) although it is a wheel's, built on a "
            "machine with a C compiler: the build fell back to pure Python (pip install -v shows why)")
        pytest.skip(f"the installed {what} is not compiled ({report['where']}): an editable or pure-Python install")
    return report


def _build_fell_back(source: Path) -> bool:
    """Whether the uncompiled module at ``source`` should have been compiled: it is a wheel's copy in
    site-packages (not the checkout's own file, which an editable install imports), a C compiler is here and
    ``OPEN4WD_COMPILE`` is not 0. A silent fall-back would otherwise only skip the compiled-build tests."""
    return "site-packages" in source.parts and shutil.which("cc") is not None and os.environ.get("OPEN4WD_COMPILE") != "0"
