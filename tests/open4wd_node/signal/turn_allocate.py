"""A minimal TURN client (RFC 5766 Allocate over UDP with long-term credentials, RFC 5389 framing), enough
to prove that a credential minted by ``/turn-token`` opens a relay allocation on a real coturn."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import socket
import struct

import trio

MAGIC = 0x2112A442
ALLOCATE_REQUEST, ALLOCATE_SUCCESS, ALLOCATE_ERROR = 0x0003, 0x0103, 0x0113
USERNAME, MESSAGE_INTEGRITY, ERROR_CODE, REALM, NONCE = 0x0006, 0x0008, 0x0009, 0x0014, 0x0015
XOR_RELAYED_ADDRESS, REQUESTED_TRANSPORT = 0x0016, 0x0019
UDP = 17


def _attribute(kind: int, value: bytes) -> bytes:
    return struct.pack("!HH", kind, len(value)) + value + b"\0" * (-len(value) % 4)


def _message(kind: int, transaction: bytes, attributes: bytes, key: bytes | None) -> bytes:
    if key is None:
        return struct.pack("!HHI", kind, len(attributes), MAGIC) + transaction + attributes
    header = struct.pack("!HHI", kind, len(attributes) + 24, MAGIC) + transaction  # the length counts MI
    integrity = hmac.new(key, header + attributes, hashlib.sha1).digest()
    return header + attributes + _attribute(MESSAGE_INTEGRITY, integrity)


def parse(datagram: bytes) -> tuple[int, bytes, dict[int, bytes]]:
    """(message type, transaction id, attributes) of a STUN message."""
    kind, length, _cookie = struct.unpack("!HHI", datagram[:8])
    attributes, offset = {}, 20
    while offset + 4 <= 20 + length:
        attr, size = struct.unpack("!HH", datagram[offset:offset + 4])
        attributes.setdefault(attr, datagram[offset + 4:offset + 4 + size])
        offset += 4 + size + (-size % 4)
    return kind, datagram[8:20], attributes


def relayed_address(value: bytes) -> tuple[str, int]:
    """An XOR-RELAYED-ADDRESS (IPv4)."""
    port = struct.unpack("!H", value[2:4])[0] ^ (MAGIC >> 16)
    address = struct.unpack("!I", value[4:8])[0] ^ MAGIC
    return socket.inet_ntoa(struct.pack("!I", address)), port


async def allocate(host: str, port: int, username: str, password: str) -> tuple[int, dict[int, bytes]]:
    """Ask for a UDP relay allocation with the long-term credential (username, password): the final answer's
    type and attributes (after the 401 that brings the realm and nonce)."""
    with trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        await sock.connect((host, port))
        transport = _attribute(REQUESTED_TRANSPORT, bytes([UDP, 0, 0, 0]))
        transaction = secrets.token_bytes(12)
        await sock.send(_message(ALLOCATE_REQUEST, transaction, transport, None))
        with trio.fail_after(10):
            kind, _, attributes = parse(await sock.recv(2048))
        assert kind == ALLOCATE_ERROR and attributes[ERROR_CODE][2:4] == bytes([4, 1]), attributes  # 401
        realm, nonce = attributes[REALM], attributes[NONCE]
        key = hashlib.md5(username.encode() + b":" + realm + b":" + password.encode()).digest()
        signed = (transport + _attribute(USERNAME, username.encode()) + _attribute(REALM, realm)
                  + _attribute(NONCE, nonce))
        transaction = secrets.token_bytes(12)
        await sock.send(_message(ALLOCATE_REQUEST, transaction, signed, key))
        with trio.fail_after(10):
            kind, answered, attributes = parse(await sock.recv(2048))
        assert answered == transaction
        return kind, attributes
