"""Containment over real TCP on 127.0.0.1: a handler that raises on what one peer sent ends that peer's
link with ``internal-error`` (its traceback logged at error level), and the listener goes on serving."""

import structlog
import trio

from open4wd_node.net.containment import INTERNAL_ERROR, contained
from open4wd_node.net.link import LinkClosed
from open4wd_node.net.transport import dial, serve
from protocol.errors import ProtocolError
from protocol.identity.keys import Identity
from protocol.transaction import FaultOutcome, MachineFault
from protocol.versions.collection import VersionRequest

HOST_ID = Identity(bytes([2]) * 32)
BAD_ID = Identity(bytes([1]) * 32)
GOOD_ID = Identity(bytes([3]) * 32)


class Handler:
    """Raises on anything ``BAD_ID`` sends (a bug it triggers); echoes everyone else."""

    def __init__(self) -> None:
        self.echoed = 0

    async def __call__(self, link) -> None:
        async for message in link:
            if link.peer_id == BAD_ID.peer_id:
                raise KeyError("injected: a handler bug triggered by this peer")
            await link.send(VersionRequest(sender=f"echo:{message.sender}"))
            self.echoed += 1


async def test_a_raising_handler_closes_only_that_link_with_internal_error():
    handler = Handler()
    async with trio.open_nursery() as nursery:
        address = await nursery.start(lambda task_status: serve(handler, HOST_ID, "127.0.0.1", 0, task_status=task_status))
        with structlog.testing.capture_logs() as logs:
            bad = await dial(address.host, address.port, BAD_ID, expected_peer=HOST_ID.peer_id)
            await bad.send(VersionRequest(sender="x"))
            try:
                await bad.receive()
                raise AssertionError("the link should have been closed")
            except LinkClosed as exc:
                assert exc.code == INTERNAL_ERROR and exc.by_peer
        errors = [e for e in logs if e["log_level"] == "error"]
        assert [e["event"] for e in errors] == [INTERNAL_ERROR]
        assert errors[0]["peer"] == BAD_ID.peer_id and isinstance(errors[0]["exc_info"], KeyError)
        assert errors[0]["exc_info"].__traceback__ is not None  # the renderer prints it
        for _ in range(2):  # the listener survived and serves the next links as before
            good = await dial(address.host, address.port, GOOD_ID, expected_peer=HOST_ID.peer_id)
            await good.send(VersionRequest(sender="y"))
            assert await good.receive() == VersionRequest(sender="echo:y")
            await good.aclose()
        nursery.cancel_scope.cancel()
    assert handler.echoed == 2


async def test_a_peer_error_closes_with_its_own_code_and_anything_else_passes_through():
    closed: list[tuple[str, str]] = []

    async def close(code: str, text: str) -> None:
        closed.append((code, text))

    with structlog.testing.capture_logs() as logs:
        async with contained("zPeer", "a test", close):
            raise ProtocolError("field-invalid", "a field was wrong")
    assert closed == [("field-invalid", "a field was wrong")] and logs[0]["log_level"] == "info"
    for passing in (LinkClosed("link-eof", "gone"), trio.Cancelled._create(), KeyboardInterrupt()):
        try:
            async with contained("zPeer", "a test", close):
                raise passing
        except BaseException as exc:  # noqa: B036 - the point is that each passes through untouched
            assert exc is passing
        else:
            raise AssertionError(f"{passing!r} was swallowed")
    assert len(closed) == 1


async def test_a_machine_s_fault_is_logged_with_both_reasons_and_closes_the_link():
    """A machine that met a bug says what it is now (restored or broken); the one error record carries
    that, the bug with its traceback, and the link's close."""
    closed: list[tuple[str, str]] = []

    async def close(code: str, text: str) -> None:
        closed.append((code, text))

    for outcome in FaultOutcome:
        with structlog.testing.capture_logs() as logs:
            async with contained("zPeer", "room-state", close):
                try:
                    raise KeyError("injected")
                except KeyError as bug:
                    raise MachineFault("the room member", "zPeer", outcome, bug) from bug
        (record,) = logs
        assert record["event"] == INTERNAL_ERROR and record["log_level"] == "error"
        assert (record["machine"], record["machine_outcome"], record["link_closed"]) == (
            "the room member", outcome.value, INTERNAL_ERROR)
        assert record["error"] == "KeyError: 'injected'" and isinstance(record["exc_info"], MachineFault)
    assert [code for code, _ in closed] == [INTERNAL_ERROR, INTERNAL_ERROR]
