"""Benchmark of the GLB reader's JSON checks: median ms to admit the built-ins and to read (and refuse)
large hostile JSON chunks, so the cost of checking every number, string and extras value is visible.

Run: ``.venv/bin/python benchmarks/reader_bench.py [--repeat N]``. Cases: every built-in through
``admission.check``; a document with 50 000 nodes whose extras are strings (the node cap, read in
full); 1 MiB of extras holding 10 000-digit-long decimals; a 16 MiB chunk of one string.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from decimal import Decimal

from sim_core.assets import constants as C
from sim_core.assets.admission import check
from sim_core.assets.builtins import BUILTIN_REFS, builtin_bytes
from sim_core.assets.encoding import write_glb
from sim_core.assets.findings import AssetRejected
from sim_core.assets.reader import read_glb


def median_ms(action: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter_ns()
        action()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1e6


def _read(data: bytes) -> str:
    try:
        read_glb(data)
    except AssetRejected as exc:
        return exc.code
    return "read"


def cases() -> dict[str, bytes]:
    many_nodes = {"asset": {"version": "2.0"}, "scenes": [{"nodes": list(range(C.MAX_NODES))}],
                  "nodes": [{"name": f"n{i}", "extras": "exporter note"} for i in range(C.MAX_NODES)]}
    decimals = {"asset": {"version": "2.0"}, "extras": {"v": [Decimal("0." + "1" * 10_000)] * 100}}
    one_string = {"asset": {"version": "2.0"}, "extras": {"s": "x" * (C.MAX_JSON_CHUNK_BYTES - 64)}}
    return {
        "50 000 nodes, string extras": write_glb(many_nodes, b""),
        "100 decimals of 10 000 digits": write_glb(decimals, b""),
        "16 MiB chunk, one string": write_glb(one_string, b""),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    blobs = [builtin_bytes(ref) for ref in BUILTIN_REFS]
    print(f"admit all {len(blobs)} built-ins: {median_ms(lambda: [check(b) for b in blobs], args.repeat):9.1f} ms")
    for name, data in cases().items():
        print(f"{name + ' (' + _read(data) + '):':<48}{median_ms(lambda data=data: _read(data), args.repeat):9.1f} ms")


if __name__ == "__main__":
    main()
