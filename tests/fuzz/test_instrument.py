"""Each door's campaign instruments a scope of real modules (a misspelt prefix would silently instrument
nothing and leave the fuzzer blind)."""

from __future__ import annotations

import pytest

from fuzz.doors import MODULES
from fuzz.instrument import EVERYTHING, SCOPES, modules_of, within


def test_every_door_has_a_scope() -> None:
    assert set(SCOPES) == set(MODULES)


@pytest.mark.parametrize("name", sorted(SCOPES))
def test_every_prefix_of_a_scope_names_modules_that_exist(name: str) -> None:
    for prefix in SCOPES[name]:
        package = prefix.split(".")[0]
        assert package in EVERYTHING, prefix
        assert any(within(module, (prefix,)) for module in modules_of(package)), f"{name}: no module {prefix}"


def test_a_prefix_takes_its_submodules_and_not_its_namesakes() -> None:
    assert within("sim_core.assets.reader", ("sim_core.assets",))
    assert within("sim_core.assets", ("sim_core.assets",))
    assert not within("sim_core.assets_extra", ("sim_core.assets",))
    assert "protocol.link.noise" in set(modules_of("protocol"))
