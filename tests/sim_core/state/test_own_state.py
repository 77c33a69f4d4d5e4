"""Trust in saved states: ``restore_own_state`` takes only this world's own bytes and skips the range
checks; ``load_state`` validates bytes of any origin; an unchanged state's bytes are reused."""

import hashlib
import struct

import pytest

from open4wd_base.errors import LocalError
from sim_core.harness.corrupt import nudge
from sim_core import SkillEvent
from sim_core.errors import SimError
from sim_core.harness.scripted import RandomInputs
import sim_core.state.codec as codec_module
from sim_core.state.codec import HEADER

from tests.sim_core.helpers import code_round, packed
from tests.coded import raises_coded


def raced(frames: int = 40, cars: int = 4):
    world = code_round(cars, seed=5)
    inputs = RandomInputs([m.chip_skills for m in world.models], 5)
    for _ in range(frames):
        world.step(inputs.next_frame())
    return world, inputs


def with_status(world, data: bytes, slot: int, value: int) -> bytes:
    """``data`` with car ``slot``'s status set to ``value`` (the header stays this world's own)."""
    offset = HEADER.size + 8 * world.field_names().index(f"car[{slot}].status")
    return data[:offset] + struct.pack("<q", value) + data[offset + 8:]


def test_a_rollback_restores_exactly_and_re_steps_identically():
    world, inputs = raced()
    data = world.save_state()
    frames = [inputs.next_frame() for _ in range(10)]
    for frame in frames:
        world.step(frame)
    after = world.save_state()
    world.restore_own_state(data)
    assert world.frame == 40 and packed(world) == data
    for frame in frames:
        world.step(frame)
    assert world.save_state() == after


def test_own_bytes_are_not_range_checked_but_a_peer_s_are():
    world, _ = raced()
    doctored = with_status(world, world.save_state(), 1, 7)  # no such status
    with pytest.raises(SimError) as err:
        world.load_state(doctored)
    assert err.value.code == "state-invalid"
    world.restore_own_state(doctored)  # the caller vouches for them: restored as they are
    assert world.car_state(1)["status"] == 7


@pytest.mark.parametrize("foreign", ["other-world", "short", "bytearray", "text"])
def test_restore_refuses_what_cannot_be_this_world_s_own_bytes_as_the_caller_s_bug(foreign):
    world, _ = raced()
    data = world.save_state()
    other = code_round(3).save_state()
    candidate = {"other-world": other, "short": data[:-8], "bytearray": bytearray(data), "text": "state"}[foreign]
    before = world.save_state()
    with pytest.raises(LocalError) as err:
        world.restore_own_state(candidate)
    assert err.value.code == "state-not-own" and world.save_state() == before


def test_state_hash_reuses_the_saved_bytes_and_follows_every_change():
    world, inputs = raced()
    data = world.save_state()
    assert world.save_state() is data  # unchanged state: the same bytes, not packed again
    assert world.state_hash() == hashlib.sha256(data).digest()
    world.step(inputs.next_frame())
    stepped = world.save_state()
    assert stepped != data and world.state_hash() == hashlib.sha256(stepped).digest()
    nudge(world, 0)
    assert world.save_state() != stepped  # a fault is a change too
    world.load_state(data)
    assert world.state_hash() == hashlib.sha256(data).digest() and world.save_state() == data
    world.restore_own_state(stepped)
    assert world.state_hash() == hashlib.sha256(stepped).digest()


def test_a_loaded_bytearray_is_copied_not_kept():
    world, _ = raced()
    buffer = bytearray(world.save_state())
    original = bytes(buffer)
    world.load_state(buffer)
    buffer[HEADER.size] ^= 0xFF  # the caller reuses its buffer
    assert world.save_state() == original == packed(world)


def test_a_refused_step_forgets_the_saved_bytes_so_atomicity_stays_measurable():
    world, _ = raced()
    before = world.save_state()
    with raises_coded(SimError, "input-unknown-skill"):
        world.step({0: [SkillEvent("teleport", False)]})
    after = world.save_state()
    assert after is not before and after == before  # packed afresh, and nothing changed



@pytest.mark.parametrize("little_endian", [True, False])
def test_restores_of_recent_old_and_copied_own_bytes_are_all_exact(monkeypatch, little_endian):
    """A restore decodes exactly what was saved, whether through the memoryview (a little-endian
    machine) or ``struct`` (the other order), for a recent save, an old one and an equal copy, and a
    restored state re-steps exactly as the original did."""
    monkeypatch.setattr(codec_module, "NATIVE_LITTLE_ENDIAN", little_endian)
    world, inputs = raced()
    saves, frames = [], [inputs.next_frame() for _ in range(20)]
    for frame in frames:
        saves.append(world.save_state())
        world.step(frame)
    final = packed(world)
    for start, data in [(0, saves[0]), (len(saves) - 3, saves[-3]), (len(saves) - 3, bytes(bytearray(saves[-3])))]:
        world.restore_own_state(data)
        assert packed(world) == saves[start] and world.frame == 40 + start
        for frame in frames[start:]:
            world.step(frame)
        assert packed(world) == final


def test_an_own_state_restores_exactly_as_often_as_asked_and_packs_to_the_saved_bytes():
    world, inputs = raced()
    own = world.save_own()  # before any save_state of this frame: no bytes yet
    expected = world.save_state()
    frames = [inputs.next_frame() for _ in range(10)]
    for frame in frames:
        world.step(frame)
    after = world.save_state()
    for _ in range(2):  # the steps after a restore leave the saved state as it was
        world.restore_own(own)
        assert world.frame == 40 and packed(world) == expected
        for frame in frames:
            world.step(frame)
        assert world.save_state() == after
    assert world.pack_own(own) == expected and world.pack_own(own) is world.pack_own(own)  # packed once


def test_an_own_state_saved_after_a_save_reuses_its_bytes():
    world, _ = raced()
    data = world.save_state()
    own = world.save_own()
    assert world.pack_own(own) is data
    world.restore_own(own)
    assert world.save_state() is data and world.state_hash() == hashlib.sha256(data).digest()


def test_only_this_world_s_own_states_are_restored_or_packed():
    world, _ = raced()
    before = world.save_state()
    for call, state in [(world.restore_own, before), (world.pack_own, before),
                        (world.restore_own, code_round(2, seed=5).save_own())]:  # another world's
        with pytest.raises(LocalError) as err:
            call(state)
        assert err.value.code == "state-not-own"
    assert world.save_state() == before
