import hashlib
import os
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.encoding.base58 import b58decode, b58encode
from protocol.errors import LocalError, PeerError, ProtocolError
from protocol.identity.keys import (
    Identity,
    check_mnemonic,
    is_valid_peer_id,
    load_or_create_identity,
    new_mnemonic,
    parse_peer_id,
    peer_id_from_public_key,
    race_id,
    read_identity_file,
    seed_from_mnemonic,
    verify_signature,
    write_identity_file,
)
from tests.coded import raises_coded

ABANDON = "abandon " * 11 + "about"
SEED = bytes(range(32))


def test_peer_id_form():
    ident = Identity(SEED)
    assert ident.peer_id.startswith("z6Mk") and len(ident.peer_id) == 48
    assert parse_peer_id(ident.peer_id) == ident.public_key
    assert b58decode(ident.peer_id[1:]) == b"\xed\x01" + ident.public_key


def test_rfc8032_test_vector_1():
    """RFC 8032 §7.1 TEST 1: the seed form matches the standard."""
    seed = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
    ident = Identity(seed)
    assert ident.public_key.hex() == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    assert ident.sign(b"").hex().startswith("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb88215")


@pytest.mark.parametrize(
    "bad",
    ["", "z", "x6Mk", "z0OIl", "z" + "1" * 47, 42, None, b"z6Mk", "z" + b58encode(b"\xed\x02" + bytes(32)),
     "z" + b58encode(b"\xed\x01" + bytes(31)), "z" + "2" * 400, "z1" + b58encode(b"\xed\x01" + bytes(32))],
)
def test_bad_peer_ids_are_coded(bad):
    with pytest.raises(ProtocolError) as info:
        parse_peer_id(bad)
    assert info.value.code == "peer-id-invalid"
    assert not is_valid_peer_id(bad)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_peer_id_parser_only_raises_its_code(text):
    try:
        parse_peer_id(text)
    except ProtocolError as exc:
        assert exc.code == "peer-id-invalid"


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=40))
def test_base58_round_trip(data):
    assert b58decode(b58encode(data)) == data


def test_sign_and_verify():
    ident = Identity(SEED)
    sig = ident.sign(b"msg")
    assert verify_signature(ident.peer_id, b"msg", sig)
    assert not verify_signature(ident.peer_id, b"msh", sig)
    assert not verify_signature(Identity(bytes(32)).peer_id, b"msg", sig)
    assert not verify_signature("garbage", b"msg", sig)
    assert not verify_signature(ident.peer_id, b"msg", sig[:63])
    assert not verify_signature(ident.peer_id, b"msg", "not bytes")


def test_race_sign_key_derivation():
    ident = Identity(SEED)
    rid = race_id("ab" * 32, 2)
    assert rid == "ab" * 32 + "#2"
    expected_seed = hashlib.sha256(SEED + b"open4wd-race-sign" + rid.encode()).digest()
    assert ident.race_key(rid).seed == expected_seed
    assert ident.race_key(rid) != ident.race_key(race_id("ab" * 32, 3))
    with raises_coded(LocalError, "race-id-invalid"):
        ident.race_key("")
    with raises_coded(LocalError, "race-id-invalid"):
        ident.race_key("x" * 257)


def test_bip39_seed_is_first_32_bytes_of_the_standard_seed():
    # BIP39 seed of "abandon ×11 about" with an empty passphrase (widely published vector).
    assert seed_from_mnemonic(ABANDON).hex() == "5eb00bbddcf069084889a8ab9155568165f5c453ccb85e70811aaed6f6da5fc1"
    assert seed_from_mnemonic("  ABANDON " + ABANDON[8:] + "\n") == seed_from_mnemonic(ABANDON)


@pytest.mark.parametrize(
    "bad",
    ["", "abandon " * 12, "abandon " * 11 + "zzzz", "abandon " * 23 + "about", "word", None, "abandon " * 11 + "abandon"],
)
def test_bad_mnemonics(bad):
    with pytest.raises(LocalError) as info:
        seed_from_mnemonic(bad)
    assert info.value.code == "mnemonic-invalid" and not isinstance(info.value, PeerError)  # the user's words


@pytest.mark.parametrize("words", [12, 24])
def test_new_mnemonics_check(words):
    phrase = new_mnemonic(words)
    assert len(phrase.split()) == words
    check_mnemonic(phrase)


def test_key_file_created_once_with_mode_0600(tmp_path):
    path = tmp_path / "sub" / "identity.key"
    first, created = load_or_create_identity(path)
    assert created and stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_bytes() == first.seed
    again, created_again = load_or_create_identity(path)
    assert again == first and not created_again
    assert [p.name for p in path.parent.iterdir()] == ["identity.key"]


def test_key_file_never_overwritten_without_force(tmp_path):
    path = tmp_path / "identity.key"
    write_identity_file(path, Identity(SEED))
    with pytest.raises(LocalError) as info:
        write_identity_file(path, Identity(bytes(32)))
    assert info.value.code == "identity-exists"
    write_identity_file(path, Identity(bytes(32)), overwrite=True)
    assert read_identity_file(path).seed == bytes(32)


def test_insecure_or_broken_key_files_are_refused(tmp_path):
    path = tmp_path / "identity.key"
    write_identity_file(path, Identity(SEED))
    os.chmod(path, 0o644)
    with pytest.raises(LocalError) as info:
        read_identity_file(path)
    assert info.value.code == "identity-file-insecure"
    os.chmod(path, 0o600)
    path.write_bytes(b"short")
    with pytest.raises(LocalError) as info:
        read_identity_file(path)
    assert info.value.code == "identity-file-invalid"
    with pytest.raises(LocalError) as info:
        read_identity_file(tmp_path / "missing.key")
    assert info.value.code == "identity-file-unreadable"


def test_seed_must_be_32_bytes():
    with pytest.raises(LocalError) as info:
        Identity(b"x" * 31)
    assert info.value.code == "seed-invalid"
    assert "seed" not in repr(Identity(SEED)).lower().replace("peer_id", "")
    with raises_coded(LocalError, "public-key-invalid"):
        peer_id_from_public_key(b"x")
