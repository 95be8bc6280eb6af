"""A provider that cannot be reached: after 3 runs in a row failed to connect, the arm's remaining runs
stop at once as ``connection`` errors with one message, while another arm's runs go on."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Self

import pytest

from runner.kinds import ErrorKind
from runner.providers.base import ProviderError
from runner.providers.breaker import CIRCUIT_AFTER, Breaker
from tests.helpers import cli_output

pytestmark = pytest.mark.usefixtures("litellm_loaded")

RUNS, JOBS, ATTEMPTS = 12, 2, 2
MESSAGE = f"not sent: down is unreachable: {CIRCUIT_AFTER} runs in a row could not connect; its remaining runs are not sent"


class Slammer:
    """A TCP listener on 127.0.0.1 that closes every connection it accepts at once, counting them."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed: the test is over
                return
            self.accepted += 1
            conn.close()

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() under way; close() alone would not
        self.sock.close()
        self._thread.join(timeout=5)


def test_a_down_provider_stops_its_remaining_runs_with_one_message(tmp_path: Path) -> None:
    (tmp_path / "case.yml").write_text("- id: one\n  turns: [Say done.]\n  expect: {response_contains: done}\n"
                                       "  script: [{content: done}]\n", encoding="utf-8")
    with Slammer() as down:
        (tmp_path / "tooltrial.yml").write_text(
            f"providers:\n  down:\n    model: openai/gpt-x\n    api_base: http://127.0.0.1:{down.port}/v1\n"
            f"    timeout: 5\n    retries: {{attempts: {ATTEMPTS}, backoff: 0}}\n", encoding="utf-8")
        code, out, _ = cli_output(["run", str(tmp_path / "case.yml"), "--config", str(tmp_path / "tooltrial.yml"),
                                   "--results", str(tmp_path / "results"), "--sandbox", "none", "-p", "down",
                                   "-p", "scripted", "--runs", str(RUNS), "-j", str(JOBS)])
    (results,) = (tmp_path / "results").iterdir()
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in (results / "runs").iterdir()]
    mine = [r for r in runs if r["provider"] == "down"]
    sent = [r for r in mine if r["requests"]]
    assert len(mine) == RUNS and {r["error_kind"] for r in mine} == {"connection"}
    # the runs that tried: those until the third failure in a row, and at most one more already in flight
    assert CIRCUIT_AFTER <= len(sent) <= CIRCUIT_AFTER + JOBS - 1
    assert all(r["requests"] == ATTEMPTS for r in sent)
    assert down.accepted == ATTEMPTS * len(sent)  # no connection was made for a run not sent
    told = sorted(r["cause"] for r in mine if not r["requests"])
    assert told == ["not sent: down is unreachable"] * (RUNS - len(sent) - 1) + [MESSAGE]
    assert all(r["cause"].startswith("down: connection after 2 attempts: ") for r in sent)
    assert {r["status"] for r in runs if r["provider"] == "scripted"} == {"pass"}  # another arm is not stopped
    assert code == 6
    assert out.count("runs in a row could not connect") == 1  # said once, not per run


def test_the_count_starts_again_when_the_provider_answers_or_fails_otherwise() -> None:
    breaker = Breaker("p", after=2)
    lost = ProviderError("p: connection: refused", ErrorKind.CONNECTION)
    breaker.failed(lost)
    breaker.answered()
    breaker.failed(lost)
    breaker.failed(ProviderError("p: server_error (HTTP 500): boom", ErrorKind.SERVER_ERROR))
    breaker.failed(lost)
    breaker.check()  # never two connection failures in a row: still closed
    breaker.failed(lost)
    with pytest.raises(ProviderError) as raised:
        breaker.check()
    assert (raised.value.kind, str(raised.value), raised.value.attempts) == (
        ErrorKind.CONNECTION, ("not sent: p is unreachable: 2 runs in a row could not connect; its remaining runs "
         "are not sent"), ())
    with pytest.raises(ProviderError, match="^not sent: p is unreachable$"):  # the story is told once
        breaker.check()
