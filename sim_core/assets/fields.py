"""Typed reading of author declarations in extras, reporting a coded finding instead of raising.

Numbers come from the reader as ``int`` or ``Decimal`` (never float), so a declaration such as
``configured_output_w: 125.4`` converts to 125400 mW exactly or is refused for having finer resolution.
"""

from __future__ import annotations

from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal
from typing import Any, cast

from sim_core.assets.findings import Findings, shown

MISSING = object()
_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)  # products never rounded (used for × only)
_SQUARE_SAFE_EXPONENT = -1000  # a component down to 10^-1000 squares without underflow in unit_ppm


def as_decimal(value: Any) -> Decimal | None:
    """A JSON number as a ``Decimal`` (None for a boolean, a non-number or a non-finite value)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, Decimal) and value.is_finite():
        return value
    return None


def scaled(value: Decimal | int, scale: int) -> int | None:
    """``value × scale`` as an integer, or None when it has finer resolution than the scale. Exact for
    any number the reader admits: 40 digits are not rounded to 28, 1e-999999999 does not underflow to 0."""
    product = _EXACT.multiply(Decimal(value), scale)
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
        return cast("int | None", default)
    value = as_decimal(extras[key])
    if value is None:
        findings.error("field-invalid", f"{where}: {key!r} must be a number, got {shown(extras[key])}")
        return None
    if not Decimal(low) <= value <= Decimal(high):
        findings.error("field-invalid", f"{where}: {key!r} = {shown(value)} is outside [{low}, {high}]{unit}")
        return None
    result = scaled(value, scale)
    if result is None:
        findings.error("field-invalid", f"{where}: {key!r} = {shown(value)} has finer resolution than 1/{scale}{unit}")
    return result


def choice(
    extras: dict[str, Any], key: str, where: str, findings: Findings, options: tuple[str, ...], default: Any = MISSING
) -> str | None:
    """One of ``options``, or ``default`` when the key is absent; None after a finding (missing without a
    default, or not one of the options)."""
    if key not in extras:
        if default is MISSING:
            findings.error("missing-required-field", f"{where}: required field {key!r} is missing (one of {', '.join(options)})")
            return None
        return cast("str | None", default)
    value = extras[key]
    if value not in options:
        findings.error("field-invalid", f"{where}: {key!r} = {shown(value)} is not one of {', '.join(options)}")
        return None
    return cast(str, value)


def flag(extras: dict[str, Any], key: str, where: str, findings: Findings, default: Any = MISSING) -> bool | None:
    """A boolean, or ``default`` when the key is absent; None after a finding."""
    if key not in extras:
        if default is MISSING:
            findings.error("missing-required-field", f"{where}: required field {key!r} is missing (true or false)")
            return None
        return cast("bool | None", default)
    value = extras[key]
    if not isinstance(value, bool):
        findings.error("field-invalid", f"{where}: {key!r} must be true or false, got {shown(value)}")
        return None
    return value


def text(extras: dict[str, Any], key: str, where: str, findings: Findings, required: bool = True) -> str | None:
    """A non-empty string; None when absent (a finding if ``required``) or after a finding."""
    if key not in extras:
        if required:
            findings.error("missing-required-field", f"{where}: required field {key!r} is missing")
        return None
    value = extras[key]
    if not isinstance(value, str) or not value:
        findings.error("field-invalid", f"{where}: {key!r} must be a non-empty string, got {shown(value)}")
        return None
    return value


def vector3(
    extras: dict[str, Any], key: str, where: str, findings: Findings, default: Any = MISSING
) -> tuple[Decimal, Decimal, Decimal] | None:
    """A list of three numbers as ``Decimal`` values, or ``default`` (three ``Decimal``) when the key is
    absent; None after a finding."""
    if key not in extras:
        if default is MISSING:
            findings.error("missing-required-field", f"{where}: required field {key!r} is missing")
            return None
        return cast("tuple[Decimal, Decimal, Decimal] | None", default)
    raw = extras[key]
    values = [as_decimal(v) for v in raw] if isinstance(raw, list) and len(raw) == 3 else None
    if values is None or any(v is None for v in values):
        findings.error("field-invalid", f"{where}: {key!r} must be a list of 3 numbers, got {shown(raw)}")
        return None
    return values[0], values[1], values[2]  # type: ignore[return-value]


def unit_ppm(v: tuple[Decimal, Decimal, Decimal]) -> list[int]:
    """A declared non-zero direction as a ppm unit vector, via exact decimal arithmetic (same everywhere)."""
    v = _squarable(v)
    ctx = Context(prec=34)
    norm = ctx.sqrt(sum((x * x for x in v), start=ctx.create_decimal(0)))
    return [int(ctx.divide(x * 1_000_000, norm).to_integral_value()) for x in v]


def _squarable(v: tuple[Decimal, Decimal, Decimal]) -> tuple[Decimal, Decimal, Decimal]:
    """The same direction, shifted by a power of ten when its largest component is so small that its
    square would underflow to 0 (a zero norm). Any other vector is returned as it is, so every ordinary
    direction keeps its digits and its result."""
    top = max((x.adjusted() for x in v if x), default=0)
    if top >= _SQUARE_SAFE_EXPONENT:
        return v
    return v[0].scaleb(-top, _EXACT), v[1].scaleb(-top, _EXACT), v[2].scaleb(-top, _EXACT)
