"""Whole node processes that reach each other only over WebRTC, through a real ``open4wd-node signal`` on
127.0.0.1: no node listens on TCP, the invitation names the service, and a short race ends in agreement."""

from __future__ import annotations

from open4wd_node.assets.store import AssetStore
from tests.node_process import Process, drain_service, start_signal
from tests.open4wd_node.net.webrtc.services import WEBRTC
from tests.open4wd_node.race.nodes import short_track


def test_three_nodes_race_over_webrtc_through_the_signaling_service(tmp_path):
    service, url = start_signal(tmp_path)
    started: list[Process] = []
    try:
        track = short_track(8.0)
        for name in ("host", "p1", "p2"):
            ref = AssetStore.in_data_dir(tmp_path / name).put(track)
        host = Process(tmp_path, "host", "host", "--track", ref, "--laps", "1", "--min-players", "3", "--max-players",
                       "3", "--auto-ready", "--signal", url, *WEBRTC)
        started.append(host)
        created = host.wait_for("room-created")
        invite = created["invite"]
        assert invite.startswith("open4wd:///") and f"&signal={url}#" in invite  # no TCP address at all
        assert created["listen"] == ""
        players = [Process(tmp_path, name, "join", invite, "--auto-ready", "--signal", url, *WEBRTC)
                   for name in ("p1", "p2")]
        started += players
        racers = [host, *players]
        codes = {p.name: p.wait() for p in racers}
        assert codes == {"host": 0, "p1": 0, "p2": 0}, {p.name: p.events[-3:] for p in racers}
        results = {p.name: p.of("result")[0] for p in racers}
        assert {r["outcome"] for r in results.values()} == {"finished"}
        assert len({str(r["standings"]) for r in results.values()}) == 1
        assert all(r["agreed_hashes"] >= 1 and r["disagreements"] == 0 for r in results.values())
        for p in racers:  # the room's star and the mesh: every link over WebRTC, each reported once opened
            paths = p.of("link-path")
            assert len({e["peer"] for e in paths}) == 2 and {e["path"] for e in paths} == {"host"}
            assert all(e["rtt_ms"] is not None and e["rtt_ms"] >= 0 for e in paths)
        # the joiners' room links, unused by the race, closed as the room ended: no link-timeout in the race
        assert [e.get("reason") for e in host.of("member-left")] == ["room-ended", "room-ended"], host.of("member-left")
    finally:
        for node in started:
            node.kill()
        drain_service(service, "signal", 5)
