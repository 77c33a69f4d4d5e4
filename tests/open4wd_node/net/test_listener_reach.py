"""The network layer below the relay client does not import it: the listener is given how to keep its
reservations (``reserve``) and the race mesh and the spectator are given how to dial (a ``Dialler``), by
the composition root (``open4wd_node.relay.reach``: ``with_listener``, ``contact_dialler``)."""

from __future__ import annotations

import ast

import pytest
import trio

from open4wd_base.errors import LocalError
from open4wd_node.net.listener import NodeListener, Reachability
from protocol.identity.keys import Identity
from tests.layout import REPO_ROOT

ME = Identity(bytes([4]) * 32)
BELOW_THE_RELAY = [*sorted((REPO_ROOT / "open4wd_node" / "net").glob("*.py")),
                   REPO_ROOT / "open4wd_node" / "race" / "mesh.py", REPO_ROOT / "open4wd_node" / "race" / "runner.py",
                   REPO_ROOT / "open4wd_node" / "spectate" / "watcher.py"]


@pytest.mark.parametrize("path", BELOW_THE_RELAY, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_the_listener_the_mesh_and_the_viewer_do_not_import_the_relay(path):
    imported = [node.module for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, ast.ImportFrom) and node.module]
    imported += [alias.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.Import) for alias in node.names]
    assert not [name for name in imported if name.startswith("open4wd_node.relay")]


class Reserver:
    def __init__(self, relays, admit) -> None:
        self.relays, self.admit = relays, admit
        self.held: set[str] = set()
        self.tried = trio.Event()
        self.running = False

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        self.running = True
        task_status.started()
        self.held.add(self.relays[0])
        self.tried.set()
        await trio.sleep_forever()


def test_a_listener_with_relays_needs_a_way_to_reserve():
    with pytest.raises(LocalError) as refused:
        NodeListener(ME, relays=("127.0.0.1:9",))
    assert refused.value.code == "listener-cannot-reserve"
    made = []
    NodeListener(ME, reachability="direct", relays=("127.0.0.1:9",), reserve=lambda *a: made.append(a))  # type: ignore[arg-type, func-returns-value]
    assert made == []  # a direct node uses no relay


async def test_the_listener_keeps_its_reservations_through_what_it_is_given(autojump_clock):
    made: list[Reserver] = []

    def reserve(relays, admit) -> Reserver:
        made.append(Reserver(relays, admit))
        return made[-1]

    listener = NodeListener(ME, reachability="relay", relays=("127.0.0.1:9",), reserve=reserve)
    assert listener.reachability is Reachability.RELAY and not listener.direct and listener.use_relays
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(listener.run, "127.0.0.1", 0)
        (reserver,) = made
        assert bound is None and reserver.running and reserver.admit == listener.gate.admit
        assert str(listener.contact) == "relay=127.0.0.1:9"
        nursery.cancel_scope.cancel()
