"""The installed build's compiled step computes exactly what the sources compute (setup.py; docs/sim.md
"The compiled step").

The suite imports the sources of the checkout it runs in, but an install from a wheel (``pip install .``:
the README's commands and CI) carries the frame compiled by mypyc. This test runs the golden frame chains
and three rollback sync-tests (a built-in round; every magnet and fluid; launchers, rotors and entities)
in a child process that imports the installed package (``-P``, from an empty directory, the checkout only
appended to its path for the ``tests`` helpers) and compares the chains with their pins and the sync-tests
with the same runs here. It is skipped where the install is not compiled: an editable install (pure
Python by design, so that edits take effect) or a machine whose build fell back to pure Python (no C
compiler)."""

from __future__ import annotations

from tests.installed_build import installed_report
from tests.sim_core.compiled_runs import magnet_figures, synctest_figures, weapons_and_entities_figures
from tests.sim_core.step.test_step_golden import GOLDEN

CHILD = """
import json, sys
sys.path.append(sys.argv[1])  # after site-packages: the installed sim_core, the checkout's tests helpers
import sim_core
if not sim_core.step_is_compiled():
    print(json.dumps({"compiled": False, "where": sim_core.__file__}))
    sys.exit(0)
from tests.sim_core.compiled_runs import golden_chains, magnet_figures, synctest_figures, weapons_and_entities_figures
print(json.dumps({"compiled": True, "chains": golden_chains(), "synctest": synctest_figures(),
                  "magnets": magnet_figures(), "weapons": weapons_and_entities_figures()}))
"""


def test_the_installed_compiled_step_reproduces_the_sources(tmp_path):
    report = installed_report(CHILD, "step", tmp_path)
    assert report["chains"] == {f"{scenario}/{seed}": list(pin) for (scenario, seed), pin in GOLDEN.items()}
    assert report["synctest"] == synctest_figures()  # as the sources compute it here
    assert report["synctest"][0] is True
    assert report["magnets"] == magnet_figures() and report["magnets"][0] is True
    assert report["weapons"] == weapons_and_entities_figures() and report["weapons"][0] is True
