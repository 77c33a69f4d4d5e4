"""Configuration keys and command-line flags: one to one, one rule, one default, flag > file > default."""

from __future__ import annotations

import argparse
import json
import tomllib
from collections import defaultdict
from collections.abc import Iterator

import pytest
from hypothesis import given, strategies as st

from open4wd_node.cli.commands.watch import SETTINGS as WATCH_SETTINGS
from open4wd_node.runtime.addresses import Address, Advertise
from open4wd_node.cli.main import build_parser, main, node_context
from open4wd_node.runtime.config import DEFAULTS, NodeConfig, Scope, config_from_mapping, flag_dest, load_config, settings
from open4wd_node.runtime.errors import UserError
from open4wd_node.runtime.values import IntRange, ValueRejected
from tests.layout import REPO_ROOT
from tests.coded import raises_coded

ROOT = REPO_ROOT
SHIPPED = ROOT / "configs" / "node.toml"
SCOPE_COMMANDS = {Scope.GLOBAL: {()}, Scope.ROOM: {("host",), ("join",)}}  # and ``watch``: WATCH_SETTINGS only
# Options that are not node settings: they say where the configuration is, or what this one room or
# match is (docs/node.md "Configuration"). A new flag on these commands must be added here or be a key.
NOT_SETTINGS = {
    (): {"-h", "--help", "--data-dir", "--config"},
    ("host",): {"-h", "--help", "--track", "--rounds", "--laps", "--time-limit", "--car", "--min-players", "--max-players",
                "--spectators", "--auto-ready", "--json", "--cars-events", "--seed", "--fault"},
    ("join",): {"-h", "--help", "--car", "--spectate", "--auto-ready", "--json", "--cars-events", "--seed", "--fault"},
    ("watch",): {"-h", "--help", "--json", "--cars-events", "--web", "--web-public"},
}
# Another command's option that shares a setting's flag name but is not that setting.
# the mode and frames per tick of the nodes a demo or a soak starts, passed to each as --mode (the soak's
# also takes mixed) and --frames-per-tick; where the relay daemon listens: its [relay] table's key, not a node's
NAMESAKES = {(("demo",), "--mode"), (("demo",), "--frames-per-tick"), (("soak",), "--mode"), (("soak",), "--frames-per-tick"),
             (("signal",), "--listen")}
# A value every setting refuses, as typed on the command line and as written in TOML.
REFUSED = {
    "economy_config_version": ("0", "0"),
    "deprecated_materials": ("x" * 65, json.dumps(["x" * 65])),
    "identity_file": ("p" * 4097, json.dumps("p" * 4097)),
    "asset_walls": ("tire=0", "{ tire = [0] }"),
    "asset_yanked": ("tire=3,x", '{ tire = [3, "x"] }'),
    "asset_min_versions": ("motor=9007199254740992", "{ motor = 9007199254740992 }"),
    "log_format": ("xml", '"xml"'),
    "listen": ("nohost", '"nohost"'),
    "advertise": ("0.0.0.0", '"0.0.0.0"'),
    "reachability": ("nat", '"nat"'),
    "signals": ("http://127.0.0.1:8080", '["http://127.0.0.1:8080"]'),
    "ice_servers": ("turns:127.0.0.1:3478", '["turns:127.0.0.1:3478"]'),
    "ice_hosts": ("localhost", '["localhost"]'),
    "turn_credentials": ("x" * 4097, json.dumps("x" * 4097)),
    "nickname": ("n" * 65, json.dumps("n" * 65)),
    "driver": ("human", '"human"'),
    "mode": ("fast", '"fast"'),
    "input_delay": ("9", "9"),
    "frames_per_tick": ("5", "5"),
    "control_port": ("65536", "65536"),
}


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], argparse.Action]]:
    """Every option of the console script, with the command path that declares it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, (*path, name))
        else:
            yield path, action


def test_every_key_has_exactly_one_flag_with_its_rule_and_no_default_of_its_own():
    declared: dict[str, list[tuple[tuple[str, ...], argparse.Action]]] = defaultdict(list)
    for path, action in walk(build_parser()):
        if action.dest.startswith(flag_dest("")):
            declared[action.dest.removeprefix(flag_dest(""))].append((path, action))
    for key, setting in settings():
        where = declared.pop(key.name, [])
        commands = SCOPE_COMMANDS[setting.scope] | ({("watch",)} if key.name in WATCH_SETTINGS else set())
        assert {path for path, _ in where} == commands, key.name
        assert len(where) == len(commands)
        name = setting.flag.removeprefix("--").replace("-", "_")
        assert key.name in (name, name + "s"), "a flag is named after its key (a repeatable one in the singular)"
        for _, action in where:
            assert action.option_strings == [setting.flag]
            assert action.type is setting.rule  # the rule the file's value goes through
            assert action.default is None  # "not given": the file, else NodeConfig's default applies
            assert isinstance(action, argparse._AppendAction) is setting.rule.repeatable
            assert action.metavar and key.name in action.help and "%" not in action.help
    assert not declared, f"flags without a key: {sorted(declared)}"


def test_no_other_option_shares_a_setting_flag_and_every_node_option_is_decided():
    flags = {setting.flag for _, setting in settings()}
    namesakes, undecided = set(), set()
    for path, action in walk(build_parser()):
        if action.dest.startswith(flag_dest("")):
            continue
        namesakes |= {(path, flag) for flag in action.option_strings if flag in flags}
        if path in NOT_SETTINGS:
            undecided |= {(path, flag) for flag in action.option_strings if flag not in NOT_SETTINGS[path]}
    assert namesakes == NAMESAKES
    assert not undecided, "a new option of host, join or the node must be a configuration key or listed as per-run"


@pytest.mark.parametrize("key", sorted(REFUSED))
def test_a_value_is_refused_in_the_same_words_on_both_edges(tmp_path, capsys, key):
    setting = dict((f.name, s) for f, s in settings())[key]
    typed, written = REFUSED[key]
    argv = [setting.flag, typed, "version"] if setting.scope is Scope.GLOBAL else ["host", setting.flag, typed]
    assert main(["--data-dir", str(tmp_path), *argv]) == 2
    cli = capsys.readouterr().err
    assert cli.startswith(f"error[usage]: {setting.flag} takes "), cli
    config = tmp_path / "node.toml"
    config.write_text(f"{key} = {written}\n")
    assert main(["--config", str(config), "version"]) == 1
    toml = capsys.readouterr().err
    assert toml.startswith(f"error[config-invalid]: option {key!r} takes "), toml
    words = cli.removeprefix(f"error[usage]: {setting.flag} ").split(" (see: ")[0]
    assert toml.removeprefix(f"error[config-invalid]: option {key!r} ").strip() == words


def test_every_setting_has_a_refused_example():
    assert set(REFUSED) == {f.name for f, _ in settings()}


SCALARS = [(f.name, s.rule) for f, s in settings() if not s.rule.repeatable]


@given(st.sampled_from(SCALARS), st.one_of(st.integers(), st.text(max_size=80)))
def test_typed_and_written_values_get_the_same_answer(case, value):
    """A number typed as text and the same number in TOML, or the same string, meet the same rule."""
    _, rule = case
    if isinstance(rule, IntRange) != isinstance(value, int):
        return
    outcomes = []
    for attempt in (lambda: rule.parse(str(value)), lambda: rule.check(value)):
        try:
            outcomes.append(("ok", attempt()))
        except ValueRejected as exc:
            outcomes.append(("refused", str(exc)))
    assert outcomes[0] == outcomes[1]


def test_flag_beats_file_beats_default(tmp_path):
    (tmp_path / "node.toml").write_text(
        'listen = "0.0.0.0:47600"\nnickname = "from-file"\ndriver = "idle"\ninput_delay = 4\n'
        'deprecated_materials = ["abs"]\nasset_walls = { tire = [3], motor = [2] }\n'
    )
    argv = ["--data-dir", str(tmp_path), "--deprecated-material", "pc,wood", "--deprecated-material", "abs",
            "--asset-wall", "tire=5,4", "--asset-min-version", "motor=2", "--asset-min-version", "motor=3",
            "host", "--nickname", "from-flag", "--input-delay", "2", "--advertise", "[2001:db8::7]:47601"]
    config = node_context(build_parser().parse_args(argv)).config
    assert config.listen == Address("0.0.0.0", 47600)  # file
    assert (config.nickname, config.input_delay) == ("from-flag", 2)  # flag over file
    assert config.driver == "idle" and config.mode == DEFAULTS.mode  # file; default
    assert config.advertise == Advertise("2001:db8::7", 47601)
    assert config.deprecated_materials == ("abs", "pc", "wood")  # a list flag adds to the file's list
    assert config.asset_walls == {"tire": (4, 5), "motor": (2,)}  # a table flag replaces the names it gives
    assert config.asset_min_versions == {"motor": 3}  # the last occurrence of a name wins
    bare = node_context(build_parser().parse_args(["--data-dir", str(tmp_path / "none"), "version"])).config
    assert bare == DEFAULTS


def test_shipped_config_documents_every_key_with_its_flag():
    text = SHIPPED.read_text()
    data = tomllib.loads(text)
    assert load_config(SHIPPED) == DEFAULTS
    assert list(data) == [f.name for f, _ in settings()]  # every key, in the order of NodeConfig
    lines = text.splitlines()
    for key, setting in settings():
        at = next(i for i, line in enumerate(lines) if line.startswith(f"{key.name} = "))
        comment = []
        while at > 0 and lines[at - 1].startswith("#"):
            at -= 1
            comment.append(lines[at])
        assert comment, f"{key.name} has no comment"
        assert f"CLI: {setting.flag}" in " ".join(comment), f"{key.name}'s comment does not name {setting.flag}"


def test_config_file_and_errors(tmp_path, capsys):
    good = tmp_path / "node.toml"
    good.write_text('economy_config_version = 5\ndeprecated_materials = ["wood"]\n')
    assert main(["--data-dir", str(tmp_path), "version", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["economy_config_version"] == 5
    assert main(["--data-dir", str(tmp_path), "--economy-config-version", "6", "version", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["economy_config_version"] == 6

    bad = tmp_path / "bad.toml"
    bad.write_text("economy_config_version = 'five'\n")
    assert main(["--config", str(bad), "version"]) == 1
    assert "error[config-invalid]" in capsys.readouterr().err
    bad.write_text("nonsense = 1\n")
    assert main(["--config", str(bad), "version"]) == 1
    assert f"known: {', '.join(sorted(NodeConfig.__dataclass_fields__))}" in capsys.readouterr().err
    bad.write_text("= broken")
    assert main(["--config", str(bad), "version"]) == 1
    assert main(["--config", str(tmp_path / "missing.toml"), "version"]) == 1
    assert "error[config-unreadable]" in capsys.readouterr().err


def test_config_merges_deprecated_materials():
    with raises_coded(UserError, "config-invalid"):
        config_from_mapping({"deprecated_materials": [1]})
    assert config_from_mapping({"deprecated_materials": ["wood"]}).deprecated_materials == ("wood",)


def test_asset_policy_tables():
    config = config_from_mapping({"asset_walls": {"tire": [3, 2, 3]}, "asset_min_versions": {"motor": 2}})
    assert config.asset_walls == {"tire": (2, 3)} and config.asset_min_versions == {"motor": 2}
    for bad in ({"asset_walls": {"tire": 3}}, {"asset_yanked": {"tire": [0]}}, {"asset_min_versions": {"motor": [2]}},
                {"asset_walls": {"bad type!": [2]}}, {"asset_min_versions": {"motor": True}}):
        with raises_coded(UserError, "config-invalid"):
            config_from_mapping(bad)
