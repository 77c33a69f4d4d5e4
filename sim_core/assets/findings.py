"""Coded findings: every reason an asset is refused (or merely flagged) is a stable code plus a sentence.

Validation collects findings instead of raising so that ``asset validate`` can list all of them; an
``AssetRejected`` carries the list when a caller needs an exception (admission, loading for a race).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Final, Literal

from sim_core.errors import SimError

Severity = Literal["error", "warning"]
ERROR: Final = "error"  # refuses the asset
WARNING: Final = "warning"  # reported, never refuses


@dataclass(frozen=True, slots=True)
class Finding:
    """One reason to refuse (``error``) or to mention (``warning``) an asset: a stable code, a sentence
    and, when the spec numbers the rule, its id."""

    code: str
    message: str
    severity: Severity = ERROR
    rule: str | None = None  # the spec's rule id (PART-R-001, PHYS-R-001, TRACK-R-001) when it has one

    def __post_init__(self) -> None:
        """Messages quote an author's names and values; a newline or other control character in one
        must not start a line of its own (a forged ``error[…]`` line in ``asset validate``)."""
        if not self.message.isprintable():
            object.__setattr__(
                self,
                "message",
                "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in self.message),
            )

    def as_dict(self) -> dict[str, str]:
        """The finding as JSON data (``asset validate --json``, the admission cache); ``rule`` only when set."""
        out = {"code": self.code, "severity": self.severity, "message": self.message}
        if self.rule:
            out["rule"] = self.rule
        return out


@dataclass
class Findings:
    """An ordered list of findings; ``error`` / ``warn`` append, ``rejected`` says whether any is an error."""

    items: list[Finding] = field(default_factory=list)

    def error(self, code: str, message: str, rule: str | None = None) -> None:
        """Add a finding that refuses the asset."""
        self.items.append(Finding(code, message, ERROR, rule))

    def warn(self, code: str, message: str) -> None:
        """Add a finding that is reported but never refuses."""
        self.items.append(Finding(code, message, WARNING))

    def extend(self, other: "Findings") -> None:
        """Append every finding of ``other``, in order."""
        self.items.extend(other.items)

    @property
    def errors(self) -> list[Finding]:
        """The findings that refuse, in order."""
        return [f for f in self.items if f.severity == ERROR]

    @property
    def rejected(self) -> bool:
        """Whether any finding refuses the asset."""
        return any(f.severity == ERROR for f in self.items)

    def codes(self) -> list[str]:
        """Every finding's code, in order (errors and warnings)."""
        return [f.code for f in self.items]


class AssetRejected(SimError):
    """The asset breaks at least one hard rule; ``findings`` lists every error found."""

    def __init__(self, findings: list[Finding]) -> None:
        first = findings[0] if findings else Finding("asset-rejected", "the asset was refused")
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        super().__init__(first.code, first.message + more)
        self.findings = list(findings)


SHOWN_CHARS = 60


def shown(value: object) -> str:
    """An author's value quoted in a message (``repr``; a decimal as its digits), cut short: a finding
    names a value, it does not echo a megabyte string or a 10,000-digit number back at the user."""
    text = str(value) if isinstance(value, Decimal) else repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[:SHOWN_CHARS - 12]}… ({len(text)} characters)"


def reject(code: str, message: str, rule: str | None = None) -> AssetRejected:
    """A single-finding rejection, for checks that cannot continue past the first failure."""
    return AssetRejected([Finding(code, message, ERROR, rule)])
