"""``open4wd-node signal`` as a process (docs/operators.md, "`open4wd-node signal`"): the service and its metrics
endpoint under one ``trio.run``. SIGTERM (or SIGINT) drains: stop accepting, tell every socket
``room-closed``, let registered peers relay for up to ``drain_grace_s``, close the rest; a second signal
ends the drain at once. The process then exits 128 + signal (143 for SIGTERM: the systemd unit lists it
as a success).
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable

import structlog
import trio

from open4wd_node.runtime.addresses import Address
from open4wd_node.runtime.errors import UserError
from open4wd_node.runtime.signals import STOP_SIGNALS, Interrupted, note
from open4wd_node.signal.config import SignalSettings
from open4wd_node.signal.service import SignalingService
from open4wd_node.events.sink import EventSink
from open4wd_node.events.vocabulary import SignalDrained, SignalDraining, SignalListening

log = structlog.get_logger("open4wd_node.signal.daemon")
Serve = Callable[..., Awaitable[None]]


async def run_signal(settings: SignalSettings, events: EventSink) -> int:
    """Serve until a stop signal, then drain; raises ``Interrupted`` with that signal once drained.
    ``UserError`` ``listen-failed`` when an address cannot be bound, and the TURN secret's errors."""
    secret = settings.turn_secret()
    with trio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async with trio.open_nursery() as nursery:
            service = SignalingService(settings, secret)
            address = await _bind(nursery, service.serve, settings.listen)
            metrics = None if settings.metrics is None else await _bind(nursery, service.serve_metrics, settings.metrics)
            events.emit(SignalListening(address=str(address), metrics=str(metrics) if metrics else None,
                        turn=list(settings.turn_urls), cors=list(settings.cors_origins)))
            signum = await signals.__anext__()
            note(signum)
            events.emit(SignalDraining(signal=signal.Signals(signum).name, sockets=service.hub.sockets,
                        peers=service.hub.registered, grace_s=settings.drain_grace_s))
            closed = 0
            async with trio.open_nursery() as draining:

                async def cut_short() -> None:
                    await signals.__anext__()
                    log.warning("signal-drain-cut", reason="a second stop signal")
                    draining.cancel_scope.cancel()

                async def drain() -> None:
                    nonlocal closed
                    closed = await service.drain(settings.drain_grace_s)
                    draining.cancel_scope.cancel()

                draining.start_soon(cut_short)
                draining.start_soon(drain)
            events.emit(SignalDrained(closed=closed))
            nursery.cancel_scope.cancel()
    raise Interrupted(signum)


async def _bind(nursery: trio.Nursery, serve: Serve, where: Address) -> Address:
    try:
        address: Address = await nursery.start(serve, where.host, where.port)
    except OSError as exc:
        raise UserError("listen-failed", f"cannot listen on {where}: {exc.strerror}") from None
    return address
