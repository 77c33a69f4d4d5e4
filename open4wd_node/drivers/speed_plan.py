"""How fast a car may be at each route sample so that the route ahead stays drivable.

Built once per route (integer math, ~10 ms for a 100 m track) and then read with one index per frame.
Each sample gets a *cap* from its own curvature — lateral: ``v² · κ`` must stay within ``LATERAL_GRIP``
so the tires hold the line instead of sliding into the wall; vertical: on a crest ``v² · |κ|`` must stay
below half the gravity pressing the car onto the ribbon, or it lifts off and can sail over a wall — and
then a backward pass lets speed fall at most ``SHED`` per metre towards the next cap, so the profile
starts asking for less speed early enough to brake before a sharp curve.
"""

from __future__ import annotations

from sim_core.intmath import isqrt
from sim_core.specs.route import Route

CURVE = 10**12  # route curvature unit: (1/µm)·1e12
LATERAL_GRIP = 3_000_000  # µm/s²: a conservative share of tire grip (μ ≈ 0.6 → ~6 m/s²)
LIFT_SHARE = 2  # keep v²·|κ| under 1/2 of the gravity component along the surface normal
SHED = 2_000_000  # µm/s²: speed the car can lose per distance (rolling loss plus brake presses)
UNLIMITED = 1 << 40


def _cap(route: Route, i: int) -> int:
    cap = UNLIMITED
    k_lat = abs(route.k_lateral[i])
    if k_lat:
        cap = min(cap, isqrt(LATERAL_GRIP * CURVE // k_lat))
    k_vert, pressing = route.k_vertical[i], -route.g_up[i]
    if k_vert < 0 and pressing > 0:
        cap = min(cap, isqrt(pressing * CURVE // (LIFT_SHARE * -k_vert)))
    return cap


def speed_profile(route: Route) -> list[int]:
    """Allowed speed (µm/s) per sample index; a loop's profile wraps over the start line."""
    n = route.count + 1
    caps = [_cap(route, i) for i in range(n)]
    allowed = caps[:]
    laps = 2 if route.loop else 1  # a loop is walked twice: the caps after the line carry back over it
    for _ in range(laps):
        for i in range(n - 2, -1, -1):
            ds = route.arc[i + 1] - route.arc[i]
            nxt = allowed[i + 1]
            reachable = isqrt(nxt * nxt + 2 * SHED * ds) if nxt < UNLIMITED else UNLIMITED
            allowed[i] = min(caps[i], reachable)
        if route.loop:
            allowed[n - 1] = allowed[0]
    return allowed
