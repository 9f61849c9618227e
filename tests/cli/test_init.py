"""``garlicfarm init``: the files it writes, their modes, and that they load and chain as they should."""

from __future__ import annotations

import argparse
import contextlib
import io
import ipaddress
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from twisted.internet import reactor

from garlicfarm.cli.init import InitError, add_parser
from garlicfarm.config import ConfigError, load_config
from garlicfarm.farminit import DEFAULT_BASE_PORT, METRICS_OFFSET, busy_ports
from garlicfarm.metrics.config import metrics_config
from garlicfarm.tls import NodeTLS, load_certificate, load_certified_key, server_endpoint


def init(*argv: str) -> str:
    parser = argparse.ArgumentParser(prog="garlicfarm")
    add_parser(parser.add_subparsers())
    args = parser.parse_args(["init", *argv])
    out = io.StringIO()
    args.run(args, io.StringIO(), out)
    return out.getvalue()


def free_base(nodes: int) -> int:
    """A base port with ``nodes`` free ports from it, and as many for their metrics listeners (the
    kernel's pick for one, then checked)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = int(s.getsockname()[1])
        ports = [*range(base, base + nodes), *range(base + METRICS_OFFSET, base + METRICS_OFFSET + nodes)]
        if base + METRICS_OFFSET + nodes <= 65536 and not busy_ports(ports):
            return base
    raise AssertionError("no free port range")


@contextlib.contextmanager
def listening() -> Iterator[int]:
    """A listening port whose neighbours are free (the tests put node 1 just below it, node 3 above)."""
    base = free_base(3)
    with socket.socket() as s:
        s.bind(("127.0.0.1", base + 1))
        s.listen()
        yield base + 1


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, str]:
    directory = tmp_path_factory.mktemp("init") / "farm"
    base = free_base(3)
    return directory, base, init(str(directory), "--nodes", "3", "--base-port", str(base))


def test_writes_every_file_with_private_keys(farm: tuple[Path, int, str]) -> None:
    directory, _, _ = farm
    names = {"ca.pem", "ca.key", "credentials", "master.dat"} | {
        f"node-{k}{s}" for k in (1, 2, 3) for s in (".pem", ".key", ".toml", ".dat", ".session", "-leaf.dat")
    }
    assert {p.name for p in directory.iterdir()} == names
    for name in names:
        private = name.endswith((".key", ".dat")) or name == "credentials"
        assert mode(directory / name) == (0o600 if private else 0o644), name
    assert mode(directory) == 0o700


def test_every_config_loads_with_the_expected_values(farm: tuple[Path, int, str]) -> None:
    directory, base, _ = farm
    passwords = set()
    for k in (1, 2, 3):
        config = load_config(directory / f"node-{k}.toml")
        assert config.id == k
        assert config.cluster == "farm"
        assert config.endpoint == f"tcp://127.0.0.1:{base + k - 1}"
        assert config.listen == f"tcp:{base + k - 1}:interface=127.0.0.1"
        assert config.data_dir == directory / f"node-{k}"
        assert config.username == "farm"
        assert config.password_file == directory / "credentials"
        passwords.add(config.password())
        assert config.tls is not None
        assert config.tls.ca == directory / "ca.pem"
        assert (config.tls.cert, config.tls.key) == (directory / f"node-{k}.pem", directory / f"node-{k}.key")
        assert config.tls.pins == ()
        assert dict(config.peers) == {i: f"tcp://127.0.0.1:{base + i - 1}" for i in (1, 2, 3)}
        # the Meta LS2 (tests/cli/test_init_i2p.py), and the metrics listener on loopback
        assert set(config.extra) == {"app", "router", "publisher", "metrics"}
        metrics = metrics_config(config)
        assert metrics.listen == f"tcp:{base + METRICS_OFFSET + k - 1}:interface=127.0.0.1"
        assert not metrics.tls and metrics.username is None
        assert config.fsync  # durable unless a benchmark says otherwise
        # What the service does with it: load the TLS material and build the listening endpoint.
        NodeTLS.load(config.tls)
        server_endpoint(reactor, config.listen, config.tls)
    (password,) = passwords
    assert len(password) >= 32


def test_certificates_chain_to_the_ca_and_name_loopback(farm: tuple[Path, int, str]) -> None:
    directory, _, _ = farm
    ca = load_certified_key(directory / "ca.pem", directory / "ca.key").certificate
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    serials = set()
    for k in (1, 2, 3):
        cert = load_certified_key(directory / f"node-{k}.pem", directory / f"node-{k}.key").certificate
        cert.verify_directly_issued_by(ca)
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert ipaddress.ip_address("127.0.0.1") in san.get_values_for_type(x509.IPAddress)
        assert "localhost" in san.get_values_for_type(x509.DNSName)
        serials.add(cert.serial_number)
    assert len(serials) == 3


def test_summary_names_files_and_next_command(farm: tuple[Path, int, str]) -> None:
    directory, base, out = farm
    assert f"wrote a farm of 3 node(s) to {directory}" in out
    assert f"tcp://127.0.0.1:{base + 2}" in out
    assert f"garlicfarm run --config {directory / 'node-1.toml'}" in out


def test_summary_names_the_metrics_listeners(farm: tuple[Path, int, str]) -> None:
    _, base, out = farm
    assert f"metrics on http://127.0.0.1:{base + METRICS_OFFSET + 2}/metrics" in out


def test_the_default_ports_are_not_tors_and_are_unassigned() -> None:
    assert DEFAULT_BASE_PORT == 22600  # 9001 is Tor's ORPort
    # a default farm of 3: nodes, their metrics (+50) and scripts/run.sh's consoles (+100), all in
    # 22556-22762, where IANA assigns nothing
    ports = [DEFAULT_BASE_PORT + offset + k for offset in (0, METRICS_OFFSET, 100) for k in range(3)]
    assert all(22556 <= p <= 22762 for p in ports)
    services = Path("/etc/services")
    if services.exists():
        named = {line.split()[1] for line in services.read_text().splitlines() if line[:1].isalnum()}
        assert not {f"{p}/tcp" for p in ports} & named


def test_metrics_ports_can_be_moved_or_left_out(tmp_path: Path) -> None:
    base = free_base(2)
    metrics = free_base(2)  # two free ports (their own +50 unused here)
    while abs(metrics - base) < 2:
        metrics = free_base(2)
    out = init(
        str(tmp_path / "a"), "--nodes", "2", "--base-port", str(base), "--metrics-base-port", str(metrics)
    )
    assert metrics_config(load_config(tmp_path / "a" / "node-2.toml")).listen == (
        f"tcp:{metrics + 1}:interface=127.0.0.1"
    )
    assert f"127.0.0.1:{metrics + 1}/metrics" in out
    init(str(tmp_path / "b"), "--nodes", "2", "--base-port", str(base), "--no-metrics")
    assert "[metrics]" not in (tmp_path / "b" / "node-1.toml").read_text()
    with pytest.raises(InitError, match=r"metrics ports .* overlap the nodes' ports .*--metrics-base-port"):
        init(
            str(tmp_path / "c"),
            "--nodes",
            "3",
            "--base-port",
            str(base),
            "--metrics-base-port",
            str(base + 2),
        )


def test_a_busy_metrics_port_is_reported(tmp_path: Path) -> None:
    with listening() as port, pytest.raises(InitError, match=rf"port {port} \(node 2's metrics\) is in use"):
        init(str(tmp_path / "farm"), "--nodes", "3", "--base-port", str(port - 1 - METRICS_OFFSET))


def test_second_init_refuses_without_force(tmp_path: Path) -> None:
    base = free_base(2)
    init(str(tmp_path), "--nodes", "2", "--base-port", str(base))
    ca = (tmp_path / "ca.pem").read_bytes()
    with pytest.raises(InitError, match=r"already holds a farm .*--force"):
        init(str(tmp_path), "--nodes", "2", "--base-port", str(base))
    assert (tmp_path / "ca.pem").read_bytes() == ca
    # --force: a new farm, and a smaller one leaves the old node 2 behind, reported.
    (tmp_path / "node-1.key").chmod(0o644)
    (tmp_path / "node-1").mkdir()  # node 1's data directory: Raft state of the old farm
    out = init(str(tmp_path), "--nodes", "1", "--base-port", str(base), "--force", "--cluster", "west")
    assert (tmp_path / "ca.pem").read_bytes() != ca
    assert mode(tmp_path / "node-1.key") == 0o600
    assert "node-1, node-2-leaf.dat, node-2.dat, node-2.key, node-2.pem, node-2.session, node-2.toml\n" in out
    config = load_config(tmp_path / "node-1.toml")
    assert config.cluster == "west" and dict(config.peers) == {1: f"tcp://127.0.0.1:{base}"}
    load_certificate(tmp_path / "node-1.pem").verify_directly_issued_by(load_certificate(tmp_path / "ca.pem"))


@pytest.mark.parametrize("leftover", ["node-7.toml", "node-1", "credentials"])
def test_anything_left_from_another_farm_counts_as_a_farm(tmp_path: Path, leftover: str) -> None:
    (tmp_path / leftover).mkdir()
    (tmp_path / "unrelated.txt").write_text("")
    with pytest.raises(InitError, match=rf"{leftover} exists"):
        init(str(tmp_path), "--nodes", "1", "--base-port", str(free_base(1)))


def test_a_directory_without_a_farm_is_fine(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    init(str(tmp_path), "--nodes", "1", "--base-port", str(free_base(1)))
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_busy_port_is_reported_by_number(tmp_path: Path) -> None:
    with listening() as port:
        with pytest.raises(InitError, match=rf"port {port} \(node 2\) is in use on 127\.0\.0\.1"):
            init(str(tmp_path / "farm"), "--nodes", "3", "--base-port", str(port - 1))
        assert not (tmp_path / "farm").exists()
        # --force skips the check (a node may be stopped for now).
        init(str(tmp_path / "farm"), "--nodes", "3", "--base-port", str(port - 1), "--force")
    assert load_config(tmp_path / "farm" / "node-2.toml").listen == f"tcp:{port}:interface=127.0.0.1"


def test_custom_username_and_cluster(tmp_path: Path) -> None:
    init(
        str(tmp_path),
        "--nodes",
        "1",
        "--base-port",
        str(free_base(1)),
        "--username",
        "bob",
        "--cluster",
        "c-1",
    )
    config = load_config(tmp_path / "node-1.toml")
    assert (config.username, config.cluster) == ("bob", "c-1")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nodes", "0"], "--nodes must be from 1 to 255"),
        (["--nodes", "3", "--base-port", "65534"], r"ports 65534\.\.65536 do not fit"),
        (["--nodes", "1", "--base-port", "0"], "do not fit"),
        (["--nodes", "1", "--cluster", "a/b"], "--cluster must be"),
        (["--nodes", "1", "--username", 'say "hi"'], "--username must be"),
    ],
)
def test_bad_options_are_refused_before_writing(tmp_path: Path, argv: list[str], message: str) -> None:
    with pytest.raises(InitError, match=message):
        init(str(tmp_path / "farm"), "--force", *argv)
    assert not (tmp_path / "farm").exists()


def test_directory_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(InitError, match="is not a directory"):
        init(str(tmp_path / "file"), "--nodes", "1", "--force")


def test_help_explains_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        init("--help")
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # undo argparse's wrapping
    for word in ("DIR", "--nodes", "--base-port", "--force", "0600", "garlicfarm run --config"):
        assert word in text


def test_storage_fsync_switch(farm: tuple[Path, int, str], tmp_path: Path) -> None:
    directory, _, _ = farm
    text = (directory / "node-1.toml").read_text()
    off = tmp_path / "off.toml"
    off.write_text(text + "\n[storage]\nfsync = false\n")
    assert load_config(off).fsync is False
    bad = tmp_path / "bad.toml"
    bad.write_text(text + '\n[storage]\nfsync = "no"\n')
    with pytest.raises(ConfigError, match=r"\[storage\] fsync must be true or false"):
        load_config(bad)
