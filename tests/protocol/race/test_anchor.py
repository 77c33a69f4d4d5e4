"""Round end and the consensus anchor: one quorum certificate per round, the same on every node."""

import pytest

from protocol.identity.consensus import latest_final_frame
from protocol.errors import ProtocolError
from protocol.race.actions import AnchorDecided
from protocol.race.anchor import AnchorFacts, AnchorRound, anchor_event, verify_anchor
from protocol.race.messages import RaceAnchorProposal, RaceAnchorSignature
from protocol.race.setup import LOCAL_LEDGER_ADDRESS
from tests.protocol.race.harness import Mesh, RoundEnded, identities
from tests.coded import raises_coded


def test_every_node_certifies_the_same_anchor_at_round_end():
    mesh = Mesh(4, seed=31, length=500)
    mesh.run_to_end()
    mesh.run(1000)
    events = []
    for peer in mesh.peers:
        assert [r.frame for r in mesh.of(peer, RoundEnded)] == [500]
        (decided,) = mesh.of(peer, AnchorDecided)
        verify_anchor(decided.event, LOCAL_LEDGER_ADDRESS)
        events.append({k: v for k, v in decided.event.items() if k != "signatures"})
    assert all(e == events[0] for e in events)
    event = events[0]
    assert event["frame"] == latest_final_frame(500) == 480 and event["peerId"] == min(mesh.peers)
    assert event["presentPeers"] == sorted(mesh.peers) and event["roundIndex"] == 0


def _facts(peers, checksum="aa" * 32):
    return AnchorFacts("ab" * 32, "cd" * 32, "5e" * 32, 0, 500, {360: "11" * 32, 480: checksum}, tuple(peers))


def test_fallback_proposer_timeout_and_once_per_round():
    ids = identities(3)
    peers = [i.peer_id for i in ids]
    second = AnchorRound(ids[1], _facts(peers), LOCAL_LEDGER_ADDRESS, 0)
    assert second.tick(1999) == []  # the first peer's slot
    proposal = [a for a in second.tick(2000) if hasattr(a, "message") and isinstance(a.message, RaceAnchorProposal)]
    assert len(proposal) == 2 and proposal[0].message.event["peerId"] == peers[1]
    # having signed its own proposal, it signs no other anchor of this round
    late = anchor_event(_facts(peers), 360, peers[0], 1)
    assert second.on_proposal(peers[0], RaceAnchorProposal(late)) == []
    decided = [a for a in second.tick(12_000) if isinstance(a, AnchorDecided)]
    assert decided == [AnchorDecided(0, None)]


def test_signers_refuse_a_proposal_that_differs_from_their_view():
    ids = identities(3)
    peers = [i.peer_id for i in ids]
    signer = AnchorRound(ids[1], _facts(peers), LOCAL_LEDGER_ADDRESS, 0)
    wrong_checksum = anchor_event(_facts(peers, "bb" * 32), 480, peers[0], 5)
    not_final = dict(anchor_event(_facts(peers), 480, peers[0], 5), frame=240)
    other_sender = anchor_event(_facts(peers), 480, peers[2], 5)
    for event, sender, code in ((wrong_checksum, peers[0], "race-anchor-disagrees"),
                                (not_final, peers[0], "race-anchor-disagrees"), (other_sender, peers[0], "race-anchor-invalid")):
        with raises_coded(ProtocolError, code):
            signer.on_proposal(sender, RaceAnchorProposal(event))
    good = anchor_event(_facts(peers), 480, peers[0], 5)
    sends = signer.on_proposal(peers[0], RaceAnchorProposal(good))
    assert {s.peer for s in sends} == {peers[0], peers[2]}
    assert all(isinstance(s.message, RaceAnchorSignature) for s in sends)


def test_a_certificate_without_quorum_or_with_a_forged_signature_is_refused():
    mesh = Mesh(4, seed=32, length=300)
    mesh.run_to_end()
    mesh.run(1000)
    event = mesh.of(mesh.peers[0], AnchorDecided)[0].event
    short = dict(event, signatures=event["signatures"][:2])
    with pytest.raises(ProtocolError) as err:
        verify_anchor(short, LOCAL_LEDGER_ADDRESS)
    assert err.value.code == "race-anchor-no-quorum"
    forged = dict(event, checksum="00" * 32)
    with pytest.raises(ProtocolError) as err:
        verify_anchor(forged, LOCAL_LEDGER_ADDRESS)
    assert err.value.code == "race-anchor-bad-signature"
    with raises_coded(ProtocolError, "race-anchor-bad-signature"):
        verify_anchor(event, "/orbitdb/another-chain")
