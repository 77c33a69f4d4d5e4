"""One peer of the NAT lab, run inside its namespace: ``python -m tests.open4wd_node.net.webrtc.nat_peer``.

It registers at the UNIX-socket signaling relay, offers (``--offer PEER``) or answers a WebRTC link with
the lab's STUN server and, when given, its TURN server (REST credentials minted from the shared secret),
exchanges one message, and prints ``{"path", "rtt_ms", "open_ms"}`` as a JSON line (or ``{"error": code}``)."""

from __future__ import annotations

import argparse
import json
import time

import trio

from protocol.link.lane import Lane

from tests.open4wd_node.net.webrtc.helpers import ANY

from open4wd_node.net.link import LinkClosed
from open4wd_node.net.webrtc.connector import WebRTCSettings, webrtc_endpoint
from protocol.identity.keys import Identity
from protocol.webrtc.channels import LinkKind
from protocol.webrtc.ice import HostAddresses, IceServer, turn_rest_credentials
from tests.open4wd_node.net.webrtc.unix_signaling import UnixSignaling

SCOPE = "room:2f1c3b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b"


async def main(args: argparse.Namespace) -> dict[str, object]:
    me = Identity(bytes([args.seed]) * 32)
    servers: tuple[IceServer, ...] = (IceServer.parse(args.stun),)
    if args.turn:
        creds = turn_rest_credentials(args.secret, me.peer_id, int(time.time()))
        servers += (IceServer.parse(args.turn, creds.username, creds.credential),)
    settings = WebRTCSettings(hosts=HostAddresses.only(args.host), ice_servers=servers,
                              negotiation_timeout_ms=args.timeout_ms)
    signaling = await UnixSignaling.connect(args.socket, me.peer_id, SCOPE)
    async with webrtc_endpoint(signaling, LinkKind.ROOM, settings) as endpoint:
        started = time.perf_counter()
        try:
            if args.offer:
                await trio.sleep(0)  # the answerer registered before the offerer started (the test's order)
                link = await endpoint.connect(Identity(bytes([args.offer]) * 32).peer_id)
            else:
                link = await endpoint.accept()
        except LinkClosed as exc:
            return {"error": exc.code, "message": exc.message}
        open_ms = (time.perf_counter() - started) * 1000
        if args.offer:
            await link.send(b"ping", Lane.CONTROL)
            assert await link.receive(ANY) == b"pong"
        else:
            assert await link.receive(ANY) == b"ping"
            await link.send(b"pong", Lane.CONTROL)
            try:
                await link.receive(ANY)  # until the offerer closes
            except LinkClosed:
                pass
        report = {"path": link.path.value if link.path else None, "rtt_ms": link.rtt_ms, "open_ms": open_ms}
        await link.aclose()
        return report


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--offer", type=int, default=0, help="the seed of the peer to offer to (else: answer)")
    parser.add_argument("--host", required=True)
    parser.add_argument("--socket", required=True)
    parser.add_argument("--stun", required=True)
    parser.add_argument("--turn", default="", help="a TURN server (none: STUN only)")
    parser.add_argument("--secret", required=True)
    parser.add_argument("--timeout-ms", type=int, default=15_000)
    print(json.dumps(trio.run(main, parser.parse_args())), flush=True)
