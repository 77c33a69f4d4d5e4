"""Whole node processes over WebRTC with real services on 127.0.0.1 (``open4wd-node signal``, coturn):
nodes reachable only through coturn (``--reachability relay``: TURN relay candidates only, credentials from
the service's ``/turn-token``) race and a spectator watches them, some nodes given two TURN servers of
which the first is dead; and a host whose direct address is a black hole is joined and raced over WebRTC.
The race is short (one lap of an 8 m track); every wait is bounded by a process's own end."""

from __future__ import annotations

import socket
import threading

from open4wd_node.assets.store import AssetStore
from open4wd_node.signal.coturn import free_port
from tests.node_process import Process, drain_service
from tests.open4wd_node.net.webrtc.services import WEBRTC, start_signal, turn_services
from tests.open4wd_node.race.nodes import short_track
from tests.services import require_binary


def put_track(tmp_path, names) -> str:
    track = short_track(8.0)
    refs = {AssetStore.in_data_dir(tmp_path / name).put(track) for name in names}
    (ref,) = refs
    return ref


def agreed(racers: list[Process]) -> list[dict]:
    codes = {p.name: p.wait() for p in racers}
    assert codes == {p.name: 0 for p in racers}, {p.name: p.events[-3:] for p in racers}
    results = [p.of("result")[0] for p in racers]
    assert {r["outcome"] for r in results} == {"finished"}
    assert len({str(r["standings"]) for r in results}) == 1
    assert all(r["agreed_hashes"] >= 1 and r["disagreements"] == 0 for r in results)
    return results


def killed(processes: list[Process]) -> None:
    """A failed check leaves no node behind."""
    for process in processes:
        if process.proc.poll() is None:
            process.proc.kill()
            process.proc.wait()


def test_relay_only_nodes_race_and_a_spectator_watches_through_coturn(tmp_path):
    require_binary("turnserver", "coturn")
    started: list[Process] = []
    with turn_services(tmp_path) as services:
        try:
            ref = put_track(tmp_path, ("host", "p1", "p2", "watcher"))
            relay_only = (*WEBRTC, "--signal", services.signal_url, "--reachability", "relay")
            through = ("--ice-server", services.turn_url)
            dead_first = ("--ice-server", f"turn:127.0.0.1:{free_port('127.0.0.1')}", "--ice-server", services.turn_url)
            host = Process(tmp_path, "host", "host", "--track", ref, "--laps", "1", "--min-players", "3", "--max-players",
                           "3", "--spectators", "1", "--auto-ready", *relay_only, *dead_first)
            started.append(host)
            created = host.wait_for("room-created")
            invite = created["invite"]
            assert invite.startswith("open4wd:///") and f"&signal={services.signal_url}#" in invite
            assert created["listen"] == ""  # no TCP listener at all
            watcher = Process(tmp_path, "watcher", "watch", created["invites"]["spectator"], *relay_only, *through)
            started.append(watcher)
            watcher.wait_for("joined")  # a spectator is admitted before the match starts
            players = [Process(tmp_path, "p1", "join", invite, "--auto-ready", *relay_only, *through),
                       Process(tmp_path, "p2", "join", invite, "--auto-ready", *relay_only, *dead_first)]
            started += players
            racers = [host, *players]
            results = agreed(racers)
            for racer in racers:  # the room's star and the mesh: every link relayed by coturn
                paths = racer.of("link-path")
                assert len({e["peer"] for e in paths}) >= 2 and {e["path"] for e in paths} == {"relay"}, paths
            assert watcher.wait() == 0, watcher.events[-3:]
            watched = watcher.of("result")[0]
            assert watched["outcome"] == "match-end" and watched["mismatches"] == 0 and watched["agreed_hashes"] >= 1
            assert watched["standings"] == results[0]["standings"]
            assert watcher.of("link-path") and {e["path"] for e in watcher.of("link-path")} == {"relay"}
        finally:
            killed(started)


class BlackHole:
    """A TCP address that accepts connections and never says a word (a NAT or firewall that drops), counting
    them."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._hold, daemon=True).start()

    def _hold(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed: the test ended
                return
            self.held.append(connection)

    def close(self) -> None:
        self.listener.close()
        for connection in self.held:
            connection.close()


def test_a_host_whose_direct_address_is_a_black_hole_is_joined_and_raced_over_webrtc(tmp_path):
    """The host listens on TCP (127.0.0.2) but tells the black hole's address, beside its signaling service:
    each joiner dials that address first, and 2 s later reaches the host over WebRTC."""
    service, url = start_signal(tmp_path)
    hole = BlackHole()
    started: list[Process] = []
    try:
        ref = put_track(tmp_path, ("host", "p1", "p2"))
        signalled = (*WEBRTC, "--signal", url)
        host = Process(tmp_path, "host", "host", "--track", ref, "--laps", "1", "--min-players", "3", "--max-players", "3",
                       "--auto-ready", "--listen", "127.0.0.2:0", "--advertise", f"127.0.0.1:{hole.port}", *signalled)
        started.append(host)
        invite = host.wait_for("room-created")["invite"]
        assert invite.startswith(f"open4wd://127.0.0.1:{hole.port}/") and f"&signal={url}#" in invite
        players = [Process(tmp_path, name, "join", invite, "--auto-ready", *signalled) for name in ("p1", "p2")]
        started += players
        racers = [host, *players]
        agreed(racers)
        assert len(hole.held) >= 2  # both joiners tried the direct address first
        for racer in racers:  # and every link opened over WebRTC, host candidates on loopback
            paths = racer.of("link-path")
            assert len({e["peer"] for e in paths}) == 2 and {e["path"] for e in paths} == {"host"}, paths
    finally:
        killed(started)
        hole.close()
        drain_service(service, "signal", 5)
