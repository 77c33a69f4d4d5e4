"""The NAT lab's coturn, run inside the lab's public namespace: ``python -m tests.open4wd_node.net.webrtc.nat_coturn
HOST SECRET`` starts the product's ``local_coturn`` there, prints ``{"port", "log"}`` (its port and log
file) as a JSON line once it answers STUN, and stops it when its standard input closes (the test ends)."""

from __future__ import annotations

import json
import sys

import trio

from open4wd_node.signal.coturn import CoturnSettings, local_coturn


async def main(host: str, secret: str) -> None:
    async with local_coturn(CoturnSettings(host=host, secret=secret)) as coturn:
        print(json.dumps({"port": coturn.settings.port, "log": str(coturn.log_path)}), flush=True)
        stdin = trio.lowlevel.FdStream(0)
        while await stdin.receive_some(1024):
            pass


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2])
