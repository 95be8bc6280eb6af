"""``tooltrial judge calibrate``: a labels file of 20 items judged over a loopback OpenAI server, the agreement's
figures checked by hand, the calibration kept, and bad labels files told at their line and column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.scoring.agreement import agreement, cohen_kappa, kappa_interval, kappa_standard_error
from tests.fake_servers import OpenAIServer, openai_reply
from tests.helpers import config, run_cli, run_output

pytestmark = pytest.mark.usefixtures("litellm_loaded")

RUBRIC = "The reply greets the user politely."
# (person, judge) for 20 items: 9 pass/pass, 2 pass/fail, 3 fail/pass, 6 fail/fail
PAIRS = [("pass", "pass")] * 9 + [("pass", "fail")] * 2 + [("fail", "pass")] * 3 + [("fail", "fail")] * 6


def test_kappa_and_its_interval_by_hand() -> None:
    # p_o = 15/20 = 0.75; margins person pass 0.55, judge pass 0.60; p_e = .55*.60 + .45*.40 = 0.51;
    # kappa = (0.75 - 0.51) / 0.49 = 24/49. Fleiss, Cohen & Everitt 1969 with 1 - k = 25/49:
    # A = .45(1 - 1.15*25/49)^2 + .30(1 - .85*25/49)^2 = 0.0768546 + 0.0962176
    # B = (25/49)^2 (.10*(.60 + .45)^2 + .15*(.40 + .55)^2) = 0.2603082 * 0.245625 = 0.0639382
    # C = (24/49 - .51*25/49)^2 = 0.0527124; var = (A + B - C) / (20 * .49^2) = 0.0383787, se = 0.1959048
    table = [[9, 2], [3, 6]]
    assert cohen_kappa(table) == pytest.approx(24 / 49, abs=1e-12)
    assert kappa_standard_error(table) == pytest.approx(0.1959068, abs=1e-6)
    low, high = kappa_interval(table)
    assert (low, high) == pytest.approx((24 / 49 - 1.959964 * 0.1959068, 24 / 49 + 1.959964 * 0.1959068), abs=1e-6)
    found = agreement(PAIRS)
    assert (found.items, found.agreed, found.accuracy) == (20, 15, 0.75)
    assert found.confusion == {"pass": {"pass": 9, "fail": 2}, "fail": {"pass": 3, "fail": 6}}


def test_kappa_is_one_for_perfect_agreement_and_undefined_for_one_verdict() -> None:
    assert cohen_kappa([[5, 0], [0, 5]]) == 1.0
    assert kappa_interval([[5, 0], [0, 5]]) == (1.0, 1.0)
    found = agreement([("pass", "pass")] * 4)
    assert (found.kappa, found.low, found.high, found.accuracy) == (None, None, None, 1.0)


def _labels(tmp_path: Path, run_file: Path) -> Path:
    items = []
    for i, (person, _) in enumerate(PAIRS, 1):
        if i == 1:
            items.append(f"  - {{id: from-a-run, run: {run_file}, verdict: {person}}}\n")
        else:
            items.append(f"""\
  - id: item-{i}
    turns: [Greet the user]
    calls: [{{name: list_dir, arguments: {{path: .}}, result: "a.txt"}}]
    reply: "Reply number {i}"
    verdict: {person}
""")
    path = tmp_path / "labels.yml"
    path.write_text(f"rubric: {RUBRIC}\nthreshold: 0.7\nitems:\n" + "".join(items), encoding="utf-8")
    return path


def _scripted_run(tmp_path: Path) -> Path:
    cases = tmp_path / "greet.yml"
    cases.write_text("- id: hi\n  turns: [Say hi]\n  script:\n    - content: Hello from a run.\n", encoding="utf-8")
    done = run_cli("run", str(cases), "-p", "scripted", "--results", str(tmp_path / "results"))
    assert done.returncode == 0, run_output(done)
    (run_file,) = (tmp_path / "results").glob("*/runs/*.json")
    return run_file


def test_calibrate_twenty_items_reports_and_keeps_the_agreement(tmp_path: Path) -> None:
    labels = _labels(tmp_path, _scripted_run(tmp_path))
    store = tmp_path / "calibrations.json"
    with OpenAIServer() as server:
        for _, judge in PAIRS:
            score = 0.9 if judge == "pass" else 0.2
            server.push(openai_reply(json.dumps({"score": score, "reasoning": f"graded {judge}"})))
        done = run_cli("judge", "calibrate", str(labels), "-j", "local-openai",
                       "--config", str(config(tmp_path, server.api_base)), "--calibrations", str(store))
    assert done.returncode == 0, run_output(done)
    assert len(server.chats) == 20
    first = server.chats[0].body["messages"][1]["content"]
    assert first.startswith(f"Rubric:\n{RUBRIC}\n\nTask (the user's turns):\n1. Say hi\n")
    assert first.endswith("Final reply:\nHello from a run.")
    second = server.chats[1].body["messages"][1]["content"]
    assert '1. list_dir {"path": "."} -> ok: a.txt' in second and second.endswith("Final reply:\nReply number 2")
    lines = done.stdout.splitlines()
    assert lines[1:8] == [
        "  items:     20",
        "  accuracy:  0.750 (15 of 20 agreed)",
        "  kappa:     0.490 (95% interval 0.106 to 0.874)",
        "",
        "                  judge pass  judge fail",
        "  person pass              9           2",
        "  person fail              3           6",
    ]
    assert lines[8] == "  disagreed: item-10: person pass, judge fail (score 0.20: graded fail)"
    assert lines[-1] == f"kept in {store}"
    (kept,) = json.loads(store.read_text())["calibrations"]
    assert kept["judge"] == "local-openai" and kept["threshold"] == 0.7
    assert (kept["items"], kept["agreed"], kept["accuracy"]) == (20, 15, 0.75)
    assert kept["kappa"] == pytest.approx(24 / 49) and kept["kappa_low"] == pytest.approx(0.1058257, abs=1e-6)
    assert kept["confusion"] == {"pass": {"pass": 9, "fail": 2}, "fail": {"pass": 3, "fail": 6}}
    from runner.spec.fingerprint import digest
    assert kept["rubric"] == digest(RUBRIC)


@pytest.mark.parametrize(("text", "expected"), [
    ("rubric: R\nitems:\n  - {reply: hi, verdict: maybe}\n", "labels.yml:3:26: items[0].verdict: 'maybe' is not one of 'pass', 'fail'"),
    ("rubric: R\nitems:\n  - {reply: hi, verdict: pass, rply: x}\n", "labels.yml:3:32: items[0]: unknown key 'rply' (did you mean 'reply'?)"),
    ("rubric: R\nitems:\n  - {run: r.json, reply: hi, verdict: pass}\n",
     "labels.yml:3:19: items[0].reply: an item with run: takes no reply: (the run file holds it)"),
    ("rubric: R\nitems:\n  - {verdict: pass}\n", "labels.yml:3:5: items[0]: an item needs run: FILE or a transcript"),
    ("rubric: R\nitems:\n  - {run: missing.json, verdict: pass}\n", "labels.yml:3:11: items[0].run: run file "),
])
def test_bad_labels_are_told_at_their_place(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "labels.yml"
    path.write_text(text, encoding="utf-8")
    done = run_cli("judge", "calibrate", str(path), "-j", "local-openai", "--config", str(config(tmp_path)),
                   "--calibrations", str(tmp_path / "c.json"), cwd=tmp_path)
    assert done.returncode == 4
    assert expected in run_output(done) and "Traceback" not in run_output(done)
