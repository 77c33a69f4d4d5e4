"""Typed reading of author declarations in extras, reporting a coded finding instead of raising.

Numbers come from the reader as ``int`` or ``Decimal`` (never float), so a declaration such as
``configured_output_w: 125.4`` converts to 125400 mW exactly or is refused for having finer resolution.
"""

from __future__ import annotations

from decimal import Context, Decimal
from typing import Any

from sim_core.assets.findings import Findings

MISSING = object()


def as_decimal(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, Decimal) and value.is_finite():
        return value
    return None


def scaled(value: Decimal | int, scale: int) -> int | None:
    """``value × scale`` as an integer, or None when it has finer resolution than the scale."""
    product = Decimal(value) * scale
    return int(product) if product == product.to_integral_value() else None


def number(
    extras: dict[str, Any],
    key: str,
    where: str,
    findings: Findings,
    *,
    low: Decimal | int,
    high: Decimal | int,
    scale: int,
    default: Any = MISSING,
    unit: str = "",
) -> int | None:
    """A number in [low, high] (inclusive) converted exactly to ``value × scale``; None after a finding."""
    if key not in extras:
        if default is MISSING:
            findings.error("missing-required-field", f"{where}: required field {key!r} is missing")
            return None
        return default
    value = as_decimal(extras[key])
    if value is None:
        findings.error("field-invalid", f"{where}: {key!r} must be a number, got {extras[key]!r}")
        return None
    if not Decimal(low) <= value <= Decimal(high):
        findings.error("field-invalid", f"{where}: {key!r} = {value} is outside [{low}, {high}]{unit}")
        return None
    result = scaled(value, scale)
    if result is None:
        findings.error("field-invalid", f"{where}: {key!r} = {value} has finer resolution than 1/{scale}{unit}")
    return result


def choice(extras: dict[str, Any], key: str, where: str, findings: Findings, options: tuple[str, ...], default: Any = MISSING) -> str | None:
    if key not in extras:
        if default is MISSING:
            findings.error("missing-required-field", f"{where}: required field {key!r} is missing (one of {', '.join(options)})")
            return None
        return default
    value = extras[key]
    if value not in options:
        findings.error("field-invalid", f"{where}: {key!r} = {value!r} is not one of {', '.join(options)}")
        return None
    return value


def flag(extras: dict[str, Any], key: str, where: str, findings: Findings, default: Any = MISSING) -> bool | None:
    if key not in extras:
        if default is MISSING:
            findings.error("missing-required-field", f"{where}: required field {key!r} is missing (true or false)")
            return None
        return default
    value = extras[key]
    if not isinstance(value, bool):
        findings.error("field-invalid", f"{where}: {key!r} must be true or false, got {value!r}")
        return None
    return value


def text(extras: dict[str, Any], key: str, where: str, findings: Findings, required: bool = True) -> str | None:
    if key not in extras:
        if required:
            findings.error("missing-required-field", f"{where}: required field {key!r} is missing")
        return None
    value = extras[key]
    if not isinstance(value, str) or not value:
        findings.error("field-invalid", f"{where}: {key!r} must be a non-empty string, got {value!r}")
        return None
    return value


def vector3(extras: dict[str, Any], key: str, where: str, findings: Findings, default: Any = MISSING) -> tuple[Decimal, Decimal, Decimal] | None:
    if key not in extras:
        if default is MISSING:
            findings.error("missing-required-field", f"{where}: required field {key!r} is missing")
            return None
        return default
    raw = extras[key]
    values = [as_decimal(v) for v in raw] if isinstance(raw, list) and len(raw) == 3 else None
    if values is None or any(v is None for v in values):
        findings.error("field-invalid", f"{where}: {key!r} must be a list of 3 numbers, got {raw!r}")
        return None
    return values[0], values[1], values[2]  # type: ignore[return-value]


def unit_ppm(v: tuple[Decimal, Decimal, Decimal]) -> list[int]:
    """A declared non-zero direction as a ppm unit vector, via exact decimal arithmetic (same everywhere)."""
    ctx = Context(prec=34)
    norm = ctx.sqrt(sum((x * x for x in v), start=ctx.create_decimal(0)))
    return [int(ctx.divide(x * 1_000_000, norm).to_integral_value()) for x in v]
