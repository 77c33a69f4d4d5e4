import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import ProtocolError
from protocol.versions.record import (
    BUILTIN_ASSETS_VERSION,
    COMPARED_FIELDS,
    DERIVE_LOGIC_VERSION,
    ClientVersionInfo,
    check_compatibility,
    describe_incompatibility,
    field_differences,
    incompatibility_reasons,
    node_version_info,
)
from tests.coded import raises_coded

MINE = node_version_info("sim_core/1", 3, 1_700_000_000_000, "abc")

# A value differing from MINE in each compared field.
DIFFERENT = {
    "client_version": "1.0.0",
    "rapier_version": "sim_core/2",
    "protocol_version": "1.0.1",
    "derive_logic_version": DERIVE_LOGIC_VERSION + 1,
    "builtin_assets_version": BUILTIN_ASSETS_VERSION + 1,
    "economy_config_version": 4,
}


def peer(**changes) -> ClientVersionInfo:
    return ClientVersionInfo.from_wire({**MINE.to_wire(), **changes})


def test_own_record_has_exactly_the_eight_keys():
    assert list(MINE.to_wire()) == [
        "client_version", "rapier_version", "protocol_version", "derive_logic_version",
        "builtin_assets_version", "economy_config_version", "build_timestamp", "commit_hash",
    ]
    assert MINE.rapier_version == "sim_core/1" and MINE.economy_config_version == 3


@pytest.mark.parametrize(("token", "name"), COMPARED_FIELDS)
def test_each_field_alone_blocks(token, name):
    other = peer(**{name: DIFFERENT[name]})
    report = check_compatibility(MINE, {"zPeer1234": other})
    assert not report.compatible and report.incompatible == [("zPeer1234", [token])]
    assert field_differences(MINE, other) == [(name, getattr(MINE, name), DIFFERENT[name])]


def test_full_matrix_keeps_the_spec_order():
    names = [name for _, name in COMPARED_FIELDS]
    for mask in range(1 << len(names)):
        changed = {n: DIFFERENT[n] for i, n in enumerate(names) if mask >> i & 1}
        expected = [t for i, (t, _) in enumerate(COMPARED_FIELDS) if mask >> i & 1]
        assert incompatibility_reasons(MINE, peer(**changed)) == expected


def test_minor_patch_and_diagnostics_never_block():
    other = peer(client_version="0.9.7", build_timestamp=1.5, commit_hash="other")
    assert check_compatibility(MINE, {"p": other}).compatible


def test_malformed_client_version_is_a_reason_not_a_crash():
    broken = ClientVersionInfo(**{**MINE.to_wire(), "client_version": "v0.1"})
    assert incompatibility_reasons(MINE, broken) == ["client_version format"]


def test_describe_names_peers_by_last_four():
    report = check_compatibility(MINE, {"z6MkAAAAwxyz": peer(protocol_version="9.0.0", economy_config_version=9)})
    assert describe_incompatibility(report) == "wxyz: protocol/economy_config"


@pytest.mark.parametrize(
    "changes",
    [
        {"client_version": "1.0"},
        {"client_version": "1.0.0-beta"},
        {"client_version": "١.0.0"},
        {"client_version": 1},
        {"rapier_version": None},
        {"derive_logic_version": "1"},
        {"derive_logic_version": True},
        {"derive_logic_version": 1.0},
        {"economy_config_version": 2**53},
        {"build_timestamp": float("nan")},
        {"build_timestamp": "now"},
        {"commit_hash": 5},
        {"commit_hash": "x" * 500},
        {"extra": 1},
    ],
)
def test_shape_guard(changes):
    with pytest.raises(ProtocolError) as info:
        ClientVersionInfo.from_wire({**MINE.to_wire(), **changes})
    assert info.value.code == "version-info-invalid"


def test_shape_guard_needs_all_keys():
    wire = MINE.to_wire()
    del wire["commit_hash"]
    with raises_coded(ProtocolError, "version-info-invalid"):
        ClientVersionInfo.from_wire(wire)
    with raises_coded(ProtocolError, "version-info-invalid"):
        ClientVersionInfo.from_wire(["not", "a", "map"])


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(st.sampled_from(list(MINE.to_wire()) + ["x"]), st.one_of(st.integers(), st.text(), st.floats(), st.none()))
)
def test_shape_guard_only_raises_its_code(record):
    try:
        ClientVersionInfo.from_wire(record)
    except ProtocolError as exc:
        assert exc.code == "version-info-invalid"
