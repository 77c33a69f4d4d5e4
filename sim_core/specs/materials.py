"""The 31 Open4WD materials as exact integers, in the canonical (consensus) order of the table.

Values are read from the packaged ``data/materials.csv`` and quantised exactly (decimal → integer, a
value that does not fit its scale is a load error), so that nothing float-valued reaches the step.
Scales: density in kg/m³ (= mg/cm³), strengths in kPa, friction / restitution / rolling resistance /
susceptibility in thousandths, conductivity in mW/(m·K), specific heat in J/(kg·K), thermal limit in
milli-°C, deploy parameters in thousandths.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from importlib import resources

from sim_core.errors import SimError

VEHICLE_SCOPE = "vehicle"
ENVIRONMENT_SCOPE = "environment"
MAGNETISM_ROLES = ("none", "passive", "source")
DEPLOY_BEHAVIORS = ("grip_loss", "sticky", "freeze", "burn", "corrosive")
MATERIAL_COUNT = 31


@dataclass(frozen=True, slots=True)
class Material:
    """One row of the material table as exact integers (scales in the module docstring); ``index`` is its
    position in the canonical order."""

    index: int
    id: str
    forbidden_scopes: tuple[str, ...]
    allowed_part_types: tuple[str, ...]
    density_kg_m3: int
    yield_strength_kpa: int | None
    ultimate_strength_kpa: int | None
    friction_milli: int
    restitution_milli: int
    conductivity_mw_mk: int | None
    specific_heat_j_kgk: int | None
    thermal_limit_mc: int | None
    magnetism_role: str
    susceptibility_milli: int | None
    rolling_resistance_milli: int
    is_fluid: bool
    deploy_behavior: str | None
    deploy_params_milli: tuple[tuple[str, int], ...]

    @property
    def exchange_factor_milli(self) -> int:
        """The spec's ``thermalExchangeFactor`` √(k·ρ·c) (SI) in thousandths, floored: ⌊√(k_mW·ρ·c·1000)⌋ with
        k in mW/(m·K) (k·ρ·c·10⁶ = (1000·√(kρc))²). 0 for a material without conductivity or specific heat
        (it exchanges no heat by contact)."""
        if self.conductivity_mw_mk is None or self.specific_heat_j_kgk is None:
            return 0
        return math.isqrt(self.conductivity_mw_mk * self.density_kg_m3 * self.specific_heat_j_kgk * 1000)

    def usable_on_vehicle(self, part_type: str) -> bool:
        """Scope rule: allowed iff vehicle is not forbidden or the part type is whitelisted."""
        return VEHICLE_SCOPE not in self.forbidden_scopes or part_type in self.allowed_part_types

    def usable_on_track(self) -> bool:
        """Scope rule: a track may use it unless the environment scope is forbidden."""
        return ENVIRONMENT_SCOPE not in self.forbidden_scopes


def _scaled(text: str, scale: int, field: str, row: str) -> int:
    try:
        value = Decimal(text) * scale
    except InvalidOperation as exc:
        raise SimError("material-table-invalid", f"{row}.{field}: {text!r} is not a number") from exc
    if value != value.to_integral_value():
        raise SimError("material-table-invalid", f"{row}.{field}: {text} does not fit a 1/{scale} scale")
    return int(value)


def _optional(text: str, scale: int, field: str, row: str) -> int | None:
    return None if text in ("", "null") else _scaled(text, scale, field, row)


def _split(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.replace(";", " ").split() if part)


def _deploy_params(text: str, row: str) -> tuple[tuple[str, int], ...]:
    if not text:
        return ()
    params = json.loads(text, parse_float=Decimal, parse_int=Decimal)
    return tuple((key, _scaled(str(params[key]), 1000, key, row)) for key in sorted(params))


def _parse_row(index: int, row: dict[str, str]) -> Material:
    mid = row["id"]
    if row["is_fluid"] not in ("true", "false"):
        raise SimError("material-table-invalid", f"{mid}.is_fluid must be true or false")
    return Material(
        index=index,
        id=mid,
        forbidden_scopes=_split(row["forbidden_scopes"]),
        allowed_part_types=_split(row["allowed_part_types"]),
        density_kg_m3=_scaled(row["density_g_cm3"], 1000, "density", mid),
        yield_strength_kpa=_optional(row["yield_strength_mpa"], 1000, "yield_strength", mid),
        ultimate_strength_kpa=_optional(row["ultimate_strength_mpa"], 1000, "ultimate_strength", mid),
        friction_milli=_scaled(row["friction"], 1000, "friction", mid),
        restitution_milli=_scaled(row["restitution"], 1000, "restitution", mid),
        conductivity_mw_mk=_optional(row["thermal_conductivity_w_mk"], 1000, "conductivity", mid),
        specific_heat_j_kgk=_optional(row["specific_heat_j_kgk"], 1, "specific_heat", mid),
        thermal_limit_mc=_optional(row["thermal_limit_c"], 1000, "thermal_limit", mid),
        magnetism_role=row["magnetism_role"],
        susceptibility_milli=_optional(row["magnetic_susceptibility"], 1000, "susceptibility", mid),
        rolling_resistance_milli=_scaled(row["rolling_resistance"], 1000, "rolling_resistance", mid),
        is_fluid=row["is_fluid"] == "true",
        deploy_behavior=row["deploy_behavior"] or None,
        deploy_params_milli=_deploy_params(row["deploy_params"], mid),
    )


def _check_invariants(materials: tuple[Material, ...]) -> None:
    """Load-time invariants of the table; a broken table must never reach a race."""
    ids = [m.id for m in materials]
    if len(materials) != MATERIAL_COUNT or len(set(ids)) != len(ids):
        raise SimError("material-table-invalid", f"expected {MATERIAL_COUNT} unique ids, got {len(ids)}")
    for m in materials:
        if m.magnetism_role not in MAGNETISM_ROLES:
            raise SimError("material-table-invalid", f"{m.id}: unknown magnetism_role {m.magnetism_role}")
        if (m.magnetism_role == "passive") != (m.susceptibility_milli is not None):
            raise SimError("material-table-invalid", f"{m.id}: susceptibility iff magnetism_role passive")
        if m.is_fluid != (m.deploy_behavior is not None):
            raise SimError("material-table-invalid", f"{m.id}: deploy_behavior iff is_fluid")
        if m.deploy_behavior is not None and m.deploy_behavior not in DEPLOY_BEHAVIORS:
            raise SimError("material-table-invalid", f"{m.id}: unknown deploy_behavior")
        if any(s not in (VEHICLE_SCOPE, ENVIRONMENT_SCOPE) for s in m.forbidden_scopes):
            raise SimError("material-table-invalid", f"{m.id}: unknown forbidden scope")
        if not (0 <= m.friction_milli <= 3000 and 0 <= m.restitution_milli <= 1000):
            raise SimError("material-table-invalid", f"{m.id}: friction or restitution out of range")
        if m.density_kg_m3 <= 0 or m.rolling_resistance_milli <= 0:
            raise SimError("material-table-invalid", f"{m.id}: density and rolling resistance must be > 0")


def load_materials(text: str) -> tuple[Material, ...]:
    """Parse and check a materials table in the CSV layout of ``data/materials.csv``."""
    rows = list(csv.DictReader(io.StringIO(text)))
    materials = tuple(_parse_row(i, row) for i, row in enumerate(rows))
    _check_invariants(materials)
    return materials


MATERIALS: tuple[Material, ...] = load_materials(
    resources.files("sim_core").joinpath("data/materials.csv").read_text(encoding="utf-8")
)
_BY_ID = {m.id: m for m in MATERIALS}


def material(material_id: str) -> Material:
    """The material with this id; an id missing from the table refuses the asset."""
    try:
        return _BY_ID[material_id]
    except (KeyError, TypeError):
        raise SimError("unknown-material", f"material {material_id!r} is not in the material table") from None
