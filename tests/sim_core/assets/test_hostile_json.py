"""Whatever JSON a GLB carries (any number, any ``extras`` value, lone surrogates, short headers), the
reader and the rules answer with a coded finding or an exact value, never another exception."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim_core.assets import fields
from sim_core.assets.admission import check
from sim_core.assets.bake import bake
from sim_core.assets.builtins import builtin_bytes
from sim_core.assets.container import read_container
from sim_core.assets.encoding import dumps
from sim_core.assets.findings import AssetRejected, shown
from sim_core.assets.reader import read_glb
from tests.sim_core.assets.crafting import edit, raw_glb, root, source
from tests.sim_core.assets.test_fuzz import CODE, SEEDS, _paths

MINIMAL = b'{"asset":{"version":"2.0"},"scenes":[{"nodes":[0]}],"nodes":[{"name":"A","translation":[%s,0,0]}]}'


def codes(data: bytes) -> list[str]:
    findings, _ = check(data)
    return findings.codes()


# ---------------------------------------------------------------- numbers

@pytest.mark.parametrize(
    ("number", "words"),
    [
        ("1e999999999999", "$.nodes.0.translation.0 holds a number that is not a finite double"),  # abs() overflowed Decimal
        ("-1e999999999999", "$.nodes.0.translation.0 holds a number that is not a finite double"),
        ("1.8e308", "$.nodes.0.translation.0 holds a number that is not a finite double"),
        ("1" * 10_000, "an integer of 10000 digits"),  # int() refuses past 4300 digits with advice for programmers
        ("-" + "9" * 20, "an integer of 20 digits"),
        ("NaN", "contains NaN"),
        ("-Infinity", "contains -Infinity"),
    ],
)
def test_numbers_no_double_can_hold_are_refused(number: str, words: str) -> None:
    with pytest.raises(AssetRejected) as info:
        read_glb(raw_glb(MINIMAL % number.encode()))
    assert info.value.code == "non-finite-number" and words in info.value.message


@pytest.mark.parametrize("number",
                         ["-0", "-0.0", "0e999999999999", "1e-999999999999", "1." + "0" * 10_000 + "1", "1.7976931348623157e308"])
def test_numbers_a_double_can_hold_are_read(number: str) -> None:
    """Tiny, signed-zero and very long numbers are finite: read (a 1.79e308 m translation is then out of range)."""
    try:
        asset = read_glb(raw_glb(MINIMAL % number.encode()))
    except AssetRejected as exc:
        assert number.startswith("1.79") and exc.code == "non-finite-number" and "within 10^6 m" in exc.message
        return
    assert asset.nodes[0].frame.position_um[0] in (0, 1_000_000)


def test_exact_scaling_neither_rounds_nor_underflows() -> None:
    assert fields.scaled(Decimal("125.4"), 1000) == 125_400
    assert fields.scaled(Decimal("150.00000000000000000000000000001"), 1000) is None  # 32 digits: not rounded to 28
    assert fields.scaled(Decimal("1e-999999999999"), 1000) is None  # not underflowed to 0
    assert fields.scaled(Decimal("-0.0"), 1000) == 0
    assert fields.scaled(Decimal("2.5E+3"), 1) == 2500


def test_tiny_directions_are_still_directions() -> None:
    assert fields.unit_ppm((Decimal("1e-600000"), Decimal(0), Decimal(0))) == [1_000_000, 0, 0]
    assert fields.unit_ppm((Decimal(0), Decimal("-3e-999999999"), Decimal("4e-999999999"))) == [0, -600_000, 800_000]
    assert fields.unit_ppm((Decimal(3), Decimal(4), Decimal(0))) == [600_000, 800_000, 0]


def _declare(doc: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    cursor = root(doc)
    for key in path[:-1]:
        cursor = cursor.setdefault(key, {})
    cursor[path[-1]] = value


@pytest.mark.parametrize(
    ("stem", "path", "value", "expected"),
    [
        ("track-02", ("physics", "gravity_direction"), [Decimal("1e-600000"), 0, 0], None),  # was DivisionByZero
        ("track-02", ("physics", "gravity_direction"), [0, Decimal("-1e-999999999"), 0], None),  # was DivisionUndefined
        ("battery-01", ("configured_output_w",), Decimal("150.00000000000000000000000000001"), "field-invalid"),  # was accepted
        ("battery-01", ("configured_output_w",), Decimal("1e-999999999999"), "field-invalid"),  # was read as 0 W
        ("chip-01", ("material",), "x" * 100_000, "material-not-allowed"),
    ],
)
def test_extreme_declarations_bake_or_are_refused_with_a_code(
    stem: str, path: tuple[str, ...], value: Any, expected: str | None
) -> None:
    data = edit(source(stem), lambda doc: _declare(doc, path, value))
    if expected is None:
        assert check(bake(data))[1] is not None
        return
    with pytest.raises(AssetRejected) as info:
        bake(data)
    assert info.value.code == expected and len(info.value.message) < 300  # a finding names a value, it does not echo it


def test_shown_cuts_long_values() -> None:
    assert shown("abc") == "'abc'" and shown(Decimal("1.5")) == "1.5"
    long = shown("x" * 10_000)
    assert len(long) < 80 and long.endswith("(10002 characters)")


NUMBER_TEXTS = st.one_of(
    st.sampled_from(["1e999999999999", "-1e999999999999", "1e-999999999999", "-0", "-0.0", "0e999999", "NaN", "Infinity",
                     "-Infinity", "1" * 10_000, "-" + "9" * 4400, "1." + "0" * 5000 + "1", "1.7976931348623159e308", "4.9e-324"]),
    st.builds(lambda m, e: f"{m}e{e}", st.integers(-(10**6), 10**6), st.integers(-(10**15), 10**15)),
    st.decimals(allow_nan=False, allow_infinity=False).map(str),
    st.integers(-(2**80), 2**80).map(str),
)
SENTINEL = "\x00number\x00"
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _with_numbers(doc: dict[str, Any], data: st.DataObject) -> bytes:
    """The document with 1–3 values (anywhere: glTF fields, extras, declarations) replaced by number texts."""
    paths = [p for p in _paths(doc) if p]
    texts = []
    for _ in range(data.draw(st.integers(1, 3))):
        parent = doc
        path = data.draw(st.sampled_from(paths))
        try:
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = SENTINEL
        except (KeyError, IndexError, TypeError):
            continue  # an earlier replacement cut this path
        texts.append(data.draw(NUMBER_TEXTS))
    text = dumps(doc)
    for number in texts:
        text = text.replace(json.dumps(SENTINEL), number, 1)
    return text.encode()


@FUZZ
@given(st.sampled_from(SEEDS), st.data())
def test_any_number_anywhere_in_an_asset(seed: bytes, data: st.DataObject) -> None:
    container = read_container(seed)
    mutated = raw_glb(_with_numbers(copy.deepcopy(container.doc), data), container.bin_chunk)
    findings, admitted = check(mutated)  # must not raise
    assert admitted is not None or findings.errors
    assert all(CODE.match(f.code) and f.message for f in findings.items)


@FUZZ
@given(st.sampled_from(["track-02", "battery-01", "weapon-02", "chip-01"]), st.data())
def test_any_number_anywhere_in_a_source_the_bake_reads(stem: str, data: st.DataObject) -> None:
    container = read_container(source(stem))
    mutated = raw_glb(_with_numbers(copy.deepcopy(container.doc), data), container.bin_chunk)
    try:
        bake(mutated)
    except AssetRejected as exc:
        assert exc.findings and all(CODE.match(f.code) for f in exc.findings)


# ---------------------------------------------------------------- extras, extensions, text, headers

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=5,
).filter(lambda value: not isinstance(value, dict))


@settings(max_examples=60, deadline=None)
@given(JSON_VALUES, st.sampled_from(["node", "mesh", "primitive", "scene-to-root", "asset", "accessor"]))
def test_extras_of_any_json_type_carry_no_open4wd_data(value: Any, where: str) -> None:
    """glTF lets extras be any JSON value; a non-object is ignored and a baked asset stays admitted."""

    def change(doc: dict[str, Any]) -> None:
        target = {
            "node": lambda: doc["nodes"][-1],
            "mesh": lambda: doc["meshes"][0],
            "primitive": lambda: doc["meshes"][0]["primitives"][0],
            "asset": lambda: doc["asset"],
            "accessor": lambda: doc["accessors"][0],
        }
        if where == "scene-to-root":  # the Open4WD keys move to the glTF root; the scene's extras become any value
            doc["extras"], doc["scenes"][0]["extras"] = doc["scenes"][0]["extras"], value
        else:
            target[where]()["extras"] = value

    findings, admitted = check(edit(builtin_bytes("builtin:roller-02"), change))
    assert admitted is not None, findings.codes()


def test_extensions_that_are_not_an_object_are_named() -> None:
    data = edit(builtin_bytes("builtin:roller-02"), lambda doc: doc["nodes"][0].update(extensions="KHR_nothing"))
    findings, _ = check(data)
    assert findings.codes() == ["gltf-invalid"]
    assert "$.nodes.0.extensions is 'KHR_nothing'; glTF requires extensions to be an object" in findings.items[0].message
    assert "AttributeError" not in findings.items[0].message


@pytest.mark.parametrize(
    "doc",
    [b'{"asset":{"version":"2.0"},"nodes":[{"name":"\\udc00"}]}', b'{"asset":{"version":"2.0"},"extras":{"\\ud800x":1}}'],
)
def test_lone_surrogate_escapes_are_not_text(doc: bytes) -> None:
    assert codes(raw_glb(doc)) == ["json-invalid"]
    assert codes(raw_glb(b'{"asset":{"version":"2.0"},"nodes":[{"name":"\\ud83d\\ude00"}]}')) == [
        "schema-marker-invalid",
        "manifest-missing",
    ]


@pytest.mark.parametrize(
    ("data", "code", "words"),
    [
        (b"", "not-a-glb", "empty"),
        (b"gl", "glb-truncated", "2 bytes"),
        (b"glTF" + bytes(7), "glb-truncated", "11 bytes, cut off inside the 12-byte GLB header"),
        (b"PNG\x00" + bytes(7), "not-a-glb", "magic"),
    ],
)
def test_short_files(data: bytes, code: str, words: str) -> None:
    findings, _ = check(data)
    assert findings.codes() == [code] and words in findings.items[0].message


def test_plain_gltf_marker_finding_comes_first() -> None:
    assert codes(raw_glb(b'{"asset":{"version":"2.0"},"scenes":[{"nodes":[0]}],"nodes":[{"name":"Cube"}]}')) == [
        "schema-marker-invalid",
        "manifest-missing",
    ]
    # an author's unbaked source (marked, no manifest): only the missing manifest, which says to bake it
    assert codes(source("chip-01")) == ["manifest-missing"]



def test_long_keys_are_cut_in_the_place_a_finding_names() -> None:
    key = "k" * 100_000
    doc = b'{"asset":{"version":"2.0"},"extras":{"%s":{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":1}}}}}}}}}}' % key.encode()
    with pytest.raises(AssetRejected) as info:
        read_glb(raw_glb(doc))
    assert info.value.code == "extras-too-deep" and len(info.value.message) < 200 and "$.extras.kkk" in info.value.message
