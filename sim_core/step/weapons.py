"""A push weapon's impulse on the cars it touches (spec/simcore.md §5.4 ``general_push``).

On a frame its Hold fires, a general weapon without actuators pushes every car touching it with
``+axis·E·0.002`` N·s, E its granted effect of the frame (J; ``sim_core.step.physics._skills``, which
also applies the recoil ``−axis·E·0.002`` to the pusher itself). A car touches the pusher when their
contact boxes (``Mechanics.contact_box``, centred on each car's arc and lateral offset) are within
5 mm of each other on every axis and it lies ahead along the pusher's axis. The touches are taken
after every car has moved and before contact, all from one snapshot, and every velocity change is
applied after all are known, so the result does not depend on the cars' order. Retired cars and
cars under a penalty (ghosts: mass 0) neither push nor are pushed.
"""

from __future__ import annotations

from typing import Final

from sim_core.constants import K_WEAPON_IMPULSE_PER_UJ
from sim_core.intmath import UNIT, around_loop, div_trunc
from sim_core.state.layout import ARC, H, LAT, VH, VLAT, VS
from sim_core.step.contact import ContactBox
from sim_core.step.model import CarModel

PUSH_REACH_UM: Final = 5_000
"""How far apart two contact boxes may be and still touch (5 mm)."""


def push(cars: list[list[int]], boxes: list[ContactBox], models: list[CarModel],
         pushes: dict[int, int], loop_length: int) -> None:
    """Apply ``pushes`` (car → its push weapon's effect this frame, µJ) to the cars each one touches."""
    kicks: dict[int, list[int]] = {}
    for a, energy in pushes.items():
        box_a = boxes[a]
        la, wa, ha, ma = box_a.length, box_a.width, box_a.height, box_a.mass
        axis = models[a].recoil_axis
        if not ma or axis is None:
            continue
        ax, ay, az = axis  # along the route axes (s, l, h), ppm
        per = energy * K_WEAPON_IMPULSE_PER_UJ  # along the whole unit axis
        ca = cars[a]
        for b, cb in enumerate(cars):
            box_b = boxes[b]
            lb, wb, hb, mb = box_b.length, box_b.width, box_b.height, box_b.mass
            if b == a or not mb:
                continue
            ds = around_loop(cb[ARC] - ca[ARC], loop_length)
            dl, dh = cb[LAT] - ca[LAT], cb[H] - ca[H]
            if (abs(ds) > (la + lb) // 2 + PUSH_REACH_UM or abs(dl) > (wa + wb) // 2 + PUSH_REACH_UM
                    or abs(dh) > (ha + hb) // 2 + PUSH_REACH_UM or ds * ax + dl * ay + dh * az <= 0):
                continue
            kick = kicks.setdefault(b, [0, 0, 0])
            kick[0] = kick[0] + div_trunc(per * ax, UNIT)
            kick[1] = kick[1] + div_trunc(per * ay, UNIT)
            kick[2] = kick[2] + div_trunc(per * az, UNIT)
    for b, (js, jl, jh) in kicks.items():
        mass, c = boxes[b].mass, cars[b]
        c[VS] = c[VS] + div_trunc(js, mass)
        c[VLAT] = c[VLAT] + div_trunc(jl, mass)
        c[VH] = c[VH] + div_trunc(jh, mass)
