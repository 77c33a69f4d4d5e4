"""Spec constants (spec/simcore.md §3) converted once into the integer units of the step.

Internal units: length µm, velocity µm/s, mass µg, impulse µg·µm/s (= 1e-15 N·s), power mW,
energy quanta q = 1/60 mJ, temperature milli-°C, heat in "thermal units" tu = 1/60 nJ (so that one
frame of 1 µW is 1 tu·1000 and the backward-Euler solve stays in integers).
"""

from typing import Final

FPS: Final = 60
"""FIXED_FRAMERATE_HZ: dt = exactly 1/60 s."""

# Energy (§4.2): P mW for one frame = P quanta.
QUANTA_PER_MJ: Final = 60

# Drive (§4.3): K_TORQUE_FROM_W = 0.0002 N·m/W, K_SPEED_FROM_W = 0.015 (m/s)/W.
# torque impulse per frame [µg·µm/s] = P_mw · ratio · 1e11 / (3 · r_um)
TORQUE_IMPULSE_NUM: Final = 100_000_000_000
TORQUE_IMPULSE_DEN: Final = 3
# top speed [µm/s] = P_mw · (100 − ratio) · 3 / 20
TOP_SPEED_NUM: Final = 3
TOP_SPEED_DEN: Final = 20
# K_ROLLING_RESISTANCE = 1e-4 applied to rr_tire·rr_surface (milli × milli = 1e-6): / 1e10
ROLLING_DEN: Final = 10_000_000_000

# Skills (§5.2, §5.3). Effect energy in µJ = budget_mw · effect_frames · 50 / 3.
EFFECT_UJ_NUM: Final = 50
EFFECT_UJ_DEN: Final = 3
COST_FRAMES: Final = {"boost": 3600, "brake": 1800, "jump": 3600, "slam": 3600,
                      "swerve_left": 1, "swerve_right": 1, "stabilize": 1, "weapon": 1}
EFFECT_FRAMES: Final = {"boost": 60, "brake": 60, "jump": 60, "slam": 60,
                        "swerve_left": 1, "swerve_right": 1, "stabilize": 1, "weapon": 1}
LAUNCH_FIRE_INTERVAL_FRAMES: Final = 15  # LAUNCH_FIRE_INTERVAL_MS 250: a launcher's release pays and acts 15 frames' worth
# K_BOOST/BRAKE/JUMP/SLAM = 0.00065 N·s/J → 650 000 µg·µm/s per µJ; K_SWERVE = 0.0008 → 800 000.
K_EVENT_IMPULSE_PER_UJ: Final = 650_000
K_SWERVE_IMPULSE_PER_UJ: Final = 800_000
# K_WEAPON 0.002 N·s/J (spec §5.4: a push's impulse, a release's impulse on its bullet, and every weapon's recoil).
K_WEAPON_IMPULSE_PER_UJ: Final = 2_000_000
# K_WEAPON_ROTOR_SPEED 0.1 (rad/s)/W (spec §5.4): a rotor's target ω = P·0.1·w/Σw. With P = E·60 (E the
# Hold's granted effect of a frame, µJ, so P in µW), ω in µrad/s = E·60·0.1 = E·6 before the weight share.
ROTOR_SPEED_PER_UJ: Final = 6
# K_STABILIZE = 0.5 per J: damping in milli-(1/s) = E_uJ / 2000.
STABILIZE_UJ_PER_MILLI: Final = 2000

# Thermal (§7.1). Heat per frame in thermal units (tu = 1/60 nJ): 1 W for one frame = 1e9 tu.
TU_PER_QUANTUM: Final = 1_000_000  # 1 q = 1/60 mJ = 1e6 · (1/60 nJ)
MOTOR_HEAT_TU_PER_MW: Final = 200_000  # K_MOTOR_HEAT 0.2 · 1 mW · 1 frame
BATTERY_PASSIVE_TU_PER_MW: Final = 150_000  # K_BATTERY_PASSIVE 0.15
BATTERY_SKILL_TU_PER_Q: Final = 20_000  # K_BATTERY_SKILL_WASTE_HEAT 0.02 of the battery cost
CHIP_SKILL_TU_PER_Q: Final = 1_000  # K_CHIP_SKILL_WASTE_HEAT 0.001
# slip heat |T·slip| (K_THERMAL_SLIP = 1): impulse·speed is 1e-21 J = 6e-11 tu
SLIP_HEAT_NUM: Final = 6
SLIP_HEAT_DEN: Final = 100_000_000_000
THERMAL_C_TU: Final = 60_000  # C [mJ/°C] · T [m°C] → tu
# tire and roller contact conductance (step/model.Contact): 2e-5 · (2·e1·e2/(e1 + e2))/1000 [√kρc, e in thousandths]
# · A·1e-12 [µm²] · N·1e-15 [N·s] in nW/°C (·1e9) = ⌊N/10⁹⌋ [µN·s] · (4·e1·e2·A / ((e1 + e2)·10⁸)) / 10⁹
CONTACT_FACTOR_DEN: Final = 100_000_000
CONTACT_NORMAL_UNIT: Final = 1_000_000_000  # 1e-15 N·s → µN·s, and the factor's scale
MIN_TEMPERATURE_MC: Final = -273_150
MAX_TEMPERATURE_MC: Final = 5_000_000

# Tire wear (§7.3): Ew in nJ; fatigue_ppm = Ew_nJ · (1 + 2r²) / cap_mJ.
WEAR_NJ_DEN: Final = 1_000_000_000_000  # impulse·speed (1e-21 J) → nJ
SLIP_WEAR_MULT: Final = 4
MIN_TIRE_WEAR_SPEED_UM_S: Final = 1_000
FATIGUE_BREAK_PPM: Final = 1_000_000
R_SCALE: Final = 1_000_000  # r in ppm; (1 + 2r²) carries a 1e12 denominator

# Track rules (§6).
START_GRID_CELL_UM: Final = 180_000
START_GRID_LIFT_UM: Final = 50_000
FINISH_PLANE_EPS_UM: Final = 1_000
FINISH_LATERAL_EPS_UM: Final = 1_000
FALL_OUT_MARGIN_UM: Final = 5_000_000
CONTACT_HYSTERESIS_FRAMES: Final = 6  # 100 ms
PENALTY_DECEL_FRAMES: Final = 60  # 1.0 s
PENALTY_FADE_FRAMES: Final = 36  # 0.6 s
ENDGAME_MAX_FRAMES: Final = 120
ENDGAME_SETTLED_FRAMES: Final = 15
DISABLED_SPEED_MAX_UM_S: Final = 50_000  # 0.05 m/s

# Landing: bounces slower than this settle on the surface.
LANDING_SETTLE_UM_S: Final = 50_000
