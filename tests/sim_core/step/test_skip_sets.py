"""The step's skip sets and broad phases never skip work that changes a result:

- the thermal pass skips the cold parts (``Mechanics.cold_plan``) while ``cold_parts_still`` holds: for
  any temperatures and heat, the pass with the skip gives what the full solve of every part gives;
- a loaded state whose cold parts are warm (a peer's snapshot, a file) steps exactly as a world that
  solves every part every frame, and so does a world that restores its own states after such a load;
- contact's broad phase (``_near_pairs``) leaves out only pairs of cars too far apart along the route to
  overlap.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sim_core import World
from sim_core.constants import MAX_TEMPERATURE_MC, MIN_TEMPERATURE_MC
from sim_core.state.layout import P_TEMP, part_field
from sim_core.step.contact import _near_pairs
from sim_core.step.model import CarModel
from sim_core.step.thermal import cold_parts_still, settle


from tests.sim_core.circuit import circuit_track
from tests.sim_core.helpers import archetype, code_round
from tests.sim_core.step.test_step_golden import HardInputs

TRACK = circuit_track()
MODELS = [CarModel(archetype(slot), TRACK) for slot in range(3)]
TEMPERATURES = st.one_of(st.integers(MIN_TEMPERATURE_MC, MAX_TEMPERATURE_MC), st.integers(15_000, 30_000))


class FullSolve(World):
    """A world whose thermal pass solves every live part every frame (the rules as written)."""

    def step(self, inputs=None):
        self._cold_still = [False] * len(self._cars)
        super().step(inputs)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(3)), st.data())
def test_the_cold_skip_changes_nothing_the_full_solve_computes(kind, data):
    model = MODELS[kind]
    mech = model.mechanics(data.draw(st.sampled_from([0, 1 << model.body, 1 << model.tire_parts[0]])))
    c = World.new(TRACK, [archetype(kind)])._cars[0]
    for part in range(model.part_count):
        c[part_field(part, P_TEMP)] = data.draw(TEMPERATURES)
    heat = [0] * model.part_count
    for part in model.heated_parts:
        if part not in model.tire_parts:
            heat[part] = data.draw(st.integers(0, 10**12))
    loads = [(data.draw(st.integers(0, 10**12)), data.draw(st.integers(0, 10**18)), data.draw(st.integers(0, 10**15)))
             for _ in mech.tire_groups]
    full = list(c)
    still = cold_parts_still(c, mech)
    assert settle(c, model, mech, heat, loads, still) == settle(full, model, mech, heat, loads, False)
    assert c == full
    if still:  # and the skip stays right the next frame
        assert cold_parts_still(c, mech)


def warm_snapshot() -> bytes:
    """A mid-race state of the code round with warm cold parts, as a peer's snapshot could be: car 0's
    one step above its still band (one solve brings it in), odd cars' far outside their bands (one above
    the chassis's limit), the other cars' at the top of their bands (warm, yet nothing to solve)."""
    w = code_round(8, seed=5)
    inputs = HardInputs(w, 5)
    for _ in range(200):
        w.step(inputs.next_frame())
    for slot, (c, model) in enumerate(zip(w._cars, w.models, strict=True)):
        for plan in model.mechanics(0).cold_plan:
            c[plan.temp_at] = 25_000 + 9_000 * slot + 1_000 * plan.part if slot % 2 else plan.still_high
    body = w.models[0].mechanics(0).cold_plan[0]
    w._cars[0][body.temp_at] = body.still_high + 1
    c = w._cars[3]
    c[part_field(w.models[3].chassis, P_TEMP)] = (w.models[3].thermal_limit[w.models[3].chassis] or 0) + 10_000
    return w.codec.pack(w._world, w._cars)


def test_a_warm_loaded_state_steps_as_the_full_solve():
    data = warm_snapshot()
    fast, full = code_round(8, seed=5), FullSolve(circuit_track(), tuple(archetype(s) for s in range(8)), 5)
    fast.load_state(data)
    full.load_state(data)
    assert fast._cold_still == [False, False, True, False, True, False, True, False]
    inputs = HardInputs(fast, 6)
    saved = []
    for _ in range(400):
        frame = inputs.next_frame()
        saved.append((fast.save_state(), frame))
        fast.step(frame)
        full.step(frame)
        assert fast._cars == full._cars, fast.frame
        assert fast._cold_still[0]  # car 0's part was solved into its band in the first frame
    # a rollback to an own state saved while the cold parts were still warm: asked again, not trusted
    old, frame = saved[1]
    fast.restore_own_state(old)
    full.restore_own_state(old)
    assert not all(fast._cold_still)
    for _ in range(60):
        fast.step(frame)
        full.step(frame)
        assert fast._cars == full._cars


ARCS = st.integers(-3_000_000, 3_000_000)


@settings(max_examples=500, deadline=None)
@given(st.lists(ARCS, min_size=1, max_size=8), st.integers(1, 400_000),
       st.sampled_from([0, 200_000, 250_000, 1_000_000, 40_000_000]))
def test_the_broad_phase_leaves_out_only_pairs_too_far_apart(arcs, reach, loop):
    arcs = [a % loop for a in arcs] if loop else arcs  # contact's positions within the lap
    pairs = _near_pairs(arcs, reach, loop)
    assert pairs == sorted(set(pairs)) and all(i < j for i, j in pairs)
    for i in range(len(arcs)):
        for j in range(i + 1, len(arcs)):
            gap = abs(arcs[j] - arcs[i])
            if loop:
                gap = min(gap, loop - gap)
            assert ((i, j) in pairs) == (gap < reach), (i, j, gap)


def test_a_cold_part_whose_limit_is_below_the_air_breaks_on_its_first_solve():
    """A code-built body rated below the track's air temperature (no material of the table is: the
    lowest limit is 80 °C, the air at most 40 °C) sits above its limit from the grid: it is never taken
    for still, and breaks in the first frame as the full solve breaks it."""
    from dataclasses import replace

    from sim_core.state.layout import BROKEN_MASK

    spec = archetype(0)
    parts = tuple(replace(p, thermal_limit_mc=15_000) if p.part_type == "body" else p for p in spec.parts)
    body = [p.part_type for p in parts].index("body")
    fast = World.new(TRACK, [replace(spec, parts=parts)])
    full = FullSolve(TRACK, (replace(spec, parts=parts),), 0)
    assert fast._cold_still == [False]
    fast.step({})
    full.step({})
    assert fast._cars == full._cars and fast._cars[0][BROKEN_MASK] == 1 << body


def test_the_physics_heats_only_the_parts_the_thermal_pass_calls_heated():
    """The cold-part skip rests on this: a part outside ``CarModel.heated_parts`` never gets heat. A
    mechanism that heats another part (an active weapon's Hold, a fluid, an impact: the physics issue)
    must add it to ``heated_parts``, or the skip would drop that heat; this test says so first. Seen from
    the state, against the compiled step as against the sources: in a world that solves every part every
    frame (``FullSolve``) such heat would move the part off the air temperature it starts at (a part
    exchanges heat with the air only, never with another part), and the world with the skip would part
    from it."""
    fast = code_round(6, seed=3)  # two active weapons held often (HardInputs), boosts, slams, stabilises
    full = FullSolve(circuit_track(), tuple(archetype(slot) for slot in range(6)), 3)
    temps = [[(part, part_field(part, P_TEMP)) for part in range(model.part_count)] for model in full.models]
    start = [[c[at] for _, at in parts] for c, parts in zip(full._cars, temps, strict=True)]
    inputs = HardInputs(fast, 3)
    heated_frames = 0
    for _ in range(240):
        before = [[c[at] for _, at in parts] for c, parts in zip(full._cars, temps, strict=True)]
        frame = inputs.next_frame()
        fast.step(frame)
        full.step(frame)
        assert fast._cars == full._cars, fast.frame
        now = [[c[at] for _, at in parts] for c, parts in zip(full._cars, temps, strict=True)]
        for model, parts, first, temperatures in zip(full.models, temps, start, now, strict=True):
            cold = [k for k, (part, _) in enumerate(parts) if part not in model.heated_parts]
            assert [temperatures[k] for k in cold] == [first[k] for k in cold], full.frame
        heated_frames += now != before
    assert heated_frames > 120  # the check saw heat, not an idle race
