"""What an operator sees of the [app], [router], [publisher] and [archive] tables: every default, each
bound accepted and the first value past it refused, and the exact words of every refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from garlicfarm.app.config import DEFAULT_I2CP, DEFAULT_ROUTER_URL, AppConfig
from garlicfarm.config import ConfigError
from garlicfarm.i2p.build import check_leaf
from tests.app.test_config import load

#: a leaf a signing publisher accepts (a b32 address)
LEAF = "a" * 52 + ".b32.i2p"


def refusal(extra: str, tmp_path: Path) -> str:
    """The message an operator reads for ``extra``, with the file it names checked and cut off."""
    with pytest.raises(ConfigError) as caught:
        load(extra, tmp_path)
    message = str(caught.value)
    where = f"{tmp_path / 'node-2.toml'}: "
    assert message.startswith(where), message
    return message[len(where) :]


# -- defaults and every key set ------------------------------------------------------------------


def test_every_default(tmp_path: Path) -> None:
    data = tmp_path / "node-2"
    assert load("", tmp_path) == AppConfig(
        interval=60.0,
        publish_config="auto",
        master="farm-master",
        master_given=False,
        router_kind="static",
        router_url=DEFAULT_ROUTER_URL,
        router_password_file=None,
        router_pin=None,
        leaves=("farm-leaf-2",),
        status_file=None,
        publisher_kind="file",
        publisher_path=data / "metals.json",
        publisher_command=(),
        publisher_url=None,
        publisher_format="json",
        publisher_keys=None,
        publisher_expires=3600,
        publisher_i2cp=DEFAULT_I2CP,
        publisher_session=None,
        publisher_username=None,
        publisher_password_file=None,
        archive_dir=data / "archive",
        retention_days=90,
    )


def test_every_key_set(tmp_path: Path) -> None:
    app = load(
        f"""
[app]
interval = 5
publish_config = "off"
master = "master.b32.i2p"
[router]
kind = "i2pcontrol"
url = "https://10.0.0.1:7650/jsonrpc"
password_file = "router.password"
pin = "sha256:00ff"
leaves = ["{LEAF}"]
status_file = "router.json"
[publisher]
kind = "i2cp"
path = "out/metals.bin"
command = ["sign-metals", "--stdin"]
url = "http://127.0.0.1:8080/metals"
format = "binary"
keys = "member.dat"
expires = 600
i2cp = "tcp:10.0.0.1:7654"
session = "member.session"
username = "i2cp-user"
password_file = "i2cp.password"
[archive]
dir = "/var/lib/archive"
retention_days = 7
""",
        tmp_path,
    )
    assert app == AppConfig(
        interval=5.0,
        publish_config="off",
        master="master.b32.i2p",
        master_given=True,
        router_kind="i2pcontrol",
        router_url="https://10.0.0.1:7650/jsonrpc",
        router_password_file=tmp_path / "router.password",
        router_pin="sha256:00ff",
        leaves=(LEAF,),
        status_file=tmp_path / "router.json",
        publisher_kind="i2cp",
        publisher_path=tmp_path / "out" / "metals.bin",
        publisher_command=("sign-metals", "--stdin"),
        publisher_url="http://127.0.0.1:8080/metals",
        publisher_format="binary",
        publisher_keys=tmp_path / "member.dat",
        publisher_expires=600,
        publisher_i2cp="tcp:10.0.0.1:7654",
        publisher_session=tmp_path / "member.session",
        publisher_username="i2cp-user",
        publisher_password_file=tmp_path / "i2cp.password",
        archive_dir=Path("/var/lib/archive"),
        retention_days=7,
    )
    assert isinstance(app.interval, float)


def test_the_signed_file_defaults_to_metals_bin(tmp_path: Path) -> None:
    app = load('[publisher]\nformat = "binary"\nkeys = "member.dat"\n', tmp_path)
    assert app.publisher_path == tmp_path / "node-2" / "metals.bin"


def test_master_given_only_when_written(tmp_path: Path) -> None:
    assert load('[app]\nmaster = "farm-master"\n', tmp_path).master_given is True
    assert load("[app]\ninterval = 60\n", tmp_path).master_given is False


# -- closed choices --------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["off", "on", "auto"])
def test_publish_config_choices(value: str, tmp_path: Path) -> None:
    assert load(f'[app]\npublish_config = "{value}"\n', tmp_path).publish_config == value


@pytest.mark.parametrize("value", ["static", "i2pcontrol"])
def test_router_kinds(value: str, tmp_path: Path) -> None:
    assert load(f'[router]\nkind = "{value}"\n', tmp_path).router_kind == value


@pytest.mark.parametrize(
    ("kind", "needs"),
    [
        ("file", ""),
        ("i2cp", 'keys = "member.dat"\n'),
        ("command", 'command = ["sign"]\n'),
        ("url", 'url = "http://127.0.0.1:8080/metals"\n'),
        ("none", ""),
    ],
)
def test_publisher_kinds(kind: str, needs: str, tmp_path: Path) -> None:
    assert load(f'[publisher]\nkind = "{kind}"\n{needs}', tmp_path).publisher_kind == kind


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('[app]\npublish_config = "ON"\n', "[app] publish_config must be off, on or auto"),
        ('[router]\nkind = "sam"\n', "[router] kind must be static or i2pcontrol"),
        (
            '[publisher]\nkind = "I2CP"\n',
            "[publisher] kind must be file, i2cp, command, url or none",
        ),
        ('[publisher]\nformat = "base64"\n', "[publisher] format must be json or binary"),
    ],
)
def test_an_unknown_choice_is_refused(extra: str, message: str, tmp_path: Path) -> None:
    assert refusal(extra, tmp_path) == message


# -- strings and paths -----------------------------------------------------------------------------

TEXT_KEYS = [
    ("app", "publish_config"),
    ("app", "master"),
    ("router", "kind"),
    ("router", "url"),
    ("router", "password_file"),
    ("router", "pin"),
    ("router", "status_file"),
    ("publisher", "kind"),
    ("publisher", "format"),
    ("publisher", "keys"),
    ("publisher", "path"),
    ("publisher", "url"),
    ("publisher", "i2cp"),
    ("publisher", "session"),
    ("publisher", "username"),
    ("publisher", "password_file"),
    ("archive", "dir"),
]


@pytest.mark.parametrize(("section", "key"), TEXT_KEYS, ids=[f"{s}.{k}" for s, k in TEXT_KEYS])
@pytest.mark.parametrize("value", ['""', "5", "true", '["x"]'], ids=["empty", "int", "bool", "list"])
def test_a_string_key_refuses_anything_but_a_non_empty_string(
    section: str, key: str, value: str, tmp_path: Path
) -> None:
    message = refusal(f"[{section}]\n{key} = {value}\n", tmp_path)
    assert message == f"[{section}] {key} must be a non-empty string"


# -- [app] interval: 0.05 to 86400 seconds ---------------------------------------------------------

INTERVAL = "[app] interval must be a number of seconds from 0.05 to 86400"


@pytest.mark.parametrize(("value", "seconds"), [("0.05", 0.05), ("1", 1.0), ("86400", 86400.0)])
def test_interval_accepted(value: str, seconds: float, tmp_path: Path) -> None:
    assert load(f"[app]\ninterval = {value}\n", tmp_path).interval == seconds


@pytest.mark.parametrize(
    "value",
    ["0.0499", "0", "86400.001", "86401", "true", '"60"'],
    ids=["below-0.05", "zero", "above-86400", "86401", "bool", "str"],
)
def test_interval_refused(value: str, tmp_path: Path) -> None:
    assert refusal(f"[app]\ninterval = {value}\n", tmp_path) == INTERVAL


# -- [publisher] expires: a whole number of seconds, 1 to 65535 ------------------------------------

EXPIRES = "[publisher] expires must be a whole number of seconds from 1 to 65535"


@pytest.mark.parametrize("value", [1, 2, 65_534, 65_535])
def test_expires_accepted(value: int, tmp_path: Path) -> None:
    assert load(f"[publisher]\nexpires = {value}\n", tmp_path).publisher_expires == value


@pytest.mark.parametrize(
    "value",
    ["0", "65536", "-1", "true", "60.0", '"60"'],
    ids=["zero", "65536", "negative", "bool", "float", "str"],
)
def test_expires_refused(value: str, tmp_path: Path) -> None:
    assert refusal(f"[publisher]\nexpires = {value}\n", tmp_path) == EXPIRES


# -- [archive] retention_days: a whole number of days up to a century, 0 keeps all --------------------

RETENTION = "[archive] retention_days must be a whole number of days from 0 to 36500 (0 keeps all)"


@pytest.mark.parametrize("value", [0, 1, 36_500])
def test_retention_accepted(value: int, tmp_path: Path) -> None:
    assert load(f"[archive]\nretention_days = {value}\n", tmp_path).retention_days == value


@pytest.mark.parametrize(
    "value",
    ["-1", "36501", "1000000", "true", "7.0", '"7"'],
    ids=["negative", "past", "far", "bool", "float", "str"],
)
def test_retention_refused(value: str, tmp_path: Path) -> None:
    assert refusal(f"[archive]\nretention_days = {value}\n", tmp_path) == RETENTION


# -- [publisher] command and url -------------------------------------------------------------------

COMMAND = "[publisher] command must be a list of strings (argv)"


@pytest.mark.parametrize(
    "value", ['"sign --stdin"', "[1]", '["sign", 2]'], ids=["str", "list-of-int", "mixed-list"]
)
def test_command_refused(value: str, tmp_path: Path) -> None:
    assert refusal(f'[publisher]\nkind = "command"\ncommand = {value}\n', tmp_path) == COMMAND


def test_command_kind_needs_a_command(tmp_path: Path) -> None:
    message = refusal('[publisher]\nkind = "command"\ncommand = []\n', tmp_path)
    assert message == "[publisher] kind = command needs command = [...]"


@pytest.mark.parametrize("extra", ["", 'url = ""\n'], ids=["missing", "empty"])
def test_url_kind_needs_a_url(extra: str, tmp_path: Path) -> None:
    assert refusal(f'[publisher]\nkind = "url"\n{extra}', tmp_path) == "[publisher] kind = url needs url"


def test_url_kind_with_its_url(tmp_path: Path) -> None:
    app = load('[publisher]\nkind = "url"\nurl = "http://127.0.0.1:8080/metals"\n', tmp_path)
    assert app.publisher_url == "http://127.0.0.1:8080/metals"


# -- [publisher] keys: needed to sign --------------------------------------------------------------

KEYS = "[publisher] keys = FILE is needed to sign the Meta LS2 (garlicfarm keys transient)"


@pytest.mark.parametrize(("kind", "fmt"), [("i2cp", "json"), ("i2cp", "binary"), ("file", "binary")])
def test_signing_without_keys_is_refused(kind: str, fmt: str, tmp_path: Path) -> None:
    assert refusal(f'[publisher]\nkind = "{kind}"\nformat = "{fmt}"\n', tmp_path) == KEYS


@pytest.mark.parametrize(
    "extra",
    [
        'kind = "file"\nformat = "json"\n',
        'kind = "command"\ncommand = ["sign"]\nformat = "binary"\n',
        'kind = "url"\nurl = "http://127.0.0.1:8080/metals"\nformat = "binary"\n',
        'kind = "none"\nformat = "binary"\n',
    ],
    ids=["file-json", "command", "url", "none"],
)
def test_publishers_that_do_not_sign_need_no_keys(extra: str, tmp_path: Path) -> None:
    assert load(f"[publisher]\n{extra}", tmp_path).publisher_keys is None


# -- [router] leaves: checked when this node signs them --------------------------------------------


@pytest.mark.parametrize("value", ['"leaf"', '[""]', "[1]"], ids=["str", "empty-string", "int"])
def test_leaves_must_be_a_list_of_destinations(value: str, tmp_path: Path) -> None:
    message = refusal(f"[router]\nleaves = {value}\n", tmp_path)
    assert message == "[router] leaves must be a list of destinations"


@pytest.mark.parametrize("length", [60, 61])
def test_a_signer_refuses_a_leaf_that_is_no_destination(length: int, tmp_path: Path) -> None:
    leaf = "x" * length
    message = refusal(f'[router]\nleaves = ["{LEAF}", "{leaf}"]\n[publisher]\nkeys = "k"\n', tmp_path)
    shown = "x" * 60  # a long leaf is cut to its first 60 characters
    assert message == (
        f"[router] leaves: {shown!r} is neither a base64 destination nor a "
        f".b32.i2p address ({check_leaf(leaf)})"
    )


def test_a_signer_accepts_destinations(tmp_path: Path) -> None:
    app = load(f'[router]\nleaves = ["{LEAF}"]\n[publisher]\nkeys = "k"\n', tmp_path)
    assert app.leaves == (LEAF,)


def test_a_signer_keeps_the_default_leaf_unchecked(tmp_path: Path) -> None:
    """The stand-in leaf ("<cluster>-leaf-<id>") is no destination, but only leaves the operator wrote
    are checked."""
    assert load('[publisher]\nkeys = "k"\n', tmp_path).leaves == ("farm-leaf-2",)


def test_leaves_are_not_checked_without_keys(tmp_path: Path) -> None:
    assert load('[router]\nleaves = ["leaf-a"]\n', tmp_path).leaves == ("leaf-a",)


# -- the tables themselves -------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["app", "router", "publisher", "archive"])
def test_each_table_must_be_a_table(name: str, tmp_path: Path) -> None:
    assert refusal(f"[[{name}]]\n", tmp_path) == f"{name} must be a table ([{name}])"
