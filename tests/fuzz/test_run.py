"""``python -m fuzz.run``: which engine runs, and that a campaign without coverage says so."""

import importlib.util

import pytest

from fuzz import run


@pytest.fixture
def no_atheris(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "atheris" else real(name, *a))
    engines = []
    monkeypatch.setattr(run, "_mutate", lambda name, runs, seed: engines.append("mutate") or 0)
    return engines


def test_without_atheris_the_fallback_to_mutate_is_announced(no_atheris, capsys):
    assert run.main(["state-file", "--runs", "1"]) == 0
    assert no_atheris == ["mutate"]
    assert "atheris is not installed" in capsys.readouterr().err


def test_mutate_asked_for_runs_without_a_word(no_atheris, capsys):
    assert run.main(["state-file", "--runs", "1", "--engine", "mutate"]) == 0
    assert no_atheris == ["mutate"] and capsys.readouterr().err == ""


def test_atheris_asked_for_but_missing_is_a_usage_error(no_atheris, capsys):
    with pytest.raises(SystemExit) as exited:
        run.main(["state-file", "--engine", "atheris"])
    assert exited.value.code == 2 and no_atheris == []
    assert "pip install '.[fuzz]'" in capsys.readouterr().err
