"""``open4wd-node state-diff`` over real saved states of the simulation."""

import json
import subprocess
import sys

from open4wd_node.state_files import write_state_file
from sim_core import World


def test_state_diff_names_the_first_differing_fields(tmp_path):
    world = World.demo(2, seed=1)
    for _ in range(30):
        world.step({})
    fields = world.field_names()
    good = world.save_state()
    world.corrupt_for_testing(1)
    bad = world.save_state()
    a, b, c = tmp_path / "a.state", tmp_path / "b.state", tmp_path / "c.state"
    for path, state in ((a, good), (b, bad), (c, good)):
        write_state_file(path, match_id="m", round_index=0, frame=30, node=path.stem, fields=fields, state=state)
    run = lambda *args: subprocess.run([sys.executable, "-m", "open4wd_node.cli", "state-diff", *args],  # noqa: E731
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
