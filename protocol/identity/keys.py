"""Node identity: an Ed25519 master seed, its PeerId, race sign keys and BIP39 import/backup.

PeerId = 'z' + base58btc(0xED 0x01 ‖ public key) (spec/identity.md §2). Verification needs no local
state because the public key is inside the PeerId. The seed lives in a 0600 file of exactly 32 bytes.

Faults: a PeerId may come from a peer, so parsing one refuses with ``ProtocolError``; seeds, race ids,
mnemonics and key files only ever come from this node (its code, its user, its disk), so refusing them
is a ``LocalError``, never blamed on a peer.
"""

from __future__ import annotations

import functools
import hashlib
import os
import secrets
import stat
import unicodedata
from typing import NewType, TypeGuard
from importlib import resources
from pathlib import Path

from protocol.encoding.base58 import b58decode, b58encode
from protocol.errors import LocalError, ProtocolError
from protocol.identity.ed25519 import PUBLIC_KEY_BYTES, SIGNATURE_BYTES, PrivateKey, PublicKey

SEED_BYTES = 32
ED25519_MULTICODEC = b"\xed\x01"
PEER_ID_MAX_CHARS = 64  # a valid PeerId is 48 characters; anything far longer is refused before decoding
RACE_SIGN_DOMAIN = b"open4wd-race-sign"
MNEMONIC_WORD_COUNTS = (12, 24)


PeerId = NewType("PeerId", str)
"""A peer's identity as the wire and the logs spell it: ``z`` + base58btc(0xED 0x01 ‖ Ed25519 public key).
A type of its own, so that a function taking a peer says so and a room id, race id or address is not
passed where a peer is meant."""


def peer_id_from_public_key(public_key: bytes) -> PeerId:
    """The PeerId of an Ed25519 public key. Raises ``LocalError`` (``public-key-invalid``) unless the
    key has 32 bytes."""
    if len(public_key) != PUBLIC_KEY_BYTES:
        raise LocalError("public-key-invalid", f"an Ed25519 public key has {PUBLIC_KEY_BYTES} bytes")
    return PeerId("z" + b58encode(ED25519_MULTICODEC + public_key))


def parse_peer_id(peer_id: object) -> bytes:
    """The public key inside a PeerId; anything that is not exactly that form raises ``ProtocolError``
    ``peer-id-invalid`` (PeerIds arrive from peers). The keys of valid PeerIds are remembered
    (``_key_of``): a signaling server checks two PeerIds and a signature per relayed signal, and the
    base58 round trip cost three times the signature check."""
    if not isinstance(peer_id, str) or not peer_id.startswith("z") or len(peer_id) > PEER_ID_MAX_CHARS:
        raise ProtocolError("peer-id-invalid", "a PeerId is 'z' followed by base58btc text")
    return _key_of(peer_id)


@functools.lru_cache(maxsize=4096)
def _key_of(peer_id: str) -> bytes:
    """``parse_peer_id`` of a string of the right size (an invalid one raises, and is not remembered)."""
    try:
        raw = b58decode(peer_id[1:], PEER_ID_MAX_CHARS)
    except ProtocolError:
        raise ProtocolError("peer-id-invalid", "a PeerId is 'z' followed by base58btc text") from None
    if len(raw) != 2 + PUBLIC_KEY_BYTES or raw[:2] != ED25519_MULTICODEC:
        raise ProtocolError("peer-id-invalid", "a PeerId decodes to 34 bytes starting ED 01")
    if peer_id_from_public_key(raw[2:]) != peer_id:
        raise ProtocolError("peer-id-invalid", "a PeerId must be in its canonical base58btc form")
    return raw[2:]


def is_valid_peer_id(peer_id: object) -> TypeGuard[PeerId]:
    """Whether ``peer_id`` is a canonical PeerId (``parse_peer_id`` without the error)."""
    try:
        parse_peer_id(peer_id)
    except ProtocolError:
        return False
    return True


def verify_signature(peer_id: object, message: bytes, signature: object) -> bool:
    """True only for a valid Ed25519 signature by ``peer_id``; never raises on bad input."""
    if not isinstance(signature, (bytes, bytearray)) or len(signature) != SIGNATURE_BYTES:
        return False
    try:
        public = PublicKey(parse_peer_id(peer_id))
    except ProtocolError:
        return False
    return public.verify(message, signature)


def race_id(match_id: str, round_index: int) -> str:
    """Per-round signing domain ``"<matchId>#<roundIndex>"`` (spec/netcode.md §8.1)."""
    return f"{match_id}#{round_index}"


class Identity:
    """An Ed25519 key pair from a 32-byte seed (RFC 8032 private key form)."""

    __slots__ = ("seed", "public_key", "peer_id", "_private")

    def __init__(self, seed: bytes) -> None:
        """The key pair of ``seed``. Raises ``LocalError`` (``seed-invalid``) unless it is 32 bytes."""
        if not isinstance(seed, bytes) or len(seed) != SEED_BYTES:
            raise LocalError("seed-invalid", f"an identity seed is exactly {SEED_BYTES} bytes")
        self.seed = seed
        self._private = PrivateKey(seed)
        self.public_key = self._private.public_key
        self.peer_id = peer_id_from_public_key(self.public_key)

    def __repr__(self) -> str:  # never print the seed
        return f"Identity(peer_id={self.peer_id!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Identity) and other.seed == self.seed

    def __hash__(self) -> int:
        return hash(self.peer_id)

    @classmethod
    def generate(cls) -> Identity:
        """A fresh identity from the operating system's random source."""
        return cls(secrets.token_bytes(SEED_BYTES))

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of ``message``."""
        return self._private.sign(message)

    def race_key(self, race_id_text: str) -> Identity:
        """The deterministic per-round race sign key: SHA-256(seed ‖ "open4wd-race-sign" ‖ raceId).

        Raises ``LocalError`` (``race-id-invalid``) unless the raceId is non-empty text of at most 256
        bytes (this node derives it from its own verified start).
        """
        if not isinstance(race_id_text, str) or not race_id_text or len(race_id_text.encode()) > 256:
            raise LocalError("race-id-invalid", "a raceId is non-empty text of at most 256 bytes")
        return Identity(hashlib.sha256(self.seed + RACE_SIGN_DOMAIN + race_id_text.encode("utf-8")).digest())


def _wordlist() -> list[str]:
    text = resources.files("protocol").joinpath("data/bip39-english.txt").read_text(encoding="utf-8")
    return text.split()


def _normalise_mnemonic(mnemonic: str) -> list[str]:
    if not isinstance(mnemonic, str):
        raise LocalError("mnemonic-invalid", "a mnemonic is text of 12 or 24 words")
    words = unicodedata.normalize("NFKD", mnemonic).lower().split()
    if len(words) not in MNEMONIC_WORD_COUNTS:
        raise LocalError("mnemonic-invalid", f"a mnemonic has 12 or 24 words, this one has {len(words)}")
    return words


def check_mnemonic(mnemonic: str) -> None:
    """Refuse words outside the BIP39 English list and a wrong checksum (a typo in a backup).

    Raises ``LocalError`` (``mnemonic-invalid``): the words are the user's.
    """
    words = _normalise_mnemonic(mnemonic)
    index = {w: i for i, w in enumerate(_wordlist())}
    unknown = [w for w in words if w not in index]
    if unknown:
        raise LocalError("mnemonic-invalid", f"not BIP39 English words: {', '.join(unknown[:3])}")
    bits = "".join(format(index[w], "011b") for w in words)
    checksum_bits = len(bits) // 33
    entropy = int(bits[:-checksum_bits], 2).to_bytes(len(bits) * 32 // 33 // 8, "big")
    expected = format(hashlib.sha256(entropy).digest()[0], "08b")[:checksum_bits]
    if bits[-checksum_bits:] != expected:
        raise LocalError("mnemonic-invalid", "the mnemonic's checksum does not match; check each word")


def seed_from_mnemonic(mnemonic: str) -> bytes:
    """BIP39 seed (PBKDF2-HMAC-SHA512, 2048 rounds, salt "mnemonic", no passphrase), first 32 bytes.

    Raises ``LocalError`` (``mnemonic-invalid``) as ``check_mnemonic`` does.
    """
    check_mnemonic(mnemonic)
    phrase = " ".join(_normalise_mnemonic(mnemonic)).encode("utf-8")
    return hashlib.pbkdf2_hmac("sha512", phrase, b"mnemonic", 2048)[:SEED_BYTES]


def new_mnemonic(words: int = 24) -> str:
    """A fresh BIP39 English mnemonic (24 words by default, as the spec's client makes).

    Raises ``LocalError`` (``mnemonic-invalid``) for a length other than 12 or 24 words.
    """
    if words not in MNEMONIC_WORD_COUNTS:
        raise LocalError("mnemonic-invalid", "a mnemonic has 12 or 24 words")
    entropy = secrets.token_bytes(words * 4 // 3)
    checksum_bits = len(entropy) * 8 // 32
    bits = "".join(format(b, "08b") for b in entropy) + format(hashlib.sha256(entropy).digest()[0], "08b")[:checksum_bits]
    wordlist = _wordlist()
    return " ".join(wordlist[int(bits[i : i + 11], 2)] for i in range(0, len(bits), 11))


def read_identity_file(path: Path) -> Identity:
    """Load a key file, refusing one that is not a regular file, that others can read, or that is not
    exactly 32 bytes (a directory is named as one: its usual 0755 mode must not read as a leak).

    Raises ``LocalError``: ``identity-file-invalid``, ``identity-file-insecure`` or
    ``identity-file-unreadable``.
    """
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise LocalError("identity-file-invalid", f"{path} is a directory, not a key file; move it away, "
                             "or set identity_file in the node configuration to another path")
        if not stat.S_ISREG(info.st_mode):
            raise LocalError("identity-file-invalid", f"{path} is not a regular file (a device, FIFO or socket); "
                             "an identity key is a 32-byte file")
        if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise LocalError(
                "identity-file-insecure",
                f"{path} is readable by other users; run 'chmod 600 {path}' and try again",
            )
        data = path.read_bytes()
    except OSError as exc:
        raise LocalError("identity-file-unreadable", f"cannot read {path}: {exc.strerror}") from None
    if len(data) != SEED_BYTES:
        raise LocalError("identity-file-invalid", f"{path} must hold exactly {SEED_BYTES} bytes, it holds {len(data)}")
    return Identity(data)


def write_identity_file(path: Path, identity: Identity, *, overwrite: bool = False) -> None:
    """Write the seed atomically with mode 0600; never replace an existing key unless asked to.

    Raises ``LocalError``: ``identity-exists`` (a key is there and ``overwrite`` is off) or
    ``identity-file-unwritable``.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except FileExistsError:  # not "identity-exists": the folder's name is taken by a file
        raise LocalError("identity-file-unwritable", f"cannot create {path}: {path.parent} is a file, not a directory") from None
    except OSError as exc:
        raise LocalError("identity-file-unwritable", f"cannot create {path.parent} for {path.name}: {exc.strerror}") from None
    try:
        temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, identity.seed)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            if overwrite:
                os.replace(temp, path)
            else:
                os.link(temp, path)  # fails if another process created the key first
        finally:
            if temp.exists():
                temp.unlink()
    except FileExistsError:
        raise LocalError("identity-exists", f"{path} already holds an identity; pass --force to replace it") from None
    except OSError as exc:
        raise LocalError("identity-file-unwritable", f"cannot write {path}: {exc.strerror}") from None


def load_or_create_identity(path: Path) -> tuple[Identity, bool]:
    """The identity in ``path``, creating a fresh one on first use; returns (identity, created).

    Raises ``LocalError`` as ``read_identity_file`` and ``write_identity_file`` do.
    """
    if path.exists():
        return read_identity_file(path), False
    identity = Identity.generate()
    try:
        write_identity_file(path, identity)
    except LocalError as exc:
        if exc.code != "identity-exists":
            raise
        return read_identity_file(path), False  # another process won the race; use its key
    return identity, True
