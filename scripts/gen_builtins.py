#!/usr/bin/env python3
"""Regenerate the 27 built-in GLBs and their digest list into sim_core/data/builtin/.

    python scripts/gen_builtins.py          # write the files
    python scripts/gen_builtins.py --check  # exit 1 if the shipped files differ from a fresh generation
"""

import sys
from pathlib import Path

from sim_core.assets.builtin_write import check_builtins, write_builtins

TARGET = Path(__file__).resolve().parent.parent / "sim_core" / "data" / "builtin"

if __name__ == "__main__":
    if "--check" in sys.argv[1:]:
        stale = check_builtins(TARGET)
        for name in stale:
            print(f"differs: {name}")
        sys.exit(1 if stale else 0)
    for name in write_builtins(TARGET):
        print(f"wrote {name}")
