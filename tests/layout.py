"""Where things are, for tests that read files of the repository (test modules sit at different depths)."""

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
CONFORMANCE = TESTS_DIR / "conformance"
