"""Signaling service figures, in one run over real loopback TCP, everything in this process:

- signals relayed per second: one peer sends ``--signals`` pre-signed ``signal-v1`` envelopes (ICE
  candidates, ~350 bytes of JSON) back to back to another through ``SignalingService`` (the hub parses,
  checks the shape, the scope and signer, the nonce, the ±30 s window and the Ed25519 signature, then
  forwards); against the floor: the same frames through a bare trio-websocket forwarder (receive, send
  to the other socket, nothing checked), same sockets, same library. Rounds alternate the two; the
  figure is the median ratio relayed / floor, with the median rates and the load average.
- registrations per second: ``--registers`` sockets each upgrading and registering with a fresh proof,
  one after another (the upgrade, the proof check and room-state).

    python benchmarks/signal_bench.py [--signals 3000] [--rounds 5] [--registers 200]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from dataclasses import replace

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, WebSocketRequest, open_websocket_url, serve_websocket

from open4wd_node.runtime.addresses import Address
from open4wd_node.runtime.logs import configure_logging
from open4wd_node.signal.config import SignalSettings
from open4wd_node.signal.service import SignalingService
from protocol.identity.keys import Identity
from protocol.signaling.envelope import IceCandidate, sign_envelope
from protocol.signaling.limits import MAX_FRAME_BYTES, HubLimits
from protocol.signaling.proof import build_proof
from protocol.signaling.scope import new_room_scope

SENDER, RECEIVER = Identity(bytes([7]) * 32), Identity(bytes([8]) * 32)


def register(identity: Identity, scope: str, now_ms: int) -> str:
    import json

    proof = build_proof(identity, scope, now_ms)
    return json.dumps({"type": "register", "sender": identity.peer_id,
                       "payload": {"peerId": identity.peer_id, "proof": proof.to_json()}})


async def push(url_send: str, url_receive: str, frames: list[str], setup: list[str] | None = None) -> float:
    """Seconds from the first send to the last frame received (after ``setup`` frames registered both)."""
    async with open_websocket_url(url_receive, max_message_size=MAX_FRAME_BYTES) as receiver, \
            open_websocket_url(url_send, max_message_size=MAX_FRAME_BYTES) as sender:
        if setup:
            await receiver.send_message(setup[1])
            await receiver.get_message()  # room-state
            await sender.send_message(setup[0])
            await sender.get_message()  # room-state
            await receiver.get_message()  # peer-joined
        started = time.perf_counter()

        async def send_all() -> None:
            for frame in frames:
                await sender.send_message(frame)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(send_all)
            for _ in frames:
                await receiver.get_message()
        return time.perf_counter() - started


async def floor_server(*, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
    """A bare forwarder: the 'send' socket's messages go to the 'receive' socket, nothing checked."""
    waiting: dict[str, WebSocketConnection] = {}
    ready = trio.Event()

    async def handler(request: WebSocketRequest) -> None:
        ws = await request.accept()
        role = "receive" if "receive" in request.path else "send"
        waiting[role] = ws
        if len(waiting) == 2:
            ready.set()
        await ready.wait()
        if role == "send":
            other = waiting["receive"]
            try:
                while True:
                    await other.send_message(await ws.get_message())
            except ConnectionClosed:
                return
        else:
            await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        listener = await nursery.start(lambda task_status: serve_websocket(
            handler, "127.0.0.1", 0, None, max_message_size=MAX_FRAME_BYTES, task_status=task_status))
        task_status.started(listener.port)


async def main(signals: int, rounds: int, registers: int) -> None:
    limits = HubLimits(message_rate_per_min=10_000_000, connect_rate_per_min=10_000_000)
    settings = replace(SignalSettings(), listen=Address("127.0.0.1", 0), metrics=None, limits=limits)
    relay_rates, floor_rates = [], []
    async with trio.open_nursery() as nursery:
        service = SignalingService(settings)
        address = await nursery.start(service.serve, "127.0.0.1", 0)
        for _ in range(rounds):
            scope = new_room_scope()
            now = service.now_ms()
            frames = [sign_envelope(SENDER, scope, RECEIVER.peer_id,
                                    IceCandidate(f"candidate:{i} 1 udp 2122260223 192.0.2.1 {10000 + i} typ host", "0", 0),
                                    now).wire_text() for i in range(signals)]
            url = f"ws://{address}/ws?room={scope}"
            seconds = await push(url, url, frames, [register(SENDER, scope, now), register(RECEIVER, scope, now)])
            relay_rates.append(signals / seconds)
            async with trio.open_nursery() as floor_nursery:
                port = await floor_nursery.start(floor_server)
                seconds = await push(f"ws://127.0.0.1:{port}/send", f"ws://127.0.0.1:{port}/receive", frames)
                floor_nursery.cancel_scope.cancel()
            floor_rates.append(signals / seconds)
        scope = new_room_scope()
        started = time.perf_counter()
        for i in range(registers):
            identity = Identity(i.to_bytes(4, "big") * 8)
            async with open_websocket_url(f"ws://{address}/ws?room={scope}") as ws:
                await ws.send_message(register(identity, scope, service.now_ms()))
                await ws.get_message()
        register_rate = registers / (time.perf_counter() - started)
        nursery.cancel_scope.cancel()
    ratios = [r / f for r, f in zip(relay_rates, floor_rates, strict=True)]
    print(f"signals relayed: median {statistics.median(relay_rates):,.0f}/s; bare forwarder floor: median "
          f"{statistics.median(floor_rates):,.0f}/s; ratio relayed/floor: median {statistics.median(ratios):.2f} "
          f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})")
    print(f"registrations (upgrade + proof + room-state, one socket at a time): {register_rate:,.0f}/s")
    print(f"load average: {' / '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--signals", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--registers", type=int, default=200)
    options = parser.parse_args()
    configure_logging("console", logging.WARNING)
    trio.run(main, options.signals, options.rounds, options.registers)
