"""Bounded redundancy (docs/race.md, "Input spans" and "A race never hangs"): a ``race-inputs`` carries
each input once since the receiver's acknowledgement, as a compact span whose every input keeps its own
signature over its own chained digest (frozen vectors), within a message's caps; a 4-node race sends a
quarter of what every-unacknowledged-input messages cost, and keeps real time over links capped at
32 KiB/s (protocol time: nothing here depends on the machine's speed)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.encoding.wire import decode_message, encode_message
from protocol.identity.ed25519 import PublicKey
from protocol.identity.keys import Identity, race_id
from protocol.race.inputs import PeerInputs
from protocol.race.keys import verify_race_signature
from protocol.race.messages import MAX_SENT_BYTES, MAX_SENT_INPUTS, RaceInput, RaceInputs, Want
from protocol.race.signing import NO_PREVIOUS_INPUT, SKILLS, canonical_events, input_digest
from protocol.race.spans import build_span, merge_inputs, skills_mask, span_entries
from protocol.race.streams import InputStreams
from tests.protocol.race.harness import TICK_MS, Mesh, Send, own_span

MASTER = Identity(bytes([7]) * 32)
RACE = race_id("ab" * 32, 0)
KEY = MASTER.race_key(RACE)
HELD = canonical_events([("stabilize", True), ("boost", False)])
SPAN_BODY = (
    "84a474797065ab726163652d696e70757473a361636b29a57370616e739195a02ac42000000000000000000000000000000000000000"
    "0000000000000000000000000092920141920240c4c0d250372d23a596dcd59f1a98e29f17d700296dddc389034f8c641e36ae1b81df"
    "4588b1ee0f74924a812a850c73198cdda1a0efe6bd5f19c71893988c62c6570d030b5522473dc29e548e36efed37710f7ba026eec13d"
    "c53c3549c01ec602339fa6a67c76fb81fa68102d6e09a7fdb78c55bed8d9f857a697ac57b9153e5aa60d3e197f7557ec05c12ccf4d21"
    "35316d6f53521ac592889938267f629fdf27a23be269d58322cdc3615b1989cd0a6facbbd36f9f319ea21907078d2e0597448908a477"
    "616e749192d9307a364d6b76447147543534635865735947764142704631556170564e776a4371526361666934507836546876355433"
    "5a28"
)
SPAN_DIGESTS = (
    "48934608088de94dbec8adc1c969c285ef57bffd49a199c37c286cbf67e16784",  # = the input vector of docs/race.md
    "27a5f9d05f7efd0cb85b6d232568987594acfc5db12dcbd48262570fa9eacfcf",
    "51fb361ad44820ed2e937953a15051828ffabee759bedf3ea42f98c5e39e8746",
)


def test_a_span_s_frozen_bytes_and_the_inputs_it_expands_to():
    """Frames 42–44 of the vector key: boost + stabilize, then stabilize held twice (two runs), ``prev``
    zeros; an ack of 41 and a want of the same PeerId's inputs from 40 on. The receiver chains each
    ``prev`` itself; every expanded input verifies alone, and its digest is the one frozen here."""
    events = [HELD, (("stabilize", True),), (("stabilize", True),)]
    prev, signatures, digests = NO_PREVIOUS_INPUT, [], []
    for frame, frame_events in enumerate(events, start=42):
        digest = input_digest(RACE, frame, frame_events, prev)
        digests.append(digest.hex())
        signatures.append(KEY.sign(digest))
        prev = digest
    span = build_span("", 42, NO_PREVIOUS_INPUT, events, signatures)
    assert span.runs == [(1, 0b1000001), (2, 0b1000000)] and span.count == 3
    message = RaceInputs(41, [span], [Want(MASTER.peer_id, 40)])
    assert encode_message(message).hex() == SPAN_BODY and decode_message(bytes.fromhex(SPAN_BODY)) == message
    assert tuple(digests) == SPAN_DIGESTS
    prev = span.prev
    for (frame, frame_events, signature), digest in zip(span_entries(span, frozenset(SKILLS)), SPAN_DIGESTS, strict=True):
        assert input_digest(RACE, frame, frame_events, prev).hex() == digest
        assert verify_race_signature(PublicKey(KEY.public_key), bytes.fromhex(digest), signature)
        prev = bytes.fromhex(digest)


def test_a_skill_mask_is_the_spec_s_skill_order_with_each_skill_s_hold_flag():
    assert skills_mask(HELD) == 0b1000001 and skills_mask(()) == 0
    assert [(1 << i) for i in range(8)] == [skills_mask([(s, False)]) for s in SKILLS]


def held_inputs(events: list[tuple[tuple[str, bool], ...]], first: int = 0) -> PeerInputs:
    """A buffer holding this node's signed inputs of ``events`` from frame ``first``."""
    buffer, prev = PeerInputs(), NO_PREVIOUS_INPUT
    for frame, frame_events in enumerate(events, start=first):
        digest = input_digest(RACE, frame, frame_events, prev)
        buffer.add(frame, frame_events, RaceInput(frame, [list(e) for e in frame_events], prev, KEY.sign(digest)), digest)
        prev = digest
    return buffer


EVENTS = st.lists(st.sampled_from([(), HELD, (("stabilize", True),), (("weapon", True), ("boost", False))]),
                  min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(events=EVENTS, acked=st.integers(-1, 70), owner=st.sampled_from(["me", "zFar" + "x" * 44]))
def test_a_message_never_exceeds_its_caps_and_sends_each_input_once(events, acked, owner):
    me = "me"
    inputs = {me: held_inputs(events), owner: held_inputs(events)} if owner != me else {me: held_inputs(events)}
    streams = InputStreams(me, ["peer"], inputs, {me: 0, owner: 0, "peer": 0})
    streams.acknowledge("peer", acked, 0)
    if owner != me:
        streams.want("peer", {owner: acked}, 0)
    sent: list[int] = []
    for now in range(0, 100 * TICK_MS, TICK_MS):  # the peer acknowledges nothing more: each input goes once
        message = streams.message("peer", 5, [Want(owner, 3)] if owner != me else [], [owner], now % 150)
        body = encode_message(message)
        assert len(body) <= MAX_SENT_BYTES and sum(s.count for s in message.spans) <= MAX_SENT_INPUTS
        sent += [s.frame + i for s in message.spans if s.owner == "" for i in range(s.count)]
    expected = list(range(min(max(acked + 1, 0, len(events) - 33), len(events)), len(events)))
    assert sent == expected


def test_two_messages_of_one_tick_join_and_a_gap_does_not():
    events = [HELD] * 6
    buffer = held_inputs(events)
    signatures = [buffer.signed[f].signature for f in range(6)]
    first = RaceInputs(1, [build_span("", 0, buffer.signed[0].prev, events[:2], signatures[:2])], [])
    second = RaceInputs(2, [build_span("", 2, b"", events[2:4], signatures[2:4])], [])
    joined = merge_inputs(first, second)
    assert joined is not None and joined.ack == 2 and joined.spans[0].runs == [(4, skills_mask(HELD))]
    gap = RaceInputs(2, [build_span("", 5, b"", events[5:], signatures[5:])], [])
    assert merge_inputs(first, gap) is None


def bytes_and_pace(cap: int | None, frames: int = 900, seed: int = 3) -> tuple[float, float, Mesh]:
    """A 4-node race over links capped at ``cap`` bytes a second: the bytes one node sends one peer per
    second of race (frames included), and frames raced per pump tick (1.0: real time)."""
    mesh = Mesh(4, seed=seed, length=frames, bytes_per_s=cap)
    mesh.run_to_end()
    links = 4 * 3
    return (sum(mesh.sent_bytes.values()) / links / (mesh.now / 1000),
            min(mesh.sessions[p].current_frame for p in mesh.peers) / (mesh.now / TICK_MS), mesh)


def test_a_clean_four_node_race_sends_each_input_once_in_small_messages():
    rate, pace, mesh = bytes_and_pace(None)
    assert pace > 0.97 and rate < 10 * 1024  # every unacknowledged input in every message: about 36 KB/s
    assert all(mesh.sessions[p].stats.redundant_inputs == 0 for p in mesh.peers)
    spans = [own_span(a.message) for p in mesh.peers for a in mesh.actions[p] if isinstance(a, Send)]
    assert max(s.count for s in spans if s is not None) <= 2  # one new input a message, two when a tick stepped two


def test_a_four_node_race_keeps_real_time_over_links_capped_at_32_kib_a_second():
    rate, pace, mesh = bytes_and_pace(32 * 1024)
    assert pace > 0.97 and rate < 0.3 * 32 * 1024
    assert len({mesh.state(p) for p in mesh.peers}) == 1 and not any(mesh.ended(p) for p in mesh.peers)
