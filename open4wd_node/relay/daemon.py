"""``open4wd-node relay`` as a process (docs/relay.md, "Running it"): the relay and its metrics endpoint
under one ``trio.run``; SIGTERM (or SIGINT) drains: stop accepting, tell reserved nodes, let circuits run
for up to the grace period; a second signal ends the drain at once. The process then exits 128 + signal
(143 for SIGTERM: systemd's unit lists it as a success).
"""

from __future__ import annotations

import signal

import structlog
import trio

from open4wd_node.relay.config import RelaySettings
from open4wd_node.relay.metrics import serve_metrics
from open4wd_node.relay.server import RelayServer
from open4wd_node.runtime.addresses import Address
from open4wd_node.runtime.errors import UserError
from open4wd_node.runtime.signals import STOP_SIGNALS, Interrupted, note
from open4wd_node.events.sink import EventSink
from protocol.identity.keys import Identity
from open4wd_node.events.vocabulary import RelayDrained, RelayDraining, RelayListening

log = structlog.get_logger("open4wd_node.relay.daemon")


async def run_relay(identity: Identity, settings: RelaySettings, events: EventSink) -> int:
    """Serve until a stop signal, then drain; raises ``Interrupted`` with that signal once drained.
    ``UserError`` ``listen-failed`` when an address cannot be bound."""
    server = RelayServer(identity, settings.limits, settings.door)
    with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async with trio.open_nursery() as nursery:
            address = await _bind(nursery, server.run, settings.listen)
            metrics = None
            if settings.metrics is not None:
                metrics = await _bind(nursery, lambda host, port, task_status: serve_metrics(
                    server.metrics, host, port, lambda: server.healthy, task_status=task_status), settings.metrics)
            events.emit(RelayListening(address=str(address), metrics=str(metrics) if metrics else None,
                        peer=identity.peer_id))
            signum = await signals.__anext__()
            note(signum)
            events.emit(RelayDraining(signal=signal.Signals(signum).name, circuits=len(server.book.circuits),
                        reservations=len(server.book.reservations), grace_s=settings.drain_grace_s))
            async with trio.open_nursery() as draining:

                async def cut_short() -> None:
                    await signals.__anext__()
                    log.warning("relay-drain-cut", reason="a second stop signal")
                    draining.cancel_scope.cancel()

                draining.start_soon(cut_short)
                await server.drain(settings.drain_grace_s)
                draining.cancel_scope.cancel()
            events.emit(RelayDrained(circuits_cut=len(server.book.circuits)))
            nursery.cancel_scope.cancel()
    raise Interrupted(signum)


async def _bind(nursery: trio.Nursery, serve, where: Address) -> Address:  # type: ignore[no-untyped-def]
    try:
        address: Address = await nursery.start(serve, where.host, where.port)
    except OSError as exc:
        raise UserError("listen-failed", f"cannot listen on {where}: {exc.strerror}") from None
    return address
