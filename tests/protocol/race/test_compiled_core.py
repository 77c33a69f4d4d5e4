"""The installed build's compiled race core behaves exactly as the sources do (setup.py ``RACE_CORE``;
docs/node.md "The compiled race core").

The suite imports the sources of the checkout it runs in, but an install from a wheel (``pip install .``:
the README's commands and CI) carries the race session compiled by mypyc, and that is what every real node
process runs. This test races the harness's sans-IO sessions through a clean round, a forged input, a
removed peer and a catch-up (``compiled_runs``) in a child process that imports the installed package
(``-P``, from an empty directory, the checkout only appended to its path for the ``tests`` helpers), and
compares every figure with the same runs here. It is skipped where the install is not compiled."""

from __future__ import annotations

import json

from tests.installed_build import installed_report
from tests.protocol.race.compiled_runs import all_runs

CHILD = """
import json, sys
sys.path.append(sys.argv[1])  # after site-packages: the installed protocol, the checkout's tests helpers
from importlib.util import find_spec
origin = find_spec("protocol.race.session").origin
if origin.endswith(".py"):
    print(json.dumps({"compiled": False, "where": origin}))
    sys.exit(0)
from tests.protocol.race.compiled_runs import all_runs
print(json.dumps({"compiled": True, "runs": all_runs()}))
"""


def test_the_installed_compiled_race_core_reproduces_the_sources(tmp_path):
    report = installed_report(CHILD, "race core", tmp_path)
    here = json.loads(json.dumps(all_runs()))  # the sources' figures, as plain JSON data
    assert report["runs"] == here
    assert here["forged"]["flipped"] and any(node["refused"] for node in here["forged"]["nodes"].values())
    assert sum(node["ended"] is not None for node in here["removed"].values()) == 1
    assert any(node["caught_up"] for node in here["caught_up"].values())
