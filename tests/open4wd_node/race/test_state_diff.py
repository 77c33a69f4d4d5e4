"""``open4wd-node state-diff`` over real saved states of the simulation."""

import json
import subprocess
import sys

import pytest

from open4wd_node.cli.main import main
from open4wd_node.race.state_files import write_state_file
from sim_core.harness.corrupt import nudge
from sim_core import World


def test_state_diff_names_the_first_differing_fields(tmp_path):
    world = World.demo(2, seed=1)
    for _ in range(30):
        world.step({})
    fields = world.field_names()
    good = world.save_state()
    nudge(world, 1)
    bad = world.save_state()
    a, b, c = tmp_path / "a.state", tmp_path / "b.state", tmp_path / "c.state"
    for path, state in ((a, good), (b, bad), (c, good)):
        write_state_file(path, match_id="m", round_index=0, frame=30, node=path.stem, fields=fields, state=state)
    run = lambda *args: subprocess.run([sys.executable, "-m", "open4wd_node.cli.main", "state-diff", *args],  # noqa: E731
                                       capture_output=True, text=True, timeout=60)
    out = run(str(a), str(b), "--json")
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert report["differences"] == [{"field": "car[1].lat_um", "a": report["differences"][0]["a"],
                                      "b": report["differences"][0]["a"] + 1}]
    same = run(str(a), str(c))
    assert same.returncode == 0 and same.stdout.startswith("identical")
    (tmp_path / "junk.state").write_bytes(b"not a state")
    junk = run(str(a), str(tmp_path / "junk.state"))
    assert junk.returncode == 1 and junk.stderr.startswith("error[state-file-invalid]")


def saved_states(tmp_path, **contexts):
    """Real saved states of one simulated world: ``name=(corrupted slots, match, round, frame)``."""
    paths = {}
    for name, (slots, match, round_index, frame) in contexts.items():
        world = World.demo(2, seed=1)
        for _ in range(30):
            world.step({})
        for slot in slots:
            nudge(world, slot)
        paths[name] = tmp_path / f"{name}.state"
        write_state_file(paths[name], match_id=match, round_index=round_index, frame=frame, node=name,
                         fields=world.field_names(), state=world.save_state())
    return paths


@pytest.mark.parametrize("limit", ["0", "-1", "x"])
def test_a_limit_below_one_is_a_usage_error(tmp_path, capsys, limit):
    """--limit 0 used to answer "identical" for different states, and -1 dropped a difference."""
    paths = saved_states(tmp_path, a=((), "m", 0, 30), b=((0, 1), "m", 0, 30))
    assert main(["state-diff", str(paths["a"]), str(paths["b"]), "--limit", limit]) == 2
    assert capsys.readouterr().err.startswith("error[usage]: --limit takes an integer in 1..100000")


def test_the_verdict_covers_every_difference_whatever_the_limit(tmp_path, capsys):
    paths = saved_states(tmp_path, a=((), "m", 0, 30), b=((0, 1), "m", 0, 30))
    assert main(["state-diff", str(paths["a"]), str(paths["b"]), "--limit", "1", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["identical"] is False and report["differing_fields"] == 2 and len(report["differences"]) == 1
    assert report["warnings"] == []
    assert main(["state-diff", str(paths["a"]), str(paths["b"]), "--limit", "1"]) == 1
    assert "and 1 more differing fields" in capsys.readouterr().out


@pytest.mark.parametrize("other, what", [
    (((), "other-match", 0, 30), "matches"), (((), "m", 1, 30), "rounds"), (((), "m", 0, 31), "frames"),
])
def test_states_of_different_moments_are_compared_with_a_warning(tmp_path, capsys, other, what):
    paths = saved_states(tmp_path, a=((), "m", 0, 30), b=other)
    assert main(["state-diff", str(paths["a"]), str(paths["b"])]) == 0  # same values: identical, but warned
    out, err = capsys.readouterr()
    assert out.startswith("identical") and err.startswith(f"warning: the states are of different {what}")
    assert main(["state-diff", str(paths["a"]), str(paths["b"]), "--json"]) == 0
    captured = capsys.readouterr()
    warnings = json.loads(captured.out)["warnings"]
    assert len(warnings) == 1 and f"different {what}" in warnings[0] and f"different {what}" in captured.err
