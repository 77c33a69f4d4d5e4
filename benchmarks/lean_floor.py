"""native_floor.c's node in the leanest Python: the same work, wire and report, with the libraries the node
uses (``cryptography``'s ChaCha20-Poly1305, PyNaCl's Ed25519, ``hashlib``'s SHA-256) and none of its layers
(no trio, no links, no session): a loop that sleeps to each tick with ``time.sleep``, reads the sockets with
``os.read`` and writes them with ``os.write``.

Why: between the native floor and the node lie two things, Python itself and the node's own layers. This
separates them (docs/node.md, "Against a node without its layers"). Two of the node's layers can be put back, named after the
arguments, so that the difference to the plain run is what each costs:

- ``codec``: the bodies are the node's ``RaceInputs`` through its strict msgpack wire codec
  (``protocol.encoding.wire``) instead of a fixed binary layout packed with ``struct``;
- ``digests``: the inputs are chained, signed and verified with the node's DAG-CBOR ``input_digest`` and its
  keys (``protocol.identity.ed25519``) instead of SHA-256 over the packed fields and PyNaCl's keys.

Run by ``native_floor.py``; not for use alone.

    python lean_floor.py NODES FRAMES ME LISTENER PORT0 .. PORTn-1 START_NS [codec] [digests]
"""

from __future__ import annotations

import hashlib
import os
import socket
import struct
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from nacl.bindings import crypto_sign_seed_keypair
from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey, VerifyKey

PERIOD_NS = 16_666_667
WARMUP_FRAMES = 120
MAX_STEPS_PER_TICK = 4
RUN = 4
MAX_UNACKED = 8
RACE_ID = "lean-floor"
EVENTS: tuple[tuple[str, bool], ...] = (("brake", True),)  # one held skill, every frame
EVENT_BYTES = b"\x01\x01\x01" + bytes(5)  # the same events packed: count, skill code, hold; 8 bytes as in C
HEAD = struct.Struct(">i")
BODY_HEAD = struct.Struct(">iB")
RECORD = struct.Struct(">i8s32s64s")


@dataclass(frozen=True)
class Record:
    """One signed input as the loop handles it, whatever the codec."""

    frame: int
    prev: bytes
    signature: bytes


def key_for(sender: int, receiver: int) -> bytes:
    """The direction's fixed key, the same bytes as native_floor.c's (BLAKE2b-256 of the seed)."""
    return hashlib.blake2b(b"floor" + bytes([sender, receiver, 0]), digest_size=32).digest()


def seed_of(node: int) -> bytes:
    return bytes([node, 0x4F]) + bytes(30)


def nonce_of(n: int) -> bytes:
    return b"\0\0\0\0" + n.to_bytes(8, "little")


class PackedCodec:
    """Bodies as native_floor.c's: ``ack, count`` then ``count`` fixed records."""

    def encode(self, ack: int, records: list[Record]) -> bytes:
        return BODY_HEAD.pack(ack, len(records)) + b"".join(
            RECORD.pack(r.frame, EVENT_BYTES, r.prev, r.signature) for r in records)

    def decode(self, body: bytes) -> tuple[int, list[Record]]:
        ack, count = BODY_HEAD.unpack_from(body)
        if len(body) != BODY_HEAD.size + count * RECORD.size:
            raise ValueError("a body of the wrong length")
        unpacked = (RECORD.unpack_from(body, BODY_HEAD.size + i * RECORD.size) for i in range(count))
        return ack, [Record(frame, prev, signature) for frame, _events, prev, signature in unpacked]


class NodeCodec:
    """Bodies as the node's ``race-inputs`` through its strict wire codec: one span, whose inputs after the
    first carry no ``prev`` (the receiver chains them: an empty ``prev`` in a decoded ``Record``)."""

    def __init__(self) -> None:
        from protocol.encoding.wire import Message, decode_message, encode_message
        from protocol.errors import ProtocolError
        from protocol.race.messages import InputSpan, RaceInputs
        from protocol.race.spans import skills_mask

        self._decode, self._encode, self._refused = decode_message, encode_message, ProtocolError
        self._span, self._inputs, self._mask = InputSpan, RaceInputs, skills_mask(EVENTS)
        self._registry: dict[str, type[Message]] = {"race-inputs": RaceInputs}

    def encode(self, ack: int, records: list[Record]) -> bytes:
        spans = [self._span("", records[0].frame, records[0].prev, [(len(records), self._mask)],
                            b"".join(r.signature for r in records))] if records else []
        return self._encode(self._inputs(ack=ack, spans=spans, want=[]))

    def decode(self, body: bytes) -> tuple[int, list[Record]]:
        """``ValueError`` for a body the strict decoder refuses, as ``PackedCodec``'s."""
        try:
            message = self._decode(body, self._registry)
        except self._refused as exc:
            raise ValueError(str(exc)) from exc
        assert isinstance(message, self._inputs)  # the registry holds only RaceInputs
        records = []
        for span in message.spans:
            sigs = span.signatures
            records += [Record(span.frame + i, span.prev if i == 0 else b"", sigs[64 * i:64 * i + 64])
                        for i in range(len(sigs) // 64)]
        return message.ack, records


class PlainDigests:
    """SHA-256 over the packed fields; PyNaCl's keys."""

    def __init__(self, me: int, nodes: int) -> None:
        self._signing = SigningKey(seed_of(me))
        self._verify = {other: VerifyKey(crypto_sign_seed_keypair(seed_of(other))[0]) for other in range(nodes)}

    def digest(self, frame: int, prev: bytes) -> bytes:
        return hashlib.sha256(HEAD.pack(frame) + EVENT_BYTES + prev).digest()

    def sign(self, digest: bytes) -> bytes:
        return self._signing.sign(digest).signature

    def verify(self, signer: int, digest: bytes, signature: bytes) -> bool:
        try:
            self._verify[signer].verify(digest, signature)
        except BadSignatureError:
            return False
        return True


class NodeDigests:
    """The node's chained DAG-CBOR input digests and its Ed25519 keys."""

    def __init__(self, me: int, nodes: int) -> None:
        from protocol.identity.ed25519 import PrivateKey, PublicKey
        from protocol.race.signing import input_digest

        self._input_digest: Callable[[str, int, tuple[tuple[str, bool], ...], bytes], bytes] = input_digest
        self._private = PrivateKey(seed_of(me))
        self._public = {other: PublicKey(crypto_sign_seed_keypair(seed_of(other))[0]) for other in range(nodes)}

    def digest(self, frame: int, prev: bytes) -> bytes:
        return self._input_digest(RACE_ID, frame, EVENTS, prev)

    def sign(self, digest: bytes) -> bytes:
        return self._private.sign(digest)

    def verify(self, signer: int, digest: bytes, signature: bytes) -> bool:
        return self._public[signer].verify(digest, signature)


Codec = PackedCodec | NodeCodec
Digests = PlainDigests | NodeDigests


class Counts:
    verifications = heard = bad_inputs = refused = 0


class Peer:
    def __init__(self, me: int, other: int) -> None:
        self.index = other
        self.fd = -1
        self.send = ChaCha20Poly1305(key_for(me, other))
        self.receive = ChaCha20Poly1305(key_for(other, me))
        self.send_n = self.receive_n = 0
        self.buffer = b""
        self.acked = self.heard = -1
        self.chain = bytes(32)
        self.unverified = 0


def handle(peer: Peer, body: bytes, counts: Counts, codec: Codec, digests: Digests) -> None:
    """One body: hash each new input into the peer's chain; verify one signature per run of RUN."""
    try:
        ack, records = codec.decode(body)
    except ValueError:  # either codec's refusal
        counts.refused += 1
        return
    peer.acked = max(peer.acked, ack)
    for record in records:
        if record.frame <= peer.heard:
            continue  # a copy of an input already held
        prev = record.prev or peer.chain  # the node's codec leaves out the prev of an input it chains itself
        if prev != peer.chain:
            counts.bad_inputs += 1
        peer.chain = digests.digest(record.frame, prev)
        peer.heard = record.frame
        counts.heard += 1
        peer.unverified += 1
        if peer.unverified >= RUN:
            if not digests.verify(peer.index, peer.chain, record.signature):
                counts.bad_inputs += 1
            counts.verifications += 1
            peer.unverified = 0


def read_peer(peer: Peer, counts: Counts, codec: Codec, digests: Digests) -> None:
    try:
        data = os.read(peer.fd, 1 << 17)
    except BlockingIOError:
        return
    buffer = peer.buffer + data
    at = 0
    while len(buffer) - at >= 4:
        (length,) = HEAD.unpack_from(buffer, at)
        if len(buffer) - at < 4 + length:
            break
        body = peer.receive.decrypt(nonce_of(peer.receive_n), buffer[at + 4:at + 4 + length], None)
        peer.receive_n += 1
        handle(peer, body, counts, codec, digests)
        at += 4 + length
    peer.buffer = buffer[at:]


def send_peer(peer: Peer, newest: int, own: dict[int, Record], codec: Codec) -> None:
    first = max(peer.acked + 1, newest - MAX_UNACKED + 1)
    body = codec.encode(peer.heard, [own[frame] for frame in range(first, newest + 1)])
    sealed = peer.send.encrypt(nonce_of(peer.send_n), body, None)
    peer.send_n += 1
    frame = HEAD.pack(len(sealed)) + sealed
    while frame:  # loopback with small frames: a short write is rare
        try:
            frame = frame[os.write(peer.fd, frame):]
        except BlockingIOError:
            continue


def mesh(nodes: int, me: int, listener: socket.socket, ports: list[int]) -> dict[int, Peer]:
    """Node i dials every j > i (and says who it is) and accepts every j < i."""
    peers = {other: Peer(me, other) for other in range(nodes) if other != me}
    for other, peer in peers.items():
        if other > me:
            for attempt in range(201):
                try:
                    connection = socket.create_connection(("127.0.0.1", ports[other]))
                    break
                except ConnectionRefusedError:
                    if attempt == 200:
                        raise
                    time.sleep(0.01)
            connection.sendall(bytes([me]))
            peer.fd = connection.detach()
    for _ in range(me):
        connection, _address = listener.accept()
        who = connection.recv(1)[0]
        peers[who].fd = connection.detach()
    for peer in peers.values():
        sock = socket.socket(fileno=peer.fd)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        sock.detach()
    return peers


def main() -> int:
    nodes, frames, me, listener_fd = (int(arg) for arg in sys.argv[1:5])
    ports = [int(arg) for arg in sys.argv[5:5 + nodes]]
    start = int(sys.argv[5 + nodes])
    layers = set(sys.argv[6 + nodes:])
    if not layers <= {"codec", "digests"}:
        print(f"lean_floor: unknown layers {sorted(layers - {'codec', 'digests'})}", file=sys.stderr)
        return 2
    codec: Codec = NodeCodec() if "codec" in layers else PackedCodec()
    digests: Digests = NodeDigests(me, nodes) if "digests" in layers else PlainDigests(me, nodes)
    peers = mesh(nodes, me, socket.socket(fileno=listener_fd), ports)
    own: dict[int, Record] = {}
    counts = Counts()
    chain = bytes(32)
    next_frame = worst_lag = tick = cpu_start = 0
    while next_frame < frames:
        time.sleep(max(0, start + tick * PERIOD_NS - time.monotonic_ns()) / 1e9)
        if next_frame >= WARMUP_FRAMES and cpu_start == 0:
            cpu_start = time.thread_time_ns()
        due = (time.monotonic_ns() - start) // PERIOD_NS
        for peer in peers.values():
            read_peer(peer, counts, codec, digests)
        steps = 0
        while next_frame <= due and next_frame < frames and steps < MAX_STEPS_PER_TICK:
            prev, chain = chain, digests.digest(next_frame, chain)
            own[next_frame] = Record(next_frame, prev, digests.sign(chain))
            own.pop(next_frame - MAX_UNACKED - 64, None)
            next_frame += 1
            steps += 1
        if next_frame > WARMUP_FRAMES:
            worst_lag = max(worst_lag, due + 1 - next_frame)
        for peer in peers.values():
            send_peer(peer, next_frame - 1, own, codec)
        tick = max(due + 1, tick + 1)
    cpu = time.thread_time_ns() - cpu_start
    print(me, frames - WARMUP_FRAMES, cpu, worst_lag, counts.verifications, counts.heard, counts.bad_inputs,
          counts.refused, flush=True)
    time.sleep(0.3)  # let the peers read the last frames before the links close
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError as exc:
        print(f"lean_floor: {exc}", file=sys.stderr)
        sys.exit(3)
