"""End to end: a real node process serves /metrics over HTTPS with Basic auth (``[metrics] tls = true``
on 127.0.0.1; off loopback it is the only way): without or with wrong credentials 401, with the right
ones 200 and the metrics, and plain HTTP gets no HTTP answer.

Ports: the metrics listener takes one in this test's own range, 18200-18399 (below the ephemeral
range, apart from the Prometheus test's 17600-17999 and the process farms' 20000+).
"""

from __future__ import annotations

import base64
import http.client
import os
import random
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.procfarm import ProcFarm

pytestmark = pytest.mark.e2e

PORTS = range(18200, 18400)
PASSWORD = "metrics-password-for-the-test"
WAIT = 60.0


def free_port() -> int:
    rng = random.Random(os.getpid() * 1_000_003 + time.monotonic_ns())
    for _ in range(100):
        port = rng.randrange(PORTS.start, PORTS.stop)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {PORTS.start}..{PORTS.stop - 1}")


@pytest.fixture
def node(tmp_path: Path) -> Iterator[tuple[ProcFarm, int]]:
    farm = ProcFarm(tmp_path / "farm", 1)
    port = free_port()
    config = Path(farm.config(1))
    text = config.read_text()
    head, marker, rest = text.partition("\n[metrics]\n")
    assert marker, "init writes a [metrics] table"
    _, _, after = rest.partition("\n")  # its listen line
    (farm.dir / "metrics-credentials").write_text(PASSWORD + "\n")
    (farm.dir / "metrics-credentials").chmod(0o600)
    config.write_text(
        head + f'\n[metrics]\nlisten = {port}\ntls = true\nusername = "prometheus"\n'
        'password_file = "metrics-credentials"\n' + after
    )
    farm.start_all()
    try:
        yield farm, port
    finally:
        farm.stop_all()


def https(farm: ProcFarm, port: int) -> http.client.HTTPSConnection:
    context = ssl.create_default_context(cafile=str(farm.dir / "ca.pem"))
    return http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)


def get(farm: ProcFarm, port: int, path: str, user: str | None = None, password: str = "") -> tuple[int, str]:
    connection = https(farm, port)
    headers = {}
    if user is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    try:
        connection.request("GET", path, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


def wait_listening(farm: ProcFarm, port: int) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            get(farm, port, "/livez")
            return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"the metrics listener on {port} did not answer within {WAIT} s:\n{farm.logs()}")


def test_metrics_over_https_with_basic_auth(node: tuple[ProcFarm, int]) -> None:
    farm, port = node
    wait_listening(farm, port)
    for path in ("/metrics", "/readyz", "/livez"):
        code, _ = get(farm, port, path)
        assert code == 401, path
    assert get(farm, port, "/metrics", "prometheus", "wrong")[0] == 401
    assert get(farm, port, "/metrics", "someone", PASSWORD)[0] == 401
    code, body = get(farm, port, "/metrics", "prometheus", PASSWORD)
    assert code == 200
    assert "garlicfarm_node_info{" in body and "garlicfarm_term " in body
    # plain HTTP to the HTTPS port: the TLS layer never answers it in HTTP
    plain = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        with pytest.raises((http.client.HTTPException, OSError)):
            plain.request("GET", "/metrics")
            plain.getresponse()
    finally:
        plain.close()
    # the refused credentials are logged (rate-limited), never the password
    log = (farm.dir / "node-1.log").read_text()
    assert "refused the credentials" in log and PASSWORD not in log
