"""Dependencies by role: what ``pip install .`` brings is what a player or a relay operator needs; the soak's
Dask is the ``soak`` extra, which the test extra includes."""

import tomllib

from packaging.requirements import Requirement

from tests.layout import REPO_ROOT

PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def names(requirements: list[str]) -> set[str]:
    return {Requirement(text).name for text in requirements}


def test_players_and_operators_install_no_dask():
    assert "dask" not in names(PROJECT["dependencies"])
    assert names(PROJECT["optional-dependencies"]["soak"]) == {"dask"}
    assert "distributed" in Requirement(PROJECT["optional-dependencies"]["soak"][0]).extras


def test_the_test_extra_brings_the_soak_extra():
    test = [Requirement(text) for text in PROJECT["optional-dependencies"]["test"]]
    assert any(r.name == PROJECT["name"] and "soak" in r.extras for r in test)

