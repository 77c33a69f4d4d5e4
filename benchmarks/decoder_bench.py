"""The wire decoder against the alternatives, on the messages a node meets most, and what each says to
a faulty body.

Decoding: each case's frame bodies (real messages: signed race inputs chained by their digests, a room of
8 members, a signed Ready declaration, a snapshot of an 8-car world) decoded by

- ``msgpack.unpackb``: msgpack's C reader building plain maps and lists, nothing checked: the reference
  every other figure of the table is a ratio to, measured in the same round;
- ``msgspec, bare``: msgspec's typed decoder of the registered message union alone, without the node's
  check of ``Any`` values and its codes (what msgspec itself costs);
- ``node``: ``protocol.encoding.wire.decode_message``, the node's decoder;
- ``hand-written``: a strict decoder in Python as fast as this project could write one (``HandWritten``
  below: the same rules, one closure per field type built once from the type hints, no generated source,
  the path of a refused value put together only when it is refused), after ``msgpack.unpackb``.

Encoding: the node's ``encode_message`` against ``msgpack.packb`` of the same maps (a hand-written encoder
turns the message into those maps first, then packs them).

CPU is thread time (``time.thread_time_ns``), so another process on the machine slows a figure only
through the caches and the clock; each ratio is the median over ``--rounds`` rounds of candidate /
reference within the round. The machine's load average is printed before and after.

Faults: bodies with one fault each (a wrong type, a missing, extra or non-text field, an unknown type, a
value that is not plain data, a body that nests too deep or announces more than it holds) and what
``msgspec, bare``, ``node`` and ``hand-written`` answer: a coded ``ProtocolError`` (its code), or any
other exception or an acceptance (marked ``!``: a loss). The script exits 1 if the node's answer is not
the code in the second column.

    .venv/bin/python benchmarks/decoder_bench.py [--rounds 7] [--budget-ms 40]
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import statistics
import sys
import time
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, Union

import msgpack
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from protocol.encoding.plain_data import MAX_OPAQUE_DEPTH  # noqa: E402
from protocol.encoding.wire import REGISTRY, Message, decode_message, encode_message  # noqa: E402
from protocol.errors import ProtocolError  # noqa: E402
from protocol.identity.keys import Identity  # noqa: E402
from protocol.race.keys import announce  # noqa: E402
from protocol.race.messages import (  # noqa: E402
    InputRecord, RaceChecksum, RaceInput, RaceInputs, RaceRelay, RaceSnapshot, Want,
)
from protocol.race.signing import NO_PREVIOUS_INPUT, canonical_events, input_digest  # noqa: E402
from protocol.race.spans import OWN, build_span  # noqa: E402
from protocol.room.messages import MemberWire, ReadyDeclarationMsg, RoomState  # noqa: E402
from protocol.room.ready import build_declaration  # noqa: E402
from protocol.versions.record import node_version_info  # noqa: E402
from sim_core.world import World  # noqa: E402

for _module in ("protocol.link.handshake", "protocol.race.mesh", "protocol.spectate.messages",
                "protocol.versions.collection", "open4wd_node.net.link_rules"):
    importlib.import_module(_module)  # every message type a node registers: the decoders' unions are the node's

PEERS = 7
RACE_ID = "m" * 64 + "#0"


# ---- the messages ---------------------------------------------------------------------------------

def signed_inputs(peer: Identity, first: int, count: int) -> list[RaceInput]:
    """``count`` inputs of ``peer`` from frame ``first``, each signed by its race key and chained to the
    one before; a boost every third frame, as a driver presses it."""
    key, prev, inputs = peer.race_key(RACE_ID), NO_PREVIOUS_INPUT, []
    for frame in range(first, first + count):
        events = canonical_events([("boost", False)] if frame % 3 == 0 else [])
        digest = input_digest(RACE_ID, frame, events, prev)
        inputs.append(RaceInput(frame, [list(e) for e in events], prev, key.sign(digest)))
        prev = digest
    return inputs


def inputs_message(inputs: list[RaceInput], owner: str = OWN, want: tuple[Want, ...] = ()) -> RaceInputs:
    """A ``race-inputs`` of ``inputs`` (consecutive, chained) as one span."""
    events = [canonical_events(tuple((skill, hold) for skill, hold in i.events)) for i in inputs]
    span = build_span(owner, inputs[0].frame, inputs[0].prev, events, [i.signature for i in inputs])
    return RaceInputs(480, [span], list(want))


def cases() -> dict[str, list[Message]]:
    """Name → the messages of one case, decoded (and encoded) one after another."""
    peers = [Identity(bytes([index + 1]) * 32) for index in range(PEERS + 1)]
    me, others = peers[0], peers[1:]
    version = node_version_info("sim_core/2", 1, 1_700_000_000, "0123abcd")
    declaration = build_declaration(me, "room-1", "c" * 64, 3, version, [{"loadout": "l" * 64}], 1_700_000_000_000)
    members = [MemberWire(p.peer_id, f"player {i}", "participant", 3, i % 2 == 0, [{"loadout": "l" * 64}],
                          f"127.0.0.1:{9000 + i}") for i, p in enumerate(peers)]
    room = RoomState("room-1", me.peer_id, "lobby", {"rounds": [{"trackRef": "builtin:oval", "lapCount": 3,
                                                                 "durationLimitSec": 180}]},
                     "c" * 64, 2, 8, 4, members, 12)
    world = World.demo(8, seed=3)
    records = [InputRecord.of(p.peer_id, signed) for p in others for signed in signed_inputs(p, 472, 9)]
    messages: dict[str, list[Message]] = {
        f"race-inputs from {PEERS} peers (2 inputs each)": [inputs_message(signed_inputs(p, 481, 2)) for p in others],
        "race-inputs, catch-up (8 inputs)": [inputs_message(signed_inputs(others[0], 481, 8))],
        f"race-relay ({PEERS} peers' inputs)": [RaceRelay([InputRecord.of(p.peer_id, signed_inputs(p, 481, 1)[0])
                                                           for p in others])],
        "race-checksum": [RaceChecksum(480, world.state_hash(), bytes(64))],
        "race-key": [announce(me, RACE_ID)],
        "room-state (8 members)": [room],
        "ready-declaration": [ReadyDeclarationMsg(declaration.to_wire())],
        f"race-snapshot (8 cars, {len(records)} inputs)": [RaceSnapshot(7, 472, world.save_state(), records, bytes(64))],
    }
    return messages


# ---- the hand-written candidate -------------------------------------------------------------------

class HandWritten:
    """A strict decoder in Python: msgpack's reader, then one closure per field type (built once per
    type from its hints) that checks exact types, exact keys and plain ``Any`` data, and builds the
    message. A refusal is a ``ProtocolError`` with the node's codes; the path of a refused value is
    put together only when it is refused."""

    class Refused(Exception):
        def __init__(self, code: str, reason: str) -> None:
            super().__init__(reason)
            self.code, self.reason, self.path = code, reason, []

    SCALARS = frozenset({type(None), bool, int, float, str, bytes})

    def __init__(self) -> None:
        self.converters: dict[Any, Callable[[Any], Any]] = {}

    def decode(self, body: bytes) -> Message:
        try:
            data = msgpack.unpackb(body, raw=False, strict_map_key=False, ext_hook=self._ext, timestamp=0)
        except ProtocolError:
            raise
        except (ValueError, TypeError, msgpack.exceptions.UnpackException) as exc:
            raise ProtocolError("malformed-frame", f"the frame body is not valid msgpack ({type(exc).__name__})") from None
        if type(data) is not dict:
            raise ProtocolError("malformed-frame", "a frame body must be a msgpack map")
        kind = data.pop("type", None)
        if type(kind) is not str or kind not in REGISTRY:
            raise ProtocolError("unknown-message-type", f"unknown message type {kind!r}"[:200])
        try:
            built: Message = self.converter(REGISTRY[kind])(data)
        except HandWritten.Refused as exc:
            raise ProtocolError(exc.code, f"{kind}{''.join(reversed(exc.path))} {exc.reason}") from None
        return built

    @staticmethod
    def _ext(code: int, data: bytes) -> Any:
        raise ProtocolError("mistyped-field", f"msgpack extension type {code} is not allowed")

    def converter(self, hint: Any) -> Callable[[Any], Any]:
        found = self.converters.get(hint)
        if found is None:
            found = self.converters[hint] = self._make(hint)
        return found

    def _make(self, hint: Any) -> Callable[[Any], Any]:
        refused, scalars = HandWritten.Refused, HandWritten.SCALARS

        def at(segment: str, exc: HandWritten.Refused) -> HandWritten.Refused:
            exc.path.append(segment)
            return exc

        if hint is Any:
            def plain(value: Any, depth: int = 0) -> Any:
                if type(value) in scalars:
                    return value
                if depth >= MAX_OPAQUE_DEPTH:
                    raise refused("mistyped-field", "nests too deep")
                if type(value) is list:
                    for item in value:
                        plain(item, depth + 1)
                elif type(value) is dict and all(type(k) is str for k in value):
                    for item in value.values():
                        plain(item, depth + 1)
                else:
                    raise refused("mistyped-field", f"holds an unsupported {type(value).__name__}")
                return value
            return plain
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin in (typing.Union, types.UnionType):
            (option,) = [self.converter(a) for a in args if a is not type(None)]
            return lambda value: None if value is None else option(value)
        if origin is list:
            item = self.converter(args[0])

            def sequence(value: Any) -> Any:
                if type(value) is not list:
                    raise refused("mistyped-field", "must be a list")
                try:
                    return [item(v) for v in value]
                except HandWritten.Refused as exc:
                    raise at("[]", exc) from None
            return sequence
        if origin is tuple:
            items = [self.converter(a) for a in args]

            def fixed(value: Any) -> Any:
                if type(value) is not list or len(value) != len(items):
                    raise refused("mistyped-field", f"must be a list of {len(items)}")
                try:
                    return tuple(convert(v) for convert, v in zip(items, value, strict=True))
                except HandWritten.Refused as exc:
                    raise at("[]", exc) from None
            return fixed
        if origin is dict:
            key, entry = self.converter(args[0]), self.converter(args[1])

            def mapping(value: Any) -> Any:
                if type(value) is not dict:
                    raise refused("mistyped-field", "must be a map")
                return {key(k): entry(v) for k, v in value.items()}
            return mapping
        if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
            fields = msgspec.structs.fields(hint)
            names = frozenset(f.name for f in fields)
            exact = [(f.name, f.type) for f in fields if f.type in scalars]
            nested = [(f.name, self.converter(f.type)) for f in fields if f.type not in scalars]

            if hint.__struct_config__.array_like:  # a record encoded as a list of its fields, in order
                positional = [self.converter(f.type) for f in fields]

                def build_list(value: Any) -> Any:
                    if type(value) is not list or len(value) != len(positional):
                        raise refused("mistyped-field", f"must be a list of {len(positional)}")
                    try:
                        return hint(*(convert(v) for convert, v in zip(positional, value, strict=True)))
                    except HandWritten.Refused as exc:
                        raise at("[]", exc) from None
                return build_list

            def build(value: Any) -> Any:
                if type(value) is not dict:
                    raise refused("mistyped-field", "must be a map")
                if value.keys() != names:
                    extra = [k for k in value if k not in names]
                    if extra:
                        raise refused("extra-field", f"has unexpected field(s) {extra}")
                    raise refused("missing-field", f"lacks field(s) {sorted(names - value.keys())}")
                for name, kind in exact:
                    if type(value[name]) is not kind:
                        raise at(f".{name}", refused("mistyped-field", f"must be {kind.__name__}"))
                for name, convert in nested:
                    try:
                        value[name] = convert(value[name])
                    except HandWritten.Refused as exc:
                        raise at(f".{name}", exc) from None
                return hint(**value)
            return build

        def scalar(value: Any) -> Any:
            if type(value) is not hint:
                raise refused("mistyped-field", f"must be {hint.__name__}")
            return value
        return scalar


# ---- measuring ------------------------------------------------------------------------------------

def candidates() -> dict[str, Callable[[bytes], object]]:
    bare = msgspec.msgpack.Decoder(Union[tuple(REGISTRY.values())])  # noqa: UP007 - a union of a tuple of classes
    return {
        "msgpack.unpackb": msgpack.unpackb,
        "msgspec, bare": bare.decode,
        "node": decode_message,
        "hand-written": HandWritten().decode,
    }


Row = dict[str, tuple[Callable[[Any], object], list[Any]]]
"""Candidate → (what it runs, the inputs of one pass); the first candidate is the reference."""


def thread_ns(work: Callable[[Any], object], inputs: list[Any], count: int) -> float:
    """Thread CPU ns per pass over ``inputs``, ``count`` passes."""
    start = time.thread_time_ns()
    for _ in range(count):
        for item in inputs:
            work(item)
    return (time.thread_time_ns() - start) / count


def measure(rows: dict[str, Row], messages: dict[str, list[Message]], rounds: int, budget_ms: float) -> None:
    """One line per case: its bytes, the reference's µs per pass, every other candidate's CPU as a ratio to it."""
    names = list(next(iter(rows.values())))
    print(f"{'case':44} {'bytes':>7} {'reference µs':>13}  " + "  ".join(f"{n:>15}" for n in names[1:]))
    for case, row in rows.items():
        for work, inputs in row.values():
            assert work(inputs[0]) is not None  # warm, and every candidate takes the case
        reference, inputs = row[names[0]]
        count = max(5, int(budget_ms * 1e6 / max(thread_ns(reference, inputs, 50), 1)))
        ratios: dict[str, list[float]] = {n: [] for n in names[1:]}
        references = []
        for _ in range(rounds):
            references.append(thread_ns(reference, inputs, count))
            for name in names[1:]:
                ratios[name].append(thread_ns(*row[name], count) / references[-1])
        print(f"{case:44} {sum(len(encode_message(m)) for m in messages[case]):7} {statistics.median(references) / 1000:13.2f}  "
              + "  ".join(f"{statistics.median(ratios[n]):14.2f}×" for n in names[1:]))


def decoding(messages: dict[str, list[Message]]) -> dict[str, Row]:
    chosen = candidates()
    return {case: {name: (decode, [encode_message(m) for m in batch]) for name, decode in chosen.items()}
            for case, batch in messages.items()}


def encoding(messages: dict[str, list[Message]]) -> dict[str, Row]:
    """The node's encoder against ``msgpack.packb`` of the same maps (what the encoder before msgspec
    ended with, after it had turned the message into maps)."""
    def packb(data: Any) -> bytes:
        return msgpack.packb(data, use_bin_type=True)

    return {case: {"msgpack.packb": (packb, [msgpack.unpackb(encode_message(m)) for m in batch]),
                   "node": (encode_message, batch)} for case, batch in messages.items()}


def faults() -> dict[str, tuple[bytes, str]]:
    """Fault → (a body with that one fault, the code the node must answer)."""
    peer = Identity(bytes([2]) * 32)
    valid = msgpack.unpackb(encode_message(inputs_message(signed_inputs(peer, 481, 1))))
    span = valid["spans"][0]  # [owner, frame, prev, runs, signatures]
    relay = msgpack.unpackb(encode_message(RaceRelay([InputRecord.of(peer.peer_id, signed_inputs(peer, 481, 1)[0])])))
    record = relay["inputs"][0]

    def body(**changes: Any) -> bytes:
        return msgpack.packb({**valid, **changes}, use_bin_type=True, datetime=True)

    def one_span(at: int, value: Any) -> bytes:
        return body(spans=[[value if i == at else item for i, item in enumerate(span)]])

    def one_input(**changes: Any) -> bytes:  # the events of a relayed input are plain data of any shape
        return msgpack.packb({**relay, "inputs": [{**record, **changes}]}, use_bin_type=True, datetime=True)

    deep: Any = "boost"
    for _ in range(MAX_OPAQUE_DEPTH + 2):
        deep = [deep]
    return {
        "ack is text": (body(ack="480"), "mistyped-field"),
        "ack is a bool": (body(ack=True), "mistyped-field"),
        "frame is a float": (one_span(1, 481.0), "mistyped-field"),
        "prev is text, not bin": (one_span(2, "00"), "mistyped-field"),
        "a run of three numbers": (one_span(3, [[1, 0, 0]]), "mistyped-field"),
        "spans missing": (msgpack.packb({"type": "race-inputs", "ack": 480, "want": []}), "missing-field"),
        "signatures missing in a span": (body(spans=[span[:4]]), "mistyped-field"),
        "an extra field": (body(more=1), "extra-field"),
        "an extra item in a span": (body(spans=[span + [1]]), "mistyped-field"),
        "an extra field in a relayed input": (one_input(more=1), "extra-field"),
        "a field name that is bin": (msgpack.packb({**valid, b"ack": 1}, use_bin_type=True), "mistyped-field"),
        "an unknown type": (body(type="race-everything"), "unknown-message-type"),
        "no type": (msgpack.packb({k: v for k, v in valid.items() if k != "type"}), "unknown-message-type"),
        "a timestamp in an event": (one_input(events=[[datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)]]),
                                    "mistyped-field"),
        "an extension type in an event": (one_input(events=[[msgpack.ExtType(7, b"x")]]), "mistyped-field"),
        "a map with an int key in an event": (one_input(events=[[{1: 2}]]), "mistyped-field"),
        f"an event nested {MAX_OPAQUE_DEPTH + 2} deep": (one_input(events=[deep]), "mistyped-field"),
        "a list announcing 2^32-1 items": (body()[:-1] + b"\xdd\xff\xff\xff\xff", "malformed-frame"),
        "100 000 nested lists in a payload": (b"\x83" + b"".join(map(msgpack.packb, ["type", "version-info", "sender", "z",
                                                                              "payload"]))
                                              + b"\x81\xa1k" + b"\x91" * 100_000 + b"\x01", "malformed-frame"),
        "100 000 nested lists for an int": (b"\x82\xa4type\xabrace-inputs\xa3ack" + b"\x91" * 100_000 + b"\x01",
                                            "mistyped-field"),
        "invalid UTF-8 in text": (body(type=b"x").replace(b"\xc4\x01x", b"\xa2\xff\xfe"), "malformed-frame"),
        "not a map": (msgpack.packb([1, 2]), "malformed-frame"),
    }


def answer(decode: Callable[[bytes], object], data: bytes) -> str:
    try:
        decode(data)
    except ProtocolError as exc:
        return exc.code
    except Exception as exc:  # a loss: what a peer sent escaped as something else than a coded refusal
        return f"{type(exc).__name__}!"
    return "accepted!"


def check_faults() -> bool:
    chosen = {name: decode for name, decode in candidates().items() if name != "msgpack.unpackb"}
    print(f"\n{'fault':40} {'node must say':22} " + " ".join(f"{n:>22}" for n in chosen))
    right = True
    for fault, (data, code) in faults().items():
        answers = {name: answer(decode, data) for name, decode in chosen.items()}
        right = right and answers["node"] == code
        print(f"{fault:40} {code:22} " + " ".join(f"{a:>22}" for a in answers.values()))
    return right


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds per case; each ratio is their median")
    parser.add_argument("--budget-ms", type=float, default=40.0, help="reference CPU per round and case")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, msgspec {msgspec.__version__}, msgpack {msgpack.version}, "
          f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    messages = cases()
    print("\nDecoding: CPU per pass over each case's bodies, msgpack.unpackb's in µs, every other as a ratio to it")
    measure(decoding(messages), messages, args.rounds, args.budget_ms)
    print("\nEncoding: CPU per pass over each case's messages, msgpack.packb's of their maps in µs, the node's as a ratio")
    measure(encoding(messages), messages, args.rounds, args.budget_ms)
    right = check_faults()
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not right:
        raise SystemExit("decoder_bench: the node's decoder gave a fault another answer than its code")


if __name__ == "__main__":
    main()
