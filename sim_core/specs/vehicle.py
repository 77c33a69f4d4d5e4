"""``VehicleSpec``: the race-time description of one assembled car, as exact integers.

The asset pipeline converts baked part manifests plus a loadout into a ``VehicleSpec``; ``World.demo``
builds them in code. Units: mass µg, length µm, power mW, energy mJ, heat capacity mJ/°C, ambient
conductance µW/°C, temperature milli-°C. Parts are kept in the canonical ``partIndex`` order (chassis,
body, motor, battery, tires FL FR RL RR, rollers FL FR CL CR RL RR, chip, weapon); the constructor sorts
them so callers need not. Validation raises ``SimError`` with stable ``vehicle-*`` codes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NoReturn, get_args

from sim_core.errors import SimError
from sim_core.specs.inputs import SKILLS
from sim_core.specs.items import check_all, is_unit_e6, is_vector
from sim_core.specs.magnets import CAR_OFFSET_MAX_UM, MagnetPole, SteelPoint
from sim_core.specs.materials import material

PartType = Literal["chassis", "body", "motor", "battery", "tire", "roller", "chip", "weapon"]
WeaponMode = Literal["passive", "active"]
WeaponMechanism = Literal["push", "rotor", "launch", "magnet"]
"""An active weapon's mechanism: ``general`` without actuators is the push, with them the rotors."""
PART_TYPES: tuple[PartType, ...] = get_args(PartType)
"""Part types in partIndex order. Like ``WeaponMode``, plain strings typed as ``Literal`` (not enums): they
are fields of ``VehicleSpec``, whose ``repr`` is hashed into the state's topology digest."""
TIRE_SLOTS = ("FL", "FR", "RL", "RR")
ROLLER_SLOTS = ("FL", "FR", "CL", "CR", "RL", "RR")
LEFT_ROLLER_SLOTS = ("FL", "CL", "RL")
RIGHT_ROLLER_SLOTS = ("FR", "CR", "RR")
WEAPON_MODES: tuple[WeaponMode, ...] = get_args(WeaponMode)
WEAPON_MECHANISMS: tuple[WeaponMechanism, ...] = get_args(WeaponMechanism)
VEHICLE_MASS_MIN_UG, VEHICLE_MASS_MAX_UG = 50_000_000, 500_000_000
PART_MASS_RATIO_MAX = 300
VEHICLE_AABB_MAX_UM = {"length_um": 250_000, "width_um": 130_000, "height_um": 100_000}
K_PASSIVE_EFFECT_MAX_PCT = 30
WEAR_CAPACITY_MAX_MJ = 9_000_000
"""9 kJ: keeps the tire-wear remainder (capacity × 1e12) inside a signed 64-bit state field."""


def _fail(code: str, message: str) -> NoReturn:
    raise SimError(code, message)


def _is_int(value: object, low: int, high: int | None = None) -> bool:
    return type(value) is int and value >= low and (high is None or value <= high)


AERO_AXES = ("positiveX", "negativeX", "positiveY", "negativeY", "positiveZ", "negativeZ")
"""The six signed local axes of a body's aero, in the manifest's and ``AeroSpec``'s order."""
AERO_AREA_MAX_UM2 = 1_000_000_000_000
"""1 m²: no face of a part inside the 1 m part box projects more."""
CONTACT_AREA_MAX_UM2 = 100_000_000_000_000
"""100 m²: a bound on a tire's or roller's contact area (a six-way area summed over up to 32 proxies, layered faces
counted each), which keeps the contact conductance's integers bounded."""
LIFT_FACTOR_MAX_MILLI = 1000
STEEL_POINTS_MAX = 32
"""A part has at most 32 collider proxies (``MAX_PROXIES_PER_PART``), so at most 32 passive sub-meshes."""


@dataclass(frozen=True, slots=True)
class AeroSpec:
    """A body's baked aero (spec/assets.md ``auto_aero``): the drag area (µm²) of each signed local axis
    in the order +X, −X, +Y, −Y, +Z, −Z (the faces that face that way), each axis' centre of pressure
    (µm, part frame) and ``lift_factor_milli`` (> 0 downforce, < 0 lift; |·| ≤ 1000).

    The route-frame step reads the areas and the lift factor; the COPs are kept for the rigid-body
    model (docs/sim.md "Aero": without rotation a force's point of application changes nothing)."""

    drag_area_um2: tuple[int, int, int, int, int, int]
    center_of_pressure_um: tuple[tuple[int, int, int], ...]
    lift_factor_milli: int = 0

    def validate(self, what: str) -> None:
        """``SimError`` ``vehicle-invalid-aero`` unless every area is an int in 0..1 m², there are six
        integer COPs and the lift factor is an int in −1000..1000."""
        if not (isinstance(self.drag_area_um2, tuple) and len(self.drag_area_um2) == 6
                and all(_is_int(a, 0, AERO_AREA_MAX_UM2) for a in self.drag_area_um2)):
            _fail("vehicle-invalid-aero", f"{what}: drag_area_um2 must be six ints in 0..{AERO_AREA_MAX_UM2} µm²")
        cops = self.center_of_pressure_um
        if not (isinstance(cops, tuple) and len(cops) == 6 and all(
                isinstance(p, tuple) and len(p) == 3 and all(type(x) is int for x in p) for p in cops)):
            _fail("vehicle-invalid-aero", f"{what}: center_of_pressure_um must be six (x, y, z) int triples")
        if not _is_int(self.lift_factor_milli, -LIFT_FACTOR_MAX_MILLI, LIFT_FACTOR_MAX_MILLI):
            _fail("vehicle-invalid-aero", f"{what}: lift_factor_milli must be an int in ±{LIFT_FACTOR_MAX_MILLI}")


@dataclass(frozen=True, slots=True)
class PartSpec:
    """One part with its baked values.

    - ``slot``: mount position for tires (FL FR RL RR) and rollers (FL FR CL CR RL RR), "" otherwise.
    - ``mass_ug``: baked mass (µg); ``material``: the part's main material id (contacts, wear).
    - ``heat_capacity_mj_per_c`` = Σ m·c; ``ambient_conductance_uw_per_c`` = H_air;
      ``thermal_limit_mc`` = weakest sub-mesh limit (None: never breaks from heat).
    - ``radius_um``: tire/roller radius; ``wear_capacity_mj``: tire wear capacity (tires only).
    - ``aero``: a body's baked aero (bodies only; None = no aero, as for code-built test cars).
    - ``steel``: the part's passive magnetic sub-meshes (``SteelPoint``, at most one per collider proxy).
    - ``contact_area_um2``: a tire's baked contact area with the track, its six-way ``bottom`` area (the
      faces the track's normal meets), or a roller's with its wall, its ``left`` or ``right`` area by its
      slot's side; for the contact conductance of the heat solve (0 for other parts).
    """

    part_type: PartType
    mass_ug: int
    material: str
    heat_capacity_mj_per_c: int
    ambient_conductance_uw_per_c: int
    thermal_limit_mc: int | None
    slot: str = ""
    radius_um: int = 0
    wear_capacity_mj: int = 0
    aero: AeroSpec | None = None
    steel: tuple[SteelPoint, ...] = ()
    contact_area_um2: int = 0

    def validate(self, what: str) -> None:
        """``SimError`` (``vehicle-invalid-part``, ``vehicle-invalid-material``, ``vehicle-invalid-slot``,
        ``vehicle-invalid-magnet``, ``unknown-material``) unless the part is a legal part of its type; ``what``
        names it in the message."""
        if self.part_type not in PART_TYPES:
            _fail("vehicle-invalid-part", f"{what}: part_type must be one of {', '.join(PART_TYPES)}")
        if not _is_int(self.mass_ug, 1):
            _fail("vehicle-invalid-part", f"{what}: mass_ug must be a positive int")
        material(self.material)
        if not material(self.material).usable_on_vehicle(self.part_type):
            _fail("vehicle-invalid-material", f"{what}: material {self.material} is not allowed on a {self.part_type}")
        if not _is_int(self.heat_capacity_mj_per_c, 1) or not _is_int(self.ambient_conductance_uw_per_c, 0):
            _fail("vehicle-invalid-part", f"{what}: heat capacity must be > 0 and conductance ≥ 0 (ints)")
        if self.thermal_limit_mc is not None and type(self.thermal_limit_mc) is not int:
            _fail("vehicle-invalid-part", f"{what}: thermal_limit_mc must be an int or None")
        wheel = self.part_type in ("tire", "roller")
        slots = TIRE_SLOTS if self.part_type == "tire" else ROLLER_SLOTS if self.part_type == "roller" else ("",)
        if self.slot not in slots:
            _fail("vehicle-invalid-slot", f"{what}: slot must be one of {slots}")
        if wheel != _is_int(self.radius_um, 1):
            _fail("vehicle-invalid-part", f"{what}: radius_um > 0 exactly for tires and rollers")
        if (self.part_type == "tire") != _is_int(self.wear_capacity_mj, 1, WEAR_CAPACITY_MAX_MJ):
            _fail("vehicle-invalid-part", f"{what}: wear_capacity_mj in 1..{WEAR_CAPACITY_MAX_MJ} exactly for tires")
        if not _is_int(self.contact_area_um2, 0, CONTACT_AREA_MAX_UM2) or (self.contact_area_um2 and not wheel):
            _fail("vehicle-invalid-part",
                  f"{what}: contact_area_um2 must be an int in 0..{CONTACT_AREA_MAX_UM2} µm², and 0 but on a tire or roller")
        if self.aero is not None:
            if self.part_type != "body" or not isinstance(self.aero, AeroSpec):
                _fail("vehicle-invalid-aero", f"{what}: only a body carries aero (an AeroSpec)")
            self.aero.validate(what)
        check_all(self.steel, SteelPoint, STEEL_POINTS_MAX, "vehicle-invalid-magnet", f"{what}.steel")

    @property
    def order_key(self) -> tuple[int, int]:
        """Canonical partIndex order: by part type, then by mount slot."""
        slots = TIRE_SLOTS if self.part_type == "tire" else ROLLER_SLOTS
        return PART_TYPES.index(self.part_type), slots.index(self.slot) if self.slot else 0


def baked_part(
    part_type: PartType,
    mass_ug: int,
    material_id: str,
    exposed_area_mm2: int,
    *,
    slot: str = "",
    radius_um: int = 0,
    volume_mm3: int = 0,
) -> PartSpec:
    """A single-material part with its thermal and wear values derived exactly from the material table.

    C = m·c; H_air = A·80·(0.25 + 0.75·min(k, 50)/50); wear capacity = volume·ultimate strength (tires).
    The asset pipeline bakes these from sub-meshes; this helper serves code-built cars (demo, tests).
    Raises ``SimError``: ``unknown-material``, or ``vehicle-invalid-material`` for a material without
    thermal data; the returned ``PartSpec`` is checked when a ``VehicleSpec`` is built from it.
    """
    mat = material(material_id)
    if mat.specific_heat_j_kgk is None or mat.conductivity_mw_mk is None:
        _fail("vehicle-invalid-material", f"{material_id} has no thermal data and cannot be a vehicle part")
    heat_capacity = mass_ug * mat.specific_heat_j_kgk // 1_000_000
    k_capped = min(mat.conductivity_mw_mk, 50_000)
    conductance = exposed_area_mm2 * 80 * (250 * 50_000 + 750 * k_capped) // (1000 * 50_000)
    wear = volume_mm3 * (mat.ultimate_strength_kpa or 0) // 1000 if part_type == "tire" else 0
    return PartSpec(part_type, mass_ug, material_id, max(1, heat_capacity), conductance,
                    mat.thermal_limit_mc, slot, radius_um, wear)


@dataclass(frozen=True, slots=True)
class MotorSpec:
    """``torque_ratio_pct`` (0…100: torque vs top-speed split) and ``auto_input_mw`` (motor intake cap)."""

    torque_ratio_pct: int
    auto_input_mw: int


@dataclass(frozen=True, slots=True)
class BatterySpec:
    """``configured_output_mw`` (full-charge output) and ``energy_capacity_mj`` (initial_q = 60 × mJ)."""

    configured_output_mw: int
    energy_capacity_mj: int


@dataclass(frozen=True, slots=True)
class ChipSlot:
    """One chip slot: a skill name (see ``sim_core.specs.inputs.SKILLS``) and its allocation_pct (1…100)."""

    skill: str
    allocation_pct: int


LAUNCH_AMMO_MAX = 8
"""LAUNCH_AMMO_COUNT_MAX: the bullets of one launch weapon."""
BULLET_MASS_MAX_UG = 100_000_000  # a bullet is part of a car of at most 500 g: at most 100 g
ROTOR_MAX = 8
"""MAX_WEAPON_DRIVEN_PIVOTS: the actuators (rotors and arms) of one weapon."""
ROTOR_MASS_MAX_UG = 500_000_000  # a rotor is part of a car of at most 500 g
ROTOR_REACH_MAX_UM = 250_000  # within the car's 0.25 m box
FULL_TURN_MDEG = 360_000


@dataclass(frozen=True, slots=True)
class LaunchAmmo:
    """One bullet of a launch weapon, held on the car until released (``sim_core.step.launch``): its mass,
    its material (restitution and friction when it strikes or slides) and its centroid ``offset_um`` from
    the car's centre in the car's frame (x right, y up, z back), where it starts its flight."""

    mass_ug: int
    material: str
    offset_um: tuple[int, int, int]

    def validate(self, what: str) -> None:
        """``SimError`` ``vehicle-invalid-weapon`` unless every field is in range."""
        if type(self.mass_ug) is not int or not 1 <= self.mass_ug <= BULLET_MASS_MAX_UG:
            _fail("vehicle-invalid-weapon", f"{what}: mass_ug must be an int in 1..{BULLET_MASS_MAX_UG}")
        if not isinstance(self.material, str):
            _fail("vehicle-invalid-weapon", f"{what}: material must be a material id")
        material(self.material)  # unknown-material
        if not is_vector(self.offset_um, CAR_OFFSET_MAX_UM):
            _fail("vehicle-invalid-weapon", f"{what}: offset_um must be three ints within ±{CAR_OFFSET_MAX_UM} µm")


@dataclass(frozen=True, slots=True)
class RotorSpec:
    """One actuator of a ``general`` weapon with actuators (``sim_core.step.rotors``): the body it turns
    (a rigid rotor, or a chain taken as one body) as a disc about its axis. ``pivot_um``: the pivot's
    offset from the car's centre and ``axis_e6`` its rotation axis (unit, ppm), both in the car's frame (x
    right, y up, z back); ``mass_ug`` and ``inertia``, the body's moment of inertia about the axis
    (µg·µm²); ``reach_um``, how far from the axis its farthest point lies, and ``span_um``, the body's
    extent along the axis (lowest, highest; from the pivot); ``material`` the body's (its restitution when
    it strikes); ``weight_milli`` its ``speed_weight``;
    ``max_angle_mdeg`` (360 000: turns continuously; less: swings between 0 and that angle),
    ``phase_mdeg`` its ``phase_offset_deg`` and ``curve`` its ``motion_curve``."""

    pivot_um: tuple[int, int, int]
    axis_e6: tuple[int, int, int]
    mass_ug: int
    inertia: int
    reach_um: int
    span_um: tuple[int, int]
    material: str
    weight_milli: int = 1000
    max_angle_mdeg: int = FULL_TURN_MDEG
    phase_mdeg: int = 0
    curve: Literal["sin", "linear"] = "sin"

    def validate(self, what: str) -> None:
        """``SimError`` ``vehicle-invalid-weapon`` unless every field is in range."""
        if not is_vector(self.pivot_um, CAR_OFFSET_MAX_UM) or not is_unit_e6(self.axis_e6):
            _fail("vehicle-invalid-weapon", f"{what}: pivot_um must be three ints within ±{CAR_OFFSET_MAX_UM} µm "
                                            "and axis_e6 a unit vector (ppm)")
        if not _is_int(self.mass_ug, 1, ROTOR_MASS_MAX_UG) or not _is_int(self.reach_um, 1, ROTOR_REACH_MAX_UM):
            _fail("vehicle-invalid-weapon", f"{what}: mass_ug must be an int in 1..{ROTOR_MASS_MAX_UG} and reach_um "
                                            f"in 1..{ROTOR_REACH_MAX_UM}")
        if not _is_int(self.inertia, 1, self.mass_ug * self.reach_um * self.reach_um):
            _fail("vehicle-invalid-weapon", f"{what}: inertia must be an int in 1..mass·reach² (µg·µm²)")
        span = self.span_um
        if (not isinstance(span, tuple) or len(span) != 2 or not all(_is_int(x, -ROTOR_REACH_MAX_UM, ROTOR_REACH_MAX_UM)
                                                                     for x in span) or span[0] > span[1]):
            _fail("vehicle-invalid-weapon", f"{what}: span_um must be (low, high) within ±{ROTOR_REACH_MAX_UM} µm")
        if not isinstance(self.material, str):
            _fail("vehicle-invalid-weapon", f"{what}: material must be a material id")
        material(self.material)  # unknown-material
        if (not _is_int(self.weight_milli, 0, 1_000_000) or not _is_int(self.max_angle_mdeg, 1_000, FULL_TURN_MDEG)
                or not _is_int(self.phase_mdeg, 0, FULL_TURN_MDEG) or self.curve not in ("sin", "linear")):
            _fail("vehicle-invalid-weapon", f"{what}: weight_milli 0..1e6, max_angle_mdeg 1000..360000, "
                                            "phase_mdeg 0..360000 and curve sin or linear")


@dataclass(frozen=True, slots=True)
class WeaponSpec:
    """``mode`` passive/active; ``passive_weight_split_pct`` (0…100, passive only: mass vs resistance);
    an active weapon's ``mechanism`` and ``axis_e6`` (its Axis +Z in the car's frame: x right, y up, z back;
    a unit vector, ppm), both None for a passive weapon and for a code-built active one that only pays its
    Hold; ``magnet``: an active magnet weapon's pole (None for every other weapon); ``ammo``: a launch
    weapon's bullets in firing order (the glTF children order of its main mesh node), empty for every other;
    ``rotors``: a rotor weapon's actuators (empty for every other, and for a code-built rotor weapon that
    only recoils)."""

    mode: WeaponMode
    passive_weight_split_pct: int = 50
    magnet: MagnetPole | None = None
    mechanism: WeaponMechanism | None = None
    axis_e6: tuple[int, int, int] | None = None
    ammo: tuple[LaunchAmmo, ...] = ()
    rotors: tuple[RotorSpec, ...] = ()


@dataclass(frozen=True, slots=True)
class VehicleSpec:
    """One car: parts (canonical order), motor, battery, chip slots, optional weapon and its AABB (µm).

    ``length_um`` (along −Z), ``width_um`` (X) and ``height_um`` (Y) are the assembled vehicle AABB; the
    route-frame model uses them as the car's contact box.
    """

    vehicle_id: str
    parts: tuple[PartSpec, ...]
    motor: MotorSpec
    battery: BatterySpec
    length_um: int
    width_um: int
    height_um: int
    chip_slots: tuple[ChipSlot, ...] = ()
    weapon: WeaponSpec | None = None

    def __post_init__(self) -> None:
        if isinstance(self.parts, tuple) and all(isinstance(p, PartSpec) for p in self.parts):
            for i, part in enumerate(self.parts):
                part.validate(f"parts[{i}]")
            object.__setattr__(self, "parts", tuple(sorted(self.parts, key=lambda p: p.order_key)))
        self.validate()

    def validate(self) -> None:
        """Every assembly rule the step relies on; raises ``SimError`` on the first failure."""
        if not isinstance(self.vehicle_id, str) or not self.vehicle_id:
            _fail("vehicle-invalid-id", "vehicle_id must be a non-empty string")
        if not isinstance(self.parts, tuple) or not all(isinstance(p, PartSpec) for p in self.parts):
            _fail("vehicle-invalid-part", "parts must be a tuple of PartSpec")
        self._check_part_counts()
        self._check_energy()
        self._check_chip()
        self._check_mass_and_size()

    def _check_part_counts(self) -> None:
        keys = [p.order_key for p in self.parts]
        if len(set(keys)) != len(keys):
            _fail("vehicle-duplicate-part", "each part type (and tire/roller slot) may appear only once")
        count = {t: sum(1 for p in self.parts if p.part_type == t) for t in PART_TYPES}
        for single in ("chassis", "body", "motor", "battery"):
            if count[single] != 1:
                _fail("vehicle-missing-part", f"a car needs exactly one {single}")
        if count["tire"] != 4:
            _fail("vehicle-missing-part", "a car needs exactly 4 tires (FL, FR, RL, RR)")
        if count["weapon"] and not count["chip"]:
            _fail("vehicle-weapon-requires-chip", "a weapon needs a chip")
        if (self.weapon is not None) != bool(count["weapon"]):
            _fail("vehicle-invalid-weapon", "give a WeaponSpec exactly when the car has a weapon part")

    def _check_energy(self) -> None:
        if not isinstance(self.motor, MotorSpec) or not isinstance(self.battery, BatterySpec):
            _fail("vehicle-invalid-energy", "motor must be a MotorSpec and battery a BatterySpec")
        if not _is_int(self.motor.torque_ratio_pct, 0, 100) or not _is_int(self.motor.auto_input_mw, 1):
            _fail("vehicle-invalid-energy", "torque_ratio_pct must be 0..100 and auto_input_mw > 0 (ints)")
        if not _is_int(self.battery.configured_output_mw, 1) or not _is_int(self.battery.energy_capacity_mj, 1):
            _fail("vehicle-invalid-energy", "configured_output_mw and energy_capacity_mj must be positive ints")

    def _check_chip(self) -> None:
        if not isinstance(self.chip_slots, tuple) or not all(isinstance(s, ChipSlot) for s in self.chip_slots):
            _fail("vehicle-invalid-chip", "chip_slots must be a tuple of ChipSlot")
        skills = [s.skill for s in self.chip_slots]
        if any(s not in SKILLS for s in skills) or len(set(skills)) != len(skills):
            _fail("vehicle-invalid-chip", f"chip skills must be unique and among {', '.join(SKILLS)}")
        if any(not _is_int(s.allocation_pct, 1, 100) for s in self.chip_slots):
            _fail("vehicle-invalid-chip", "allocation_pct must be an int in 1..100")
        if sum(s.allocation_pct for s in self.chip_slots) > 100:
            _fail("vehicle-invalid-chip", "chip allocations may total at most 100 %")
        if self.chip_slots and not any(p.part_type == "chip" for p in self.parts):
            _fail("vehicle-invalid-chip", "chip slots need a chip part")
        weapon = self.weapon
        if weapon is not None:
            if weapon.mode not in WEAPON_MODES or not _is_int(weapon.passive_weight_split_pct, 0, 100):
                _fail("vehicle-invalid-weapon", "weapon mode passive/active and split 0..100")
            if weapon.magnet is not None:
                if weapon.mechanism != "magnet" or not isinstance(weapon.magnet, MagnetPole):
                    _fail("vehicle-invalid-magnet", "only an active magnet weapon carries a magnet (a MagnetPole)")
                weapon.magnet.validate("weapon.magnet")
            if (weapon.mechanism is None) != (weapon.axis_e6 is None) or (
                    weapon.mechanism is not None and (weapon.mode != "active" or weapon.mechanism not in WEAPON_MECHANISMS)):
                _fail("vehicle-invalid-weapon", f"an active weapon's mechanism ({', '.join(WEAPON_MECHANISMS)}) "
                                                "comes with its axis, a passive weapon has neither")
            if weapon.axis_e6 is not None and not is_unit_e6(weapon.axis_e6):
                _fail("vehicle-invalid-weapon", "weapon.axis_e6 must be a unit vector (three ints, ppm)")
            check_all(weapon.ammo, LaunchAmmo, LAUNCH_AMMO_MAX, "vehicle-invalid-weapon", "weapon.ammo")
            if (weapon.mechanism == "launch") != bool(weapon.ammo):
                _fail("vehicle-invalid-weapon", f"a launch weapon has 1..{LAUNCH_AMMO_MAX} bullets, any other none")
            check_all(weapon.rotors, RotorSpec, ROTOR_MAX, "vehicle-invalid-weapon", "weapon.rotors")
            if weapon.rotors and weapon.mechanism != "rotor":
                _fail("vehicle-invalid-weapon", "only a rotor weapon has rotors")

    def _check_mass_and_size(self) -> None:
        masses = self.effective_masses_ug
        total = sum(masses)
        if not VEHICLE_MASS_MIN_UG <= total <= VEHICLE_MASS_MAX_UG:
            _fail("vehicle-mass-out-of-range", f"total effective mass {total} µg is outside 50..500 g")
        if max(masses) > PART_MASS_RATIO_MAX * min(masses):
            _fail("vehicle-mass-ratio", "heaviest / lightest part mass exceeds 300")
        for name, limit in VEHICLE_AABB_MAX_UM.items():
            if not _is_int(getattr(self, name), 1, limit):
                _fail("vehicle-aabb-too-large", f"{name} must be an int in 1..{limit}")

    def allocation_pct(self, skill: str) -> int:
        """The chip allocation of ``skill`` (0 when the chip has no such slot)."""
        return next((s.allocation_pct for s in self.chip_slots if s.skill == skill), 0)

    @property
    def chip_skills(self) -> tuple[str, ...]:
        """The skills of the chip's slots, in slot order."""
        return tuple(s.skill for s in self.chip_slots)

    @property
    def passive_mass_reduction_x100(self) -> int:
        """massReductionPctX100 of a passive weapon (0 without one)."""
        if self.weapon is None or self.weapon.mode != "passive":
            return 0
        return self.allocation_pct("weapon") * self.weapon.passive_weight_split_pct * K_PASSIVE_EFFECT_MAX_PCT // 100

    @property
    def passive_resist_x100(self) -> int:
        """resistPctX100 of a passive weapon: scales the weapon's fatigue gain and positive heat inflow."""
        if self.weapon is None or self.weapon.mode != "passive":
            return 0
        split = 100 - self.weapon.passive_weight_split_pct
        return self.allocation_pct("weapon") * split * K_PASSIVE_EFFECT_MAX_PCT // 100

    @property
    def effective_masses_ug(self) -> tuple[int, ...]:
        """Per-part masses after the passive weapon's static mass reduction (weapon part only)."""
        reduction = self.passive_mass_reduction_x100
        return tuple(
            p.mass_ug * (10_000 - reduction) // 10_000 if p.part_type == "weapon" else p.mass_ug for p in self.parts
        )

    @property
    def total_mass_ug(self) -> int:
        """Total effective mass (µg)."""
        return sum(self.effective_masses_ug)
