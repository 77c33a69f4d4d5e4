"""Start-up benchmark, every figure measured in fresh processes (medians of several runs).

- ``World.demo(8)`` cold: an empty cache folder, so admission reads every built-in GLB and the route is
  sampled; warm: a second process over the folder the cold run filled (target ≤ 50 ms). The figure is
  the ``World.demo(8)`` call itself (wall clock, and the process's CPU time, which other load on the
  machine disturbs less); the process's ``import sim_core`` is reported beside it.
- ``open4wd-node version`` against ``python -c "import trio"``: whole processes, wall clock.

Run: ``.venv/bin/python benchmarks/startup_bench.py [--runs N]``. Bytecode is written and reused as in
an installed program (``PYTHONDONTWRITEBYTECODE`` is dropped for the children, and one run warms it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEMO = """
import json, sys, time
started = time.perf_counter()
from pathlib import Path
from open4wd_node.assets.cache_dir import CacheDir
from sim_core import World
from sim_core.derived_cache import backed_by
imported, cpu = time.perf_counter(), time.process_time()
with backed_by(CacheDir(Path(sys.argv[1]))) as cache:
    World.demo(8)
    built, cpu_built = time.perf_counter(), time.process_time()
print(json.dumps({"import_ms": (imported - started) * 1000, "demo_ms": (built - imported) * 1000,
                  "demo_cpu_ms": (cpu_built - cpu) * 1000, "builds": cache.stats.builds,
                  "store_hits": cache.stats.store_hits}))
"""


def child_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def demo_run(cache_dir: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", DEMO, str(cache_dir)], capture_output=True, text=True, check=True,
                         env=child_env())
    return json.loads(out.stdout)


def wall_ms(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True, env=env)
    return (time.perf_counter() - started) * 1000


def median(values: list[float]) -> str:
    return f"{statistics.median(values):7.1f} ms (min {min(values):.1f}, max {max(values):.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per figure (default 7)")
    args = parser.parse_args()
    script = Path(sys.executable).with_name("open4wd-node")
    work = Path(tempfile.mkdtemp(prefix="open4wd-startup-"))
    try:
        demo_run(work / "warm-up")  # bytecode written, as after an install
        cold, warm = [], []
        for run in range(args.runs):
            folder = work / f"cache-{run}"
            cold.append(demo_run(folder))
            warm.append(demo_run(folder))
        assert all(r["builds"] == 26 for r in cold) and all(r["builds"] == 0 and r["store_hits"] == 26 for r in warm)
        env = {**child_env(), "OPEN4WD_DATA_DIR": str(work / "data")}
        version = [wall_ms([str(script), "version"], env) for _ in range(args.runs)]
        trio_only = [wall_ms([sys.executable, "-c", "import trio"], env) for _ in range(args.runs)]
        bare = [wall_ms([sys.executable, "-c", "pass"], env) for _ in range(args.runs)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"World.demo(8), cold cache   : {median([r['demo_ms'] for r in cold])}   (26 products built)")
    print(f"World.demo(8), warm cache   : {median([r['demo_ms'] for r in warm])}   (26 read from the data dir)")
    print(f"  the same, CPU time        : {median([r['demo_cpu_ms'] for r in warm])}   (less sensitive to a busy machine)")
    print(f"import sim_core (+ cache)   : {median([r['import_ms'] for r in warm])}")
    print(f"open4wd-node version        : {median(version)}   (whole process)")
    print(f'python -c "import trio"     : {median(trio_only)}   (whole process)')
    print(f'python -c "pass"            : {median(bare)}   (whole process)')
    print(f"load average                : {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
