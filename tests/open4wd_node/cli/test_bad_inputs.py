"""Every bad input a user can hand the node ends in one coded error with the right exit status (1 the
input was refused, 2 the command line was wrong), no traceback, and a JSON answer with ``--json``.

Most cases run ``open4wd_node.cli.main.main`` in this process on real files; the ones that need a real
stdin, a closed stdin or a network peer run the console script as a real process.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from open4wd_node.cli.main import main
from protocol.identity.keys import Identity
from protocol.room.invitation import new_secret
from sim_core.assets.builtins import builtin_bytes
from sim_core.assets.demo_round import archetype_loadout
from tests.sim_core.assets.crafting import edit, json_glb, raw_glb

ABANDON = "abandon " * 11 + "about"


@dataclass(frozen=True)
class Outcome:
    status: int
    out: str
    err: str

    def refused(self, code: str, status: int = 1) -> "Outcome":
        """The one coded line on stderr, the exit status, and no traceback anywhere."""
        assert self.status == status, (self.status, self.out, self.err)
        assert f"error[{code}]: " in self.err, self.err
        assert "Traceback" not in self.out + self.err
        return self

    def json_error(self, code: str) -> dict:
        """With ``--json`` the error is also one JSON object on stdout."""
        record = json.loads(self.out.strip().splitlines()[-1])
        assert record["event"] == "error" and record["code"] == code and record["message"]
        return record

    def report(self) -> dict:
        """An asset action's one JSON object (``--json``)."""
        [line] = self.out.strip().splitlines()
        return json.loads(line)


def cli(capsys: pytest.CaptureFixture[str], tmp_path: Path, *argv: str) -> Outcome:
    status = main(["--data-dir", str(tmp_path / "data"), *argv])
    captured = capsys.readouterr()
    return Outcome(status, captured.out, captured.err)


def process(tmp_path: Path, *argv: str, stdin: bytes | None = b"", close_stdin: bool = False) -> Outcome:
    """The console script as a real process (``close_stdin``: started with no standard input at all)."""
    env = {**os.environ, "OPEN4WD_DATA_DIR": str(tmp_path / "data")}
    command = [sys.executable, "-m", "open4wd_node.cli.main", *argv]
    if close_stdin:  # the shell's <&-: file descriptor 0 is not open in the child
        command = ["sh", "-c", 'exec "$@" <&-', "sh", *command]
        stdin = None
    out = subprocess.run(command, input=stdin, capture_output=True, env=env, timeout=120)
    return Outcome(out.returncode, out.stdout.decode(), out.stderr.decode())


def finding_codes(report: dict) -> list[str]:
    return [f["code"] for f in report["findings"]]


# ---------------------------------------------------------------- identity import --mnemonic-file

@pytest.fixture
def hostile(tmp_path: Path) -> dict[str, Path]:
    """Paths a user may type by mistake: missing, a directory, binary bytes, a symlink loop, a file
    under a file, a lone-surrogate JSON escape, NaN, an integer of 10,000 digits."""
    (tmp_path / "a-directory").mkdir()
    (tmp_path / "binary").write_bytes(bytes(range(256)))
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    (tmp_path / "plain").write_text("x")
    return {
        "missing": tmp_path / "missing", "directory": tmp_path / "a-directory", "binary": tmp_path / "binary",
        "loop": tmp_path / "loop-a", "under-a-file": tmp_path / "plain" / "x",
    }


@pytest.mark.parametrize(
    ("kind", "code", "words"),
    [
        ("missing", "mnemonic-unreadable", "does not exist"),
        ("directory", "mnemonic-unreadable", "is a directory"),
        ("binary", "mnemonic-invalid", "is not UTF-8 text"),
        ("loop", "mnemonic-unreadable", "symbolic links"),
        ("under-a-file", "mnemonic-unreadable", "Not a directory"),
    ],
)
def test_mnemonic_file_that_cannot_be_used(capsys, tmp_path, hostile, kind, code, words):
    outcome = cli(capsys, tmp_path, "identity", "import", "--json", "--mnemonic-file", str(hostile[kind])).refused(code)
    assert words in outcome.err and str(hostile[kind]) in outcome.err
    outcome.json_error(code)
    assert not (tmp_path / "data" / "identity.key").exists()


def test_mnemonic_file_empty_path_is_not_stdin(capsys, tmp_path):
    outcome = cli(capsys, tmp_path, "identity", "import", "--mnemonic-file", "").refused("mnemonic-unreadable")
    assert "empty path" in outcome.err


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_mnemonic_file_that_never_ends_is_refused_after_4_kib(capsys, tmp_path):
    outcome = cli(capsys, tmp_path, "identity", "import", "--mnemonic-file", "/dev/zero").refused("mnemonic-invalid")
    assert "larger than 4096 bytes" in outcome.err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_mnemonic_file_without_permission(capsys, tmp_path):
    secret = tmp_path / "words.txt"
    secret.write_text(ABANDON)
    secret.chmod(0)
    outcome = cli(capsys, tmp_path, "identity", "import", "--mnemonic-file", str(secret)).refused("mnemonic-unreadable")
    assert "permission denied" in outcome.err


def test_mnemonic_file_with_a_byte_order_mark_is_read(capsys, tmp_path):
    words = tmp_path / "words.txt"
    words.write_bytes(b"\xef\xbb\xbf" + ABANDON.encode() + b"\n")
    assert cli(capsys, tmp_path, "identity", "import", "--mnemonic-file", str(words)).status == 0


def test_mnemonic_on_stdin_that_is_not_text_or_closed(tmp_path):
    process(tmp_path, "identity", "import", stdin=b"\xff\xfe abandon").refused("mnemonic-invalid")
    outcome = process(tmp_path, "identity", "import", "--json", close_stdin=True).refused("mnemonic-unreadable")
    assert "standard input is closed" in outcome.err
    outcome.json_error("mnemonic-unreadable")
    assert process(tmp_path, "identity", "import", stdin=ABANDON.encode()).status == 0


def test_identity_key_that_is_a_directory_is_named_as_one(capsys, tmp_path):
    (tmp_path / "data" / "identity.key").mkdir(parents=True)
    outcome = cli(capsys, tmp_path, "identity", "show", "--json").refused("identity-file-invalid")
    assert "is a directory" in outcome.err and "readable by other users" not in outcome.err
    outcome.json_error("identity-file-invalid")


@pytest.mark.parametrize("action", [["identity", "show"], ["identity", "new"], ["identity", "new", "--force"]])
def test_data_dir_that_is_a_file_is_not_an_existing_identity(capsys, tmp_path, action):
    (tmp_path / "data").write_text("not a directory")
    outcome = cli(capsys, tmp_path, *action).refused("identity-file-unwritable")
    assert "is a file, not a directory" in outcome.err and "already holds an identity" not in outcome.err


# ---------------------------------------------------------------- loadout files: asset loadout and --car

def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


LOADOUT_CASES = [
    # name, file content (None: use the hostile path of that name), code, words in the message
    ("recursion-deep", _deep(30_000), "json-too-deep", "nests deeper than 8 levels"),
    ("nine-deep", json.dumps({"tires": {"FL": [[[[[[["x"]]]]]]]}}), "json-too-deep", "nests deeper than 8 levels"),
    ("too-large", json.dumps({"chassis": "x" * 70_000}), "file-too-large", "larger than 65536 bytes"),
    ("nan", '{"passiveWeightSplitPct": NaN}', "json-invalid", "NaN is not a JSON number"),
    ("long-integer", '{"passiveWeightSplitPct": ' + "9" * 10_000 + "}", "json-invalid", "10000 digits"),
    ("lone-surrogate", '{"\\ud800": "builtin:chassis-01"}', "json-invalid", "lone UTF-16 surrogate"),
    ("broken", "{", "json-invalid", "is not valid JSON"),
    ("empty", " \n", "json-invalid", "is empty"),
    ("not-utf8", None, "file-invalid", "is not UTF-8 text"),
    ("directory", None, "file-unreadable", "is a directory"),
    ("missing", None, "file-unreadable", "does not exist"),
    ("loop", None, "file-unreadable", "symbolic links"),
]


def _loadout_path(tmp_path: Path, hostile: dict[str, Path], name: str, content: str | None) -> Path:
    if content is not None:
        path = tmp_path / f"{name}.json"
        path.write_text(content)
        return path
    return hostile["binary"] if name == "not-utf8" else hostile[name]


@pytest.mark.parametrize(("name", "content", "code", "words"), LOADOUT_CASES)
def test_asset_loadout_file_that_cannot_be_used(capsys, tmp_path, hostile, name, content, code, words):
    path = _loadout_path(tmp_path, hostile, name, content)
    text = cli(capsys, tmp_path, "asset", "loadout", str(path))
    assert text.status == 1 and f"error[{code}]: " in text.out and words in text.out and "Traceback" not in text.out + text.err
    report = cli(capsys, tmp_path, "asset", "loadout", "--json", str(path)).report()
    assert report["accepted"] is False and finding_codes(report) == [code]


@pytest.mark.parametrize(("name", "content", "code", "words"), [case for case in LOADOUT_CASES if case[0] != "missing"])
def test_car_file_that_cannot_be_used(capsys, tmp_path, hostile, name, content, code, words):
    path = _loadout_path(tmp_path, hostile, name, content)
    outcome = cli(capsys, tmp_path, "host", "--json", "--car", str(path)).refused(code)  # refused before any socket opens
    assert words in outcome.err and "--car loadout file" in outcome.err and "[Errno" not in outcome.err
    outcome.json_error(code)


def test_car_that_is_neither_archetype_nor_file(capsys, tmp_path):
    for ref in ("fast", ""):
        outcome = cli(capsys, tmp_path, "host", "--car", ref).refused("car-invalid")
        assert "speed, heavy, control or a loadout JSON file" in outcome.err


def test_a_good_car_file_still_reads(capsys, tmp_path):
    from open4wd_node.assets.cars import CarChoice

    path = tmp_path / "two.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([archetype_loadout(1), archetype_loadout(3)]).encode())
    assert CarChoice.parse(str(path)).rotation(2)[1]["motor"] == "builtin:motor-03"


JSON_TEXT_PIECES = st.sampled_from(['{', '}', '[', ']', '"', '\\ud800', ',', ':', '1', '-0', '1e999', 'NaN', '9' * 30, 'null',
                                   '\xef\xbb\xbf', 'é', ' '])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=200),
                 st.lists(JSON_TEXT_PIECES, max_size=60).map(lambda parts: "".join(parts).encode("utf-8", "surrogatepass"))))
def test_any_bytes_in_a_loadout_file_read_or_coded(tmp_path, data):
    from open4wd_node.assets.cars import loadout_file
    from open4wd_node.runtime.errors import UserError
    from open4wd_node.runtime.user_files import shape

    path = tmp_path / "any.json"
    path.write_bytes(data)
    try:
        value = loadout_file("the loadout file").read(str(path))
    except UserError as exc:
        assert exc.code in ("json-invalid", "json-too-deep", "file-invalid") and exc.message
        return
    depth, broken_text = shape(value)
    assert depth <= 8 and not broken_text
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # printable as it is


# ---------------------------------------------------------------- asset files

def test_validate_empty_path_says_so(capsys, tmp_path):
    outcome = cli(capsys, tmp_path, "asset", "validate", "")
    assert outcome.status == 1 and "error[file-unreadable]: the asset file is an empty path" in outcome.out
    assert "Is a directory" not in outcome.out


@pytest.mark.parametrize(("kind", "code", "words"),
                         [("directory", "file-unreadable", "is a directory"), ("loop", "file-unreadable", "symbolic links")])
def test_asset_file_that_cannot_be_read(capsys, tmp_path, hostile, kind, code, words):
    report = cli(capsys, tmp_path, "asset", "validate", "--json", str(hostile[kind])).report()
    assert finding_codes(report["files"][0]) == [code] and words in report["files"][0]["findings"][0]["message"]


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_endless_asset_file_is_refused_without_reading_it_all(capsys, tmp_path):
    report = cli(capsys, tmp_path, "asset", "validate", "--json", "/dev/zero").report()
    assert finding_codes(report["files"][0]) == ["glb-too-large"]


def test_short_file_starting_with_the_magic_is_truncated_not_foreign(capsys, tmp_path):
    short = tmp_path / "short.glb"
    short.write_bytes(b"glTF" + bytes(7))  # 11 bytes
    outcome = cli(capsys, tmp_path, "asset", "validate", str(short))
    assert outcome.status == 1 and "error[glb-truncated]: the file is 11 bytes" in outcome.out
    assert "magic" not in outcome.out


def test_huge_exponent_in_the_gltf_json_is_a_finding(capsys, tmp_path):
    """``1e999999999999`` as a node translation used to end in decimal.Overflow from ``abs()``."""
    path = tmp_path / "huge.glb"
    path.write_bytes(raw_glb(b'{"asset":{"version":"2.0"},"nodes":[{"translation":[1e999999999999,0,0]}]}'))
    outcome = cli(capsys, tmp_path, "asset", "validate", str(path))
    assert outcome.status == 1 and "error[non-finite-number]: $.nodes.0.translation.0" in outcome.out
    assert "Traceback" not in outcome.out + outcome.err


def test_plain_gltf_is_first_told_it_is_not_an_open4wd_asset(capsys, tmp_path):
    path = tmp_path / "plain.glb"
    path.write_bytes(json_glb({"asset": {"version": "2.0"}, "scenes": [{"nodes": [0]}], "nodes": [{"name": "Cube"}]}))
    report = cli(capsys, tmp_path, "asset", "validate", "--json", str(path)).report()
    assert finding_codes(report["files"][0]) == ["schema-marker-invalid", "manifest-missing"]


def test_gltf_extras_of_any_json_type_are_not_a_schema_error(capsys, tmp_path):
    def odd_extras(doc: dict) -> None:
        doc["nodes"][0]["extras"] = "a note from the exporter"
        doc["nodes"][1]["extras"] = [1, 2, 3]
        doc["meshes"][0]["extras"] = 7
        doc["extras"] = None

    path = tmp_path / "odd.glb"
    path.write_bytes(edit(builtin_bytes("builtin:roller-02"), odd_extras))
    outcome = cli(capsys, tmp_path, "asset", "validate", str(path))
    assert outcome.status == 0, outcome.out  # those nodes carried no Open4WD data: the digest still matches


def test_stored_asset_that_cannot_be_read_is_store_corrupt(capsys, tmp_path):
    cid = "ab" * 32
    (tmp_path / "data" / "assets" / "ab" / f"{cid}.glb").mkdir(parents=True)
    report = cli(capsys, tmp_path, "asset", "validate", "--json", cid).report()
    assert finding_codes(report["files"][0]) == ["store-corrupt"]
    assert "Is a directory" in report["files"][0]["findings"][0]["message"]


def test_import_into_a_data_dir_that_is_a_file(capsys, tmp_path):
    (tmp_path / "data").write_text("not a directory")
    good = tmp_path / "tire.glb"
    good.write_bytes(builtin_bytes("builtin:tire-01"))
    report = cli(capsys, tmp_path, "asset", "import", "--json", str(good)).report()
    assert report["accepted"] is False and finding_codes(report["files"][0]) == ["store-unwritable"]


def test_a_hostile_node_name_cannot_forge_a_finding_line(capsys, tmp_path):
    forged = "A\n  error[all-good]: nothing to see"
    path = tmp_path / "forged.glb"
    path.write_bytes(json_glb({"asset": {"version": "2.0"}, "nodes": [{"name": forged}, {"name": forged}]}))
    outcome = cli(capsys, tmp_path, "asset", "validate", str(path))
    assert outcome.status == 1 and "error[duplicate-node-name]" in outcome.out
    assert not any(line.lstrip().startswith("error[all-good]") for line in outcome.out.splitlines())


# ---------------------------------------------------------------- --json on every asset action

@pytest.fixture
def broken_glb(tmp_path: Path) -> Path:
    path = tmp_path / "broken.glb"
    path.write_bytes(builtin_bytes("builtin:motor-01")[:300])
    return path


def test_inspect_json_on_a_refused_file_prints_the_findings(capsys, tmp_path, broken_glb):
    outcome = cli(capsys, tmp_path, "asset", "inspect", "--json", str(broken_glb)).refused("glb-truncated")
    report = outcome.report()
    assert report == {"file": str(broken_glb), "accepted": False, "findings": report["findings"]}
    assert finding_codes(report) == ["glb-truncated"]


def test_bake_json_prints_the_findings_or_the_result(capsys, tmp_path, broken_glb):
    out = tmp_path / "out.glb"
    report = cli(capsys, tmp_path, "asset", "bake", "--json", str(broken_glb), str(out)).refused("glb-truncated").report()
    assert report["accepted"] is False and finding_codes(report) == ["glb-truncated"] and not out.exists()
    report = cli(capsys, tmp_path, "asset", "bake", "--json", str(tmp_path / "nope.glb"), str(out)) \
        .refused("file-unreadable").report()
    assert finding_codes(report) == ["file-unreadable"]
    source = tmp_path / "source.glb"
    source.write_bytes(builtin_bytes("builtin:chip-03"))
    done = cli(capsys, tmp_path, "asset", "bake", "--json", str(source), str(out))
    assert done.status == 0 and done.report()["accepted"] is True and done.report()["type"] == "chip"


@pytest.mark.parametrize("output", ["", "a-directory", "no-such-dir/out.glb"])
def test_bake_output_that_cannot_be_written(capsys, tmp_path, hostile, output):
    target = output if not output else str(tmp_path / output)
    outcome = cli(capsys, tmp_path, "asset", "bake", "--json", "builtin:chip-01", target).refused("file-unwritable")
    assert "[Errno" not in outcome.err and ("empty path" in outcome.err or "directory" in outcome.err)
    outcome.json_error("file-unwritable")


def test_import_json_reports_every_file(capsys, tmp_path, broken_glb):
    good = tmp_path / "tire.glb"
    good.write_bytes(builtin_bytes("builtin:tire-01"))
    outcome = cli(capsys, tmp_path, "asset", "import", "--json", str(good), str(broken_glb), str(tmp_path / "missing.glb"))
    assert outcome.status == 1
    report = outcome.report()
    assert report["accepted"] is False
    assert [(f["accepted"], finding_codes(f)) for f in report["files"]] == [
        (True, []), (False, ["glb-truncated"]), (False, ["file-unreadable"])]
    assert report["files"][0]["stored"] == report["files"][0]["content_id"]


def test_validate_and_loadout_json_on_refusal(capsys, tmp_path, broken_glb):
    report = cli(capsys, tmp_path, "asset", "validate", "--json", str(broken_glb)).report()
    assert finding_codes(report["files"][0]) == ["glb-truncated"]
    loadout = tmp_path / "no-chip.json"
    loadout.write_text(json.dumps({**archetype_loadout(1), "chip": None}))
    report = cli(capsys, tmp_path, "asset", "loadout", "--json", str(loadout)).report()
    assert report["accepted"] is False and "loadout-weapon-requires-chip" in finding_codes(report)


def test_file_names_that_are_not_utf8_are_printed_escaped(tmp_path):
    name = os.fsdecode(b"\xff.glb")
    outcome = process(tmp_path, "asset", "validate", "--json", name)
    assert outcome.status == 1 and "Traceback" not in outcome.err
    assert json.loads(outcome.out)["files"][0]["file"] == "\\xff.glb"


# ---------------------------------------------------------------- the simulation and the network

def test_demo_world_with_no_cars_names_the_rule():
    from sim_core import World
    from sim_core.errors import SimError

    with pytest.raises(SimError) as info:
        World.demo(0)
    assert info.value.code == "world-invalid-vehicles" and "1..8 cars" in info.value.message
    with pytest.raises(SimError) as info:
        World.demo(9)
    assert info.value.code == "world-too-many-cars"


class TinyHttpServer:
    """A real HTTP server on loopback that answers whatever arrives with ``400 Bad Request`` at once,
    as web servers do with bytes that cannot start a request."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.requests: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                self.requests.append(conn.recv(65536))
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    def close(self) -> None:
        self.sock.close()


def test_joining_a_port_where_http_answers(tmp_path):
    server = TinyHttpServer()
    try:
        invite = f"open4wd://127.0.0.1:{server.port}/{uuid.uuid4()}?host={Identity(bytes(32)).peer_id}#participant={new_secret()}"
        outcome = process(tmp_path, "join", "--json", invite).refused("peer-not-open4wd")
    finally:
        server.close()
    assert server.requests, "the node really dialled the HTTP server"
    assert f"127.0.0.1:{server.port}" in outcome.err and "HTTP" in outcome.err and "byte frame" not in outcome.err
    outcome.json_error("peer-not-open4wd")


async def test_an_http_client_on_a_node_port_is_refused_as_not_open4wd():
    import structlog
    import trio

    from open4wd_node.net.stream_carrier import foreign_protocol
    from open4wd_node.net.transport import serve

    assert foreign_protocol(b"HTTP") == "HTTP" and foreign_protocol(b"SSH-") == "SSH"
    assert foreign_protocol(b"\x16\x03\x01\x02") == "TLS"
    assert foreign_protocol(b"\x00\x00\x00\x40") is None  # a real frame header

    async def never(link):
        raise AssertionError("no link should open")

    with structlog.testing.capture_logs() as logs:
        async with trio.open_nursery() as nursery:
            address = await nursery.start(serve, never, Identity(bytes([5]) * 32))
            stream = await trio.open_tcp_stream(address.host, address.port)
            await stream.send_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            try:
                while await stream.receive_some(4096):  # the node tells why, then hangs up
                    pass
            except trio.BrokenResourceError:
                pass  # hung up with part of the request unread: a reset
            while not any(entry["event"] == "link-refused" for entry in logs):  # logged just after the hang-up
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    [refused] = [entry for entry in logs if entry["event"] == "link-refused"]
    assert refused["code"] == "peer-not-open4wd" and "'GET '" in refused["reason"]


# ---------------------------------------------------------------- numbers already checked at the CLI edge

@pytest.mark.parametrize(
    ("argv", "code", "status"),
    [
        (["--economy-config-version", "-3", "version", "--json"], "usage", 2),
        (["host", "--json", "--control-port", "70000"], "usage", 2),
        (["host", "--json", "--seed", "-1"], "usage", 2),
        (["host", "--json", "--spectators", "-1"], "usage", 2),
        (["sim", "--json", "--cars", "0"], "usage", 2),
    ],
)
def test_numbers_out_of_range_on_the_command_line(capsys, tmp_path, argv, code, status):
    outcome = cli(capsys, tmp_path, *argv).refused(code, status)
    assert "takes an integer in" in outcome.err
    outcome.json_error(code)


def test_economy_config_version_of_23_digits_in_toml(capsys, tmp_path):
    config = tmp_path / "node.toml"
    config.write_text("economy_config_version = 12345678901234567890123\n")
    outcome = cli(capsys, tmp_path, "--config", str(config), "version", "--json").refused("config-invalid")
    assert "economy_config_version" in outcome.err and "takes an integer in 1..9007199254740991" in outcome.err
    outcome.json_error("config-invalid")

