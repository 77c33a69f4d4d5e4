import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.encoding import dagcbor
from protocol.encoding.dagcbor import chain_id_of, derive_match_id, encode, serialize_for_signing, signing_digest
from protocol.errors import ProtocolError

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**64), max_value=2**64 - 1), st.binary(max_size=40), st.text(max_size=20)
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=5)),
    max_leaves=30,
)


@pytest.mark.parametrize(
    ("value", "hex_bytes"),
    [
        (0, "00"),
        (23, "17"),
        (24, "1818"),
        (255, "18ff"),
        (256, "190100"),
        (65536, "1a00010000"),
        (1700000000000, "1b0000018bcfe56800"),
        (9007199254740993, "1b0020000000000001"),
        (2**64 - 1, "1bffffffffffffffff"),
        (-1, "20"),
        (-25, "3818"),
        (-(2**64), "3bffffffffffffffff"),
        (True, "f5"),
        (False, "f4"),
        (None, "f6"),
        (b"\x01\x02", "420102"),
        ("a", "6161"),
        ("ü", "62c3bc"),
        ([1, [2]], "820181" "02"),
        ({"b": 1, "aa": 2, "a": 3}, "a3" "6161" "03" "6162" "01" "626161" "02"),
    ],
)
def test_known_encodings(value, hex_bytes):
    assert encode(value).hex() == hex_bytes


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (1.5, "cbor-float-rejected"),
        ({1: "x"}, "cbor-non-text-key"),
        ({"a": {b"k": 1}}, "cbor-non-text-key"),
        ({1, 2}, "cbor-unsupported-type"),
        (object(), "cbor-unsupported-type"),
        (2**64, "cbor-int-out-of-range"),
        (-(2**64) - 1, "cbor-int-out-of-range"),
        ("\ud800", "cbor-invalid-text"),
    ],
)
def test_rejections_are_coded(value, code):
    with pytest.raises(ProtocolError) as info:
        encode(value)
    assert info.value.code == code


@given(st.integers(min_value=-(2**64) - 3, max_value=2**64 + 2))
def test_encode_int_is_encode_of_an_integer(value):
    try:
        expected = encode(value)
    except ProtocolError as exc:
        with pytest.raises(ProtocolError) as refused:
            dagcbor.encode_int(value)
        assert refused.value.code == exc.code == "cbor-int-out-of-range"
    else:
        assert dagcbor.encode_int(value) == expected


def test_depth_is_bounded():
    deep: list = []
    for _ in range(dagcbor.MAX_DEPTH + 2):
        deep = [deep]
    with pytest.raises(ProtocolError) as info:
        encode(deep)
    assert info.value.code == "cbor-too-deep"


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=10), values, max_size=8), st.randoms(use_true_random=False))
def test_map_key_order_never_matters(mapping, rnd):
    items = list(mapping.items())
    rnd.shuffle(items)
    assert encode(dict(items)) == encode(mapping)
    assert signing_digest(dict(items)) == signing_digest(mapping)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_roster_order_and_duplicates_never_change_the_match_id(roster, rnd):
    shuffled = roster + roster[: rnd.randint(0, len(roster))]
    rnd.shuffle(shuffled)
    args = (1700000000000, {}, "a" * 64, "b" * 64)
    assert derive_match_id(shuffled, *args) == derive_match_id(roster, *args)


def test_signature_fields_are_stripped_only_at_top_level():
    event = {"a": 1, "signature": b"x", "signatures": [1], "inner": {"signature": 2}}
    assert serialize_for_signing(event) == encode({"a": 1, "inner": {"signature": 2}})


@pytest.mark.parametrize("address", ["", "orbitdb/x", "/orbitdb/", "/orbitdb/a/b", None])
def test_bad_ledger_address(address):
    with pytest.raises(ProtocolError) as info:
        chain_id_of(address)
    assert info.value.code == "ledger-address-invalid"


@pytest.mark.parametrize(
    "args",
    [
        ([], 1, {}, "a" * 64, "b" * 64),
        (["p"], -1, {}, "a" * 64, "b" * 64),
        (["p"], True, {}, "a" * 64, "b" * 64),
        (["p"], 1, {}, "A" * 64, "b" * 64),
        (["p"], 1, {}, "a" * 63, "b" * 64),
        ([1], 1, {}, "a" * 64, "b" * 64),
    ],
)
def test_bad_match_id_input(args):
    with pytest.raises(ProtocolError) as info:
        derive_match_id(*args)
    assert info.value.code == "match-id-input-invalid"


def test_match_id_depends_on_every_input():
    base = (["p1", "p2"], 1, {}, "a" * 64, "b" * 64)
    ids = {derive_match_id(*base)}
    for i, changed in enumerate([["p1", "p3"], 2, {"laps": 3}, "c" * 64, "d" * 64]):
        args = list(base)
        args[i] = changed
        ids.add(derive_match_id(*args))
    assert len(ids) == 6


def test_random_values_encode_deterministically():
    rnd = random.Random(7)
    value = {str(rnd.random()): [rnd.randint(-1000, 1000) for _ in range(5)] for _ in range(20)}
    assert encode(value) == encode(dict(reversed(list(value.items()))))
