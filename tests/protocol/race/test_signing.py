"""Frozen race signing digests (docs/race.md lists the same vectors) and the race message codec."""

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.encoding import dagcbor
from protocol.errors import LocalError
from protocol.identity.keys import Identity, race_id
from protocol.race.keys import announce
from protocol.race.messages import InputRecord, RaceRelay, RaceSnapshot
from protocol.race.setup import RaceSetup
from protocol.race.signing import (
    HOLD_SKILLS, INPUT_DOMAIN, NO_PREVIOUS_INPUT, SKILLS, canonical_events, catch_up_digest, checksum_digest, input_digest,
    key_digest, leave_digest,
)
from protocol.encoding.wire import decode_message, encode_message
from tests.protocol.race.harness import identities, make_setup
from tests.coded import raises_coded

MASTER = Identity(bytes([7]) * 32)
RACE = race_id("ab" * 32, 0)
KEY = MASTER.race_key(RACE)
EVENTS = canonical_events([("stabilize", True), ("boost", False)])


def test_race_key_vector():
    assert MASTER.peer_id == "z6MkvDqGT54cXesYGvABpF1UapVNwjCqRcafi4Px6Thv5T3Z"
    assert KEY.public_key.hex() == "5895ec9612f36c9583038b11b98bce87269f78126f82d233989ac180c4e8d747"
    digest = key_digest(RACE, MASTER.peer_id, KEY.public_key)
    assert digest.hex() == "c7c8eacbf9a0ed13f0868ace82d930dff586f54bc935e6bb70cc1b482a8ecf43"
    assert announce(MASTER, RACE).signature.hex() == (
        "27dce7db9e5baa37ea01a63a90fa39d9c94557f2ca6dac44a28a4a43f494c7ca"
        "19369865072a5e055417e7857383fe7e760d2520f2b9af4565f405f0a8ca6c01"
    )


def test_input_vectors():
    assert EVENTS == (("boost", False), ("stabilize", True))
    digest = input_digest(RACE, 42, EVENTS, NO_PREVIOUS_INPUT)
    assert digest.hex() == "48934608088de94dbec8adc1c969c285ef57bffd49a199c37c286cbf67e16784"
    assert KEY.sign(digest).hex() == (
        "d250372d23a596dcd59f1a98e29f17d700296dddc389034f8c641e36ae1b81df"
        "4588b1ee0f74924a812a850c73198cdda1a0efe6bd5f19c71893988c62c6570d"
    )
    chained = input_digest(RACE, 43, (), digest)  # the next input chains to this one
    assert chained.hex() == "ebdb5c49c2e064e766ced49e95809237ac2c3c2033d8c32d15e2cd9c61bfd22f"
    assert KEY.sign(chained).hex() == (
        "30c55f2c154b70964951d9b1ceffa0dec5aea176fbff471eff7968fbd2d48daf"
        "f5f6d138b4cbc86794caa78dd334947de3a801f54b7bc3131c72759215e5500d"
    )
    assert input_digest(race_id("ab" * 32, 1), 42, EVENTS, NO_PREVIOUS_INPUT) != digest  # bound to the round
    assert input_digest(RACE, 43, (), NO_PREVIOUS_INPUT) != chained  # and to the input before


def test_checksum_and_catch_up_vectors():
    digest = checksum_digest(RACE, 120, bytes(range(32)))
    assert digest.hex() == "07d41ea52180915da6473c20ea8c87c5aedbd07fad74c8e175457c850edc44f6"
    assert KEY.sign(digest).hex() == (
        "3ea3ce8b857d43782a558dd3f628d397633a5b410d3392207b342b565178422526"
        "abc78da1e6f6dab5746f67432d394f614ce81cda8f90a89fc50ef2bac2fe0e"
    )
    offer = catch_up_digest(RACE, "offer", 7, MASTER.peer_id, [(304, bytes(32)), (296, bytes([1]) * 32)])
    assert offer.hex() == "69a7205e1f2c4c54ed8967c2889ca28f03a279eedc557216fc57e6be610d6a0c"
    assert catch_up_digest(RACE, "probe", 7, MASTER.peer_id, []).hex() == (
        "1a6fdb13b9026dcb66279093e5c5791bcdcdfcb0b25444c1dd8be80709068469"
    )


def test_leave_vector():
    """``race-leave`` is signed by the race key over ``leave_digest``; the map is spelled out byte by byte
    (canonical DAG-CBOR: length-first key order), so the digest's recipe is pinned, not only its output."""
    import hashlib

    def text(value: str) -> bytes:
        data = value.encode()
        return (bytes([0x60 + len(data)]) if len(data) < 24 else bytes([0x78, len(data)])) + data

    body = (b"\xa4" + text("type") + text("race-leave") + text("domain") + text("open4wd-race-sign-v1")
            + text("raceId") + text(RACE) + text("reason") + text("voluntary"))
    digest = leave_digest(RACE, "voluntary")
    assert hashlib.sha256(body).digest() == digest
    assert digest.hex() == "e65fa03691deb78d6ab1030f08d6e85ac1415fdde1b734ec5642a3977b62f74a"
    assert KEY.sign(digest).hex() == (
        "c517b5d9078b363f05ee01758ac6799614d223f755efc36ada6fb939f2fe504b"
        "158ac7d1ed6ce6e88ce496d594e6780af4c7c97cabbc423276db828da2af140a"
    )
    assert leave_digest(RACE, "desync").hex() == "1dd224bc55f40c47a550e497bfb4bb3b1b1760c28892a9f9cd834a3e49de8575"
    assert leave_digest(race_id("ab" * 32, 1), "voluntary") != digest  # bound to the round


def test_skill_tables_match_the_simulation():
    from sim_core.specs.inputs import HOLD_SKILLS as SIM_HOLD
    from sim_core.specs.inputs import SKILLS as SIM_SKILLS

    assert SKILLS == SIM_SKILLS and HOLD_SKILLS == SIM_HOLD


def test_nested_messages_round_trip():
    record = InputRecord("zPeer", 3, [["weapon", True]], bytes(range(32)), bytes(64))
    for msg in (RaceRelay([record]), RaceSnapshot(1, 8, b"state", [record], bytes(64))):
        assert decode_message(encode_message(msg)) == msg


@pytest.mark.parametrize("change", [
    {"input_delay": 9}, {"max_prediction": -1}, {"max_prediction": True},
])
def test_setup_options_are_checked(change):
    with pytest.raises(LocalError) as err:
        make_setup(identities(2), **change)
    assert err.value.code == "race-setup-invalid"


def test_setup_roster_is_checked():
    good = make_setup(identities(2))
    for slots in ({next(iter(good.slots)): 0}, dict.fromkeys(good.slots, 0)):
        with raises_coded(LocalError, "race-setup-invalid"):
            RaceSetup(good.match_id, 0, slots, good.skills, good.loadouts, good.grid_context_digest, good.grid_seed)


def test_setup_from_a_locked_start_takes_the_round_s_slots_cars_and_grid():
    from types import SimpleNamespace

    from protocol.room.locked_start import LockedStart
    from protocol.race.setup import loadout_digest

    peers = [i.peer_id for i in identities(3)]
    cars = {p: [{"car": f"{p[-4:]}-{r}"} for r in range(2)] for p in peers}
    locked = LockedStart(
        match_id="ab" * 32, started_at=0, countdown_deadline=5000, roster=peers, config=None,
        declarations={p: SimpleNamespace(car_rotation=cars[p]) for p in peers},
        grid_seed=bytes(range(32)), grid_context_digest=bytes(32), digest="", package={},
    )
    skills = {p: frozenset({"boost"}) for p in peers}
    first, second = (RaceSetup.from_locked_start(locked, r, skills, input_delay=1) for r in (0, 1))
    assert first.slots == locked.slots(0) and second.slots == locked.slots(1) and first.slots != second.slots
    assert second.loadouts == {p: loadout_digest(cars[p][1]) for p in peers}
    assert first.grid_seed == bytes(range(32)).hex() and first.grid_context_digest == "00" * 32
    assert second.round_index == 1 and second.input_delay == 1 and second.match_id == "ab" * 32


@given(
    race_id=st.text(min_size=1, max_size=80),
    frame=st.integers(min_value=-(2**40), max_value=2**40),
    events=st.lists(st.tuples(st.sampled_from(SKILLS), st.booleans()), max_size=8, unique_by=lambda e: e[0]),
    prev=st.binary(min_size=32, max_size=32),
)
def test_the_assembled_input_digest_is_the_dag_cbor_of_the_whole_map(race_id, frame, events, prev):
    """``input_digest`` assembles its bytes from cached parts: they are exactly those of the map."""
    canonical = canonical_events(events)
    whole = {"type": "race-input", "raceId": race_id, "frame": frame, "events": [list(e) for e in canonical],
             "domain": INPUT_DOMAIN, "prev": prev}
    assert input_digest(race_id, frame, canonical, prev) == hashlib.sha256(dagcbor.encode(whole)).digest()
