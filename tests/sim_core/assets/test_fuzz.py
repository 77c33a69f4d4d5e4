"""Fuzzing the reader and admission: whatever the bytes, the answer is a coded finding, never a crash."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim_core.assets.admission import check
from sim_core.assets.builtins import BUILTIN_REFS, builtin_bytes
from sim_core.assets.container import read_container
from sim_core.assets.encoding import write_glb
from tests.sim_core.assets.crafting import raw_glb

CODE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SEEDS = [builtin_bytes(ref) for ref in ("builtin:chip-01", "builtin:weapon-03", "builtin:track-03", "builtin:tire-02")]
FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_coded(data: bytes) -> None:
    findings, admitted = check(data)  # must not raise
    if admitted is None:
        assert findings.errors, "a refused asset carries at least one error"
    for f in findings.items:
        assert CODE.match(f.code) and f.message


@FUZZ
@given(st.binary(max_size=512))
def test_random_bytes(data: bytes) -> None:
    assert_coded(data)


@FUZZ
@given(st.binary(max_size=256))
def test_random_bytes_behind_a_valid_header(tail: bytes) -> None:
    assert_coded(b"glTF\x02\x00\x00\x00" + len(tail).to_bytes(4, "little") + tail)


@FUZZ
@given(st.sampled_from(SEEDS), st.integers(min_value=0))
def test_truncations(seed: bytes, cut: int) -> None:
    assert_coded(seed[: cut % len(seed)])


@FUZZ
@given(st.sampled_from(SEEDS), st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=8))
def test_byte_mutations(seed: bytes, edits: list[tuple[int, int]]) -> None:
    data = bytearray(seed)
    for position, value in edits:
        data[position % len(data)] = value
    assert_coded(bytes(data))


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            out += _paths(child, prefix + (i,))
    return out


@FUZZ
@given(st.sampled_from(SEEDS), st.data())
def test_json_mutations(seed: bytes, data: st.DataObject) -> None:
    container = read_container(seed)
    doc = copy.deepcopy(container.doc)
    paths = [p for p in _paths(doc) if p]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            if data.draw(st.booleans()) and isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent[path[-1]] = json.loads(json.dumps(data.draw(JSON_VALUES)))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed or replaced this path
    try:
        mutated = write_glb(doc, container.bin_chunk)
    except (TypeError, ValueError):
        return  # not encodable as JSON at all (nothing a stranger could send)
    assert_coded(mutated)


@FUZZ
@given(st.text(max_size=200))
def test_random_json_text(text: str) -> None:
    assert_coded(raw_glb(text.encode("utf-8", "surrogatepass")))


def test_seeds_are_accepted() -> None:
    assert len(BUILTIN_REFS) == 27
    for seed in SEEDS:
        assert check(seed)[1] is not None


TRACK_NUMBERS = st.one_of(st.integers(-3, 3), st.floats(-2.0, 2.0, allow_nan=False), st.sampled_from([0.0, 1.0, -1.0, 0.5]))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_track_the_bake_accepts_converts_for_the_race(data: st.DataObject) -> None:
    """Whatever a valid-looking source says, an admitted track becomes a TrackSpec without error."""
    from sim_core.assets.bake import bake
    from sim_core.assets.convert import track_spec
    from sim_core.assets.findings import AssetRejected
    from tests.sim_core.assets.crafting import source

    container = read_container(source(data.draw(st.sampled_from(["track-02", "track-03"]))))
    doc = copy.deepcopy(container.doc)
    for _ in range(data.draw(st.integers(1, 4))):
        target = data.draw(st.sampled_from([n for n in doc["nodes"] if "matrix" in n]))
        target["matrix"][data.draw(st.integers(0, 14))] = data.draw(TRACK_NUMBERS)
    try:
        baked = bake(write_glb(doc, container.bin_chunk))
    except AssetRejected as exc:
        assert exc.findings
        return
    findings, admitted = check(baked)
    assert admitted is not None, findings.codes()
    track_spec(admitted)
