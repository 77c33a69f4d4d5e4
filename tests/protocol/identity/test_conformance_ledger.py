"""Every vector of the spec's ledger families, reproduced byte for byte (tests/conformance/ORIGIN.md)."""

import json

import pytest

from protocol.encoding.dagcbor import derive_match_id, ledger_signing_digest, loadout_signing_message
from tests.layout import CONFORMANCE, REPO_ROOT

VECTORS = CONFORMANCE / "ledger"


def vectors(family: str) -> list[dict]:
    data = json.loads((VECTORS / f"{family}.vectors.json").read_text(encoding="utf-8"))
    assert data["formatVersion"] == 1 and data["vectors"]
    return data["vectors"]


def typed(event: dict, vector_input: dict) -> dict:
    """Apply the vector's type hints: bigint paths become ints, bytes paths become byte strings."""
    out = dict(event)
    for path in vector_input.get("bigintPaths", []):
        out[path] = int(out[path])
    for path in vector_input.get("bytesPaths", []):
        out[path] = bytes.fromhex(out[path])
    return out


@pytest.mark.parametrize("vector", vectors("signing-digest"), ids=lambda v: v["name"])
def test_signing_digest(vector):
    given = vector["input"]
    expected = vector["expected"]["digestHex"]
    forms = [given["event"]] + [given[k] for k in ("eventReordered", "eventUnsigned", "eventNumberForm") if k in given]
    for form in forms:
        assert ledger_signing_digest(given["ledgerAddress"], typed(form, given)).hex() == expected


@pytest.mark.parametrize("vector", vectors("derive-match-id"), ids=lambda v: v["name"])
def test_derive_match_id(vector):
    given = vector["input"]
    rosters = given.get("rosterVariants", [given.get("roster")])
    for roster in rosters:
        got = derive_match_id(roster, given["startedAt"], given["matchRules"], given["gridContextDigest"], given["gridSeed"])
        assert got == vector["expected"]["matchId"]


@pytest.mark.parametrize("vector", vectors("loadout-signing-message"), ids=lambda v: v["name"])
def test_loadout_signing_message(vector):
    given = vector["input"]
    assert loadout_signing_message(given["matchId"], given["loadout"]).hex() == vector["expected"]["messageHex"]


def test_vector_copies_are_unchanged():
    """The copies must equal the shared originals byte for byte where those are present (CI has them)."""
    shared = REPO_ROOT.parent / "shared" / "conformance"
    if not shared.is_dir():
        pytest.skip("the shared reference folder is not beside this checkout")
    for original in shared.rglob("*.vectors.json"):
        copy = VECTORS.parent / original.relative_to(shared)
        assert copy.read_bytes() == original.read_bytes(), original.name
