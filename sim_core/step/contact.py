"""Car-to-car contact in the route frame, independent of the order in which cars are listed.

Each car is its AABB aligned with the route (length along s, width along right, height along up). Every
overlapping pair (i < j) is resolved from the same pre-contact snapshot along its axis of least
penetration (s, then lateral on ties): an impulse (1 + e)·m_eff·v_close with e = Average of the two bodies'
restitution, and a positional split of the overlap in inverse proportion to mass. Corrections are summed
per car and applied after all pairs, so the result does not depend on pair order.
"""

from __future__ import annotations

from sim_core.intmath import div_round
from sim_core.state.layout import ARC, H, LAT, VLAT, VS


def resolve(cars: list[list[int]], boxes: list[tuple[int, int, int, int, int]], loop_length: int) -> None:
    """``boxes[k]`` = (length, width, height, mass µg, restitution ‰) of car k, or mass 0 if it takes no part."""
    moves: dict[int, list[int]] = {}
    # on a loop, positions within the lap: the gap of two of them is then brought into the wrapped range
    # [−L/2, L − L/2) by at most one ±L, with two comparisons instead of a modulo per pair
    arcs = [c[ARC] % loop_length for c in cars] if loop_length else [c[ARC] for c in cars]
    lengths = [box[0] for box in boxes]
    half_loop = loop_length // 2
    upper = loop_length - half_loop
    for i, j in _near_pairs(arcs, max(lengths), loop_length):
        li, wi, hi, mi, ei = boxes[i]
        if not mi:
            continue
        ci = cars[i]
        ds = arcs[j] - arcs[i]
        if loop_length:
            if ds >= upper:
                ds -= loop_length
            elif ds < -half_loop:
                ds += loop_length
        pen_s = (li + lengths[j]) // 2 - (ds if ds >= 0 else -ds)
        if pen_s <= 0:
            continue
        lj, wj, hj, mj, ej = boxes[j]
        if not mj:
            continue
        cj = cars[j]
        dl = cj[LAT] - ci[LAT]
        pen_l = (wi + wj) // 2 - abs(dl)
        if pen_l <= 0 or abs(cj[H] - ci[H]) >= (hi + hj) // 2:
            continue
        axis, gap, pen = (VS, ds, pen_s) if pen_s <= pen_l else (VLAT, dl, pen_l)
        sign = 1 if gap >= 0 else -1  # direction from i to j along the axis
        closing = (ci[axis] - cj[axis]) * sign
        total = mi + mj
        impulse = 0
        if closing > 0:
            impulse = div_round((1000 + (ei + ej) // 2) * closing * mi * mj, 1000 * total)
        push_i = pen * mj // total
        move_i = moves.setdefault(i, [0, 0, 0, 0])
        move_j = moves.setdefault(j, [0, 0, 0, 0])
        slot = 0 if axis == VS else 1
        move_i[slot] -= sign * push_i
        move_j[slot] += sign * (pen - push_i)
        move_i[2 + slot] -= sign * impulse  # impulses become velocity changes below
        move_j[2 + slot] += sign * impulse
    for k in sorted(moves):
        c, (d_arc, d_lat, j_s, j_l) = cars[k], moves[k]
        mass = boxes[k][3]
        c[ARC] += d_arc
        c[LAT] += d_lat
        c[VS] += div_round(j_s, mass)
        c[VLAT] += div_round(j_l, mass)


def _near_pairs(arcs: list[int], reach: int, loop_length: int) -> list[tuple[int, int]]:
    """The broad phase: the pairs (i < j, in order) of cars nearer than ``reach`` (the longest car) along
    the route, from one sort of their positions (on a loop also across the lap's start). Two boxes
    overlap along the route only if their gap is under half the sum of their lengths, so every pair left
    out has nothing to resolve, and the pairs kept are resolved in the order of the full i < j loop."""
    count = len(arcs)
    order = sorted(range(count), key=arcs.__getitem__)
    pairs = []
    for a in range(count):
        i = order[a]
        arc_i = arcs[i]
        for b in range(a + 1, count):
            j = order[b]
            if arcs[j] - arc_i >= reach:
                break
            pairs.append((i, j) if i < j else (j, i))
    if loop_length:  # across the start of the lap: the last cars of the lap behind the first ones
        for a in range(count - 1, 0, -1):
            i = order[a]
            ahead = arcs[i] - loop_length  # the car's position one lap back, behind the lap's start
            if arcs[order[0]] - ahead >= reach:
                break
            for b in range(a):
                j = order[b]
                if arcs[j] - ahead >= reach:
                    break
                pairs.append((i, j) if i < j else (j, i))
        pairs = list(set(pairs))  # on a short loop a pair can be near both ways round
    pairs.sort()
    return pairs
