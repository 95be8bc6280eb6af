"""The Markdown summary (``--summary-md FILE``, ``$GITHUB_STEP_SUMMARY``): the report document, or the
regression document, as GitHub-flavoured Markdown.

It reads the same JSON documents that ``report.json`` and ``report --output json`` hold
(runner.output.report), so every figure is the one aggregation's. Case ids, arm labels, causes and
check messages are untrusted (a check message quotes the model's reply; a results folder may have
been written by anyone): ``md_text`` writes each as plain text, with every ASCII punctuation
character backslash-escaped (CommonMark 0.31, "Backslash escapes": any ASCII punctuation may be),
so no emphasis, link, image, HTML tag, entity or table cell can start inside it. GitHub refuses a
step summary over 1 MiB, so at most ``MOST_FAILURES`` failed runs are listed, each message cut to
``MESSAGE_LIMIT`` characters.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.output.injectmd import injection_markdown
from runner.output.report import run_dict
from runner.output.store import write_replace
from runner.text import printable

if TYPE_CHECKING:
    from runner.output.finish import Ending

MOST_FAILURES = 50  # failed runs listed; the rest are counted
MESSAGE_LIMIT = 300  # characters of one cause or check message
_ESCAPED = str.maketrans({c: "\\" + c for c in string.punctuation})
_MEANING: dict[int | None, str] = {  # by the report's exit_code
    0: "every gate held",
    1: "the agent broke a gate",
    2: "interrupted, or an output could not be written",
    3: "tooltrial's own internal error",
    4: "a case's data broke at run time",
    6: "only infrastructure broke gates",
}


def md_text(value: object, limit: int | None = None) -> str:
    """``value`` as Markdown that renders to exactly its text on one line: control characters in
    Python's notation (runner.text.printable), runs of whitespace as one space, cut to ``limit``
    characters (with ``…``), every ASCII punctuation character escaped with a backslash."""
    text = " ".join(printable(str(value)).split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.translate(_ESCAPED)


def write_summary(path: Path, ending: Ending) -> None:
    """``--summary-md``: the summary (``ending_markdown``) written to ``path``. Raises OSError."""
    write_replace(path, ending_markdown(ending))


def append_summary(path: Path, ending: Ending) -> None:
    """``$GITHUB_STEP_SUMMARY``: the summary (``ending_markdown``) appended to ``path``, created if need be: a
    file other steps write to as well, so not replaced. Raises OSError."""
    with open(path, "a", encoding="utf-8") as out:
        out.write(ending_markdown(ending))


def ending_markdown(ending: Ending) -> str:
    """The summary of the finished runs (of ``report A B``: of the regression), made once per ending."""

    def make() -> str:
        if ending.change is not None:
            return regression_markdown(ending.change)
        return summary_markdown(ending.document, map(run_dict, ending.runs.records()))

    made: str = ending.once("markdown", make)
    return made


def summary_markdown(document: dict[str, Any], runs: Iterable[dict[str, Any]] | None = None) -> str:
    """The summary of one report document (``report_document``): a heading with the pass count and
    the exit code, a table per arm and group, the failed and errored runs with their failure cause
    and failed checks, the fault tables (the report's ``robustness``), each paired comparison (the report's
    ``comparisons``; of a report of an earlier version, its ``paired``), and with ``run --until-decided`` its
    decisions (``sequential``). Ends with a newline. ``runs``
    (default: the document's) are read once, one at a time, keeping the first MOST_FAILURES failed ones."""
    count = passed = failing = 0
    repeated = False
    failures: list[dict[str, Any]] = []
    for run in (document.get("runs") or []) if runs is None else runs:
        count, passed = count + 1, passed + (run.get("status") == "pass")
        repeated = repeated or (run.get("run") or 1) > 1
        if run.get("status") != "pass":
            failing += 1
            if len(failures) < MOST_FAILURES:
                failures.append(run)
    code = document.get("exit_code")
    lines = [f"## tooltrial: {passed}/{count} runs passed", "",
             (f"Exit code {md_text(code)}: {_MEANING.get(code, 'unknown')}\\. "
              f"Results: {md_text(document.get('results', ''))}"), ""]
    unfinished = document.get("unfinished") or []
    if unfinished:
        lines += [f"{len(unfinished)} runs did not finish \\(interrupted\\)\\.", ""]
    lines += _arm_table(document.get("arms") or [])
    lines += injection_markdown(document.get("arms") or [], md_text)
    lines += _failures(failures, failing, len(document.get("arms") or []) > 1, repeated)
    lines += _judges(document.get("judges"))
    lines += _robustness(document.get("robustness") or {})
    paired = document.get("paired")
    compared = document.get("comparisons") or ([paired] if paired else [])  # a report of an earlier version: paired alone
    if compared:
        lines += ["### Comparison", ""]
    for each in compared:
        lines += [md_text(each.get("verdict", "")), ""]
        lines += _estimates(each)
        lines += _flips(each.get("flips") or [], each.get("a", ""), each.get("b", ""))
    lines += _sequential(document.get("sequential"))
    return "\n".join(lines).rstrip("\n") + "\n"


def _judges(judges: dict[str, Any] | None) -> list[str]:
    """The judges' section (runner.scoring.judging): the runs graded by a judge not calibrated on its rubric, and
    the table splitting the variance of judged scores into the judge's own and run to run; none when all is quiet."""
    lines: list[str] = []
    if judges and judges.get("uncalibrated_runs"):
        marks = "; ".join(f"{md_text(c.get('judge', ''))}: {md_text(c.get('status', ''))}, {_many(c.get('runs', 0), 'run')}"
                          for c in judges.get("calibrations") or [] if c.get("status") != "calibrated")
        lines += [(f"**Judges:** {judges['uncalibrated_runs']} of {judges.get('judged_runs', 0)} judged runs by a judge "
                   f"not calibrated on its rubric \\({marks}\\)\\."), ""]
    if judges and judges.get("noise"):
        lines += ["### Judge noise", "", "| arm | case | runs × repeats | judge | run to run | total |", "|---|---|---:|---:|---:|---:|"]
        lines += [_row([md_text(n.get("arm", "")), md_text(n.get("case", "")), f"{n.get('runs')} × {n.get('repeats')}",
                        *("\\-" if v is None else f"{v:.4f}" for v in (n.get("judge_variance"), n.get("run_variance"),
                                                                       n.get("total_variance")))])
                  for n in judges["noise"]]
        lines.append("")
    return lines


def _sequential(section: dict[str, Any] | None) -> list[str]:
    """``run --until-decided``: a row per comparison (decision, the round it stopped after, pairs, difference),
    the runs, tokens and cost spent and saved, and why each comparison stopped; [] without it."""
    if not section:
        return []
    lines = ["### Until decided", "", _row(["comparison", "decision", "stopped after", "pairs", "difference"]),
             _row(["---"] * 5)]
    for c in section.get("comparisons") or []:
        difference = c.get("difference")
        lines.append(_row([md_text(c.get("title", "")), md_text(str(c.get("decision", "")).replace("_", " ")),
                           "\\-" if c.get("stopped_after") is None else f"round {c['stopped_after']}", str(c.get("pairs")),
                           "\\-" if difference is None else f"{difference:+.2f}"]))
    lines += ["", md_text(section.get("summary", "")), ""]
    return lines + [f"- {md_text(c.get('reason', ''))}" for c in section.get("comparisons") or []] + [""]


def regression_markdown(document: dict[str, Any]) -> str:
    """The summary of a regression document (``regression_document``): each matched arm's pass rate
    before and after, the paired runs that went pass→fail and fail→pass with their cases, what only one
    side ran, and the paired verdict. Ends with a newline."""
    down, up = document.get("pass_to_fail") or [], document.get("fail_to_pass") or []
    runs = sum(c.get("pass_to_fail", 0) for c in down)
    verdict = f"{_many(runs, 'run')} went pass→fail, in {_many(len(down), 'case')}" if down else "no run went pass→fail"
    lines = [f"## tooltrial regression: {verdict}", "",
             f"Before: {md_text(document.get('before', ''))}; after: {md_text(document.get('after', ''))}", "",
             "| arm before | arm after | pass rate before | pass rate after |", "|---|---|---:|---:|"]
    for pair in document.get("arms") or []:
        old, new = pair.get("before") or {}, pair.get("after") or {}
        lines.append(_row([md_text(old.get("arm", "")), md_text(new.get("arm", "")),
                           _rate(old.get("pass_rate")), _rate(new.get("pass_rate"))]))
    lines.append("")
    for title, key, changes in (("Pass → fail", "pass_to_fail", down), ("Fail → pass", "fail_to_pass", up)):
        if changes:
            lines += [f"### {title}: {_flipped(changes, key)}", "",
                      "| case | arm | runs | pass rate before | pass rate after |", "|---|---|---:|---:|---:|"]
            lines += [_row([md_text(c.get("case", "")), md_text(c.get("arm", "")), str(c.get(key, 0)),
                            _rate(c.get("before")), _rate(c.get("after"))]) for c in changes]
            lines.append("")
    for side, title in (("only_before", "Only before"), ("only_after", "Only after")):
        cells = document.get(side) or []
        if cells:
            shown = ", ".join(md_text(cell) for cell in cells[:MOST_FAILURES])
            more = f" and {len(cells) - MOST_FAILURES} more" if len(cells) > MOST_FAILURES else ""
            lines += [f"{title}: {shown}{more}", ""]
    paired = document.get("paired")
    if paired:
        lines += [md_text(paired.get("verdict", "")), ""] + _estimates(paired)
    return "\n".join(lines).rstrip("\n") + "\n"


def _estimates(paired: dict[str, Any]) -> list[str]:
    """Each difference with its interval as a list item (a report of an earlier version has none)."""
    found = [f"- {md_text(line)}" for line in paired.get("estimates") or []]
    return [*found, ""] if found else []


def _flipped(changes: Sequence[dict[str, Any]], key: str) -> str:
    """``3 runs in 2 cases``: the paired runs the regression's ``changes`` count under ``key``, and their cases."""
    return f"{_many(sum(c.get(key, 0) for c in changes), 'run')} in {_many(len(changes), 'case')}"


def _robustness(section: dict[str, Any]) -> list[str]:
    """The report's ``robustness`` (runner.scoring.robustness.robustness_dict): each arm's recovery, then each
    case against its clean twin; [] without it."""
    lines = []
    if section.get("recovery"):
        head = "| arm | faulted runs | recovered | fault\\_not\\_handled | retries / run | calls to recover |"
        lines += ["### Faults", "", head, "|---|---:|---:|---:|---:|---:|"]
        for r in section["recovery"]:
            lines.append(_row([md_text(r["arm"]), str(r["faulted"]), f"{r['recovered']} \\({_rate(r['recovery'])}\\)",
                               str(r["not_handled"]), _mean(r["retries"]), _mean(r["calls_to_recover"])]))
        lines.append("")
    if section.get("table"):
        lines += ["### Robustness", "", "| case | arm | faults | clean | faulty | difference |",
                  "|---|---|---|---:|---:|---:|"]
        for row in section["table"]:
            difference = "—" if row["difference"] is None else f"{100 * row['difference']:+.0f} pts"
            lines.append(_row([md_text(row["case"]), md_text(row["arm"]), md_text(row["faults"]),
                               f"{row['clean_passed']}/{row['clean_runs']}", f"{row['passed']}/{row['runs']}",
                               md_text(difference)]))
        lines.append("")
    return lines


def _mean(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _many(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _row(cells: Iterable[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def _money(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _arm_table(arms: Sequence[dict[str, Any]]) -> list[str]:
    """One row per arm (its group ``all``) and one per case group in it."""
    lines = ["| arm | group | runs | passed | failed | errors | not scored | pass rate | 95% interval | tokens | cost \\(USD\\) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for arm in arms:
        groups = [("**all**", arm), *((md_text(name), figures) for name, figures in (arm.get("groups") or {}).items())]
        for name, f in groups:
            low, high = (f.get("interval") or [None, None])[:2]
            interval = "—" if f.get("pass_rate") is None else f"{_rate(low)}–{_rate(high)}"
            tokens = f.get("tokens_total")
            lines.append(_row([md_text(arm.get("arm", "")), name, str(f.get("runs", 0)), str(f.get("passed", 0)),
                               str(f.get("failed", 0)), str(f.get("errored", 0)), str(f.get("infra_errors", 0)),
                               _rate(f.get("pass_rate")), interval, "—" if tokens is None else str(tokens),
                               _money(f.get("cost_total"))]))
    return [*lines, ""]


def _failures(runs: Sequence[dict[str, Any]], count: int, label_arms: bool, label_runs: bool) -> list[str]:
    """Each failed or errored run of the first MOST_FAILURES (``runs``) of ``count``: status, case, its
    arm (``label_arms``) and run number (1-based, ``label_runs``), failure cause, the error's first line,
    and one sub-item per failed check."""
    if not runs:
        return []
    lines = [f"### Failures \\({count}\\)", ""]
    for run in runs[:MOST_FAILURES]:
        status = str(run.get("status", "")).upper()
        head = f"- **{md_text(status)}** {md_text(run.get('case', ''))}"
        if label_runs:
            head += f" \\#{md_text(run.get('run') or 1)}"
        if label_arms:  # the label runner.run.record.arm_label gives
            head += f" \\[{md_text(run.get('provider', ''))} · {md_text(run.get('prompt', ''))}\\]"
        head += f", cause {md_text(run.get('failure') or 'unknown')}"
        cause = (run.get("cause") or "").splitlines()
        if status == "ERROR" and cause:
            head += f": {md_text(cause[0], MESSAGE_LIMIT)}"
        lines.append(head)
        lines += [f"  - {md_text(check.get('message', ''), MESSAGE_LIMIT)}"
                  for check in run.get("checks") or [] if not check.get("passed")]
    if count > MOST_FAILURES:
        lines.append(f"- and {count - MOST_FAILURES} more: the report lists every run")
    return [*lines, ""]


def _flips(flips: Sequence[dict[str, Any]], a: str, b: str) -> list[str]:
    """The cases whose paired runs disagree, with how many pairs flipped each way from A to B."""
    if not flips:
        return []
    lines = [f"Cases whose paired runs disagree \\(from {md_text(a)} to {md_text(b)}\\):", "",
             "| case | pass → fail | fail → pass |", "|---|---:|---:|"]
    lines += [_row([md_text(f.get("case", "")), str(f.get("pass_to_fail", 0)), str(f.get("fail_to_pass", 0))])
              for f in flips[:MOST_FAILURES]]
    return [*lines, ""]
