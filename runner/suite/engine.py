"""The run matrix: cases x arms (provider x prompt x tool definitions x faults) x repeats, each run isolated
(runner.run.execute), the templates checked before any starts, ``--resume`` keys.

Runs execute concurrently on an executor (runner.suite.executors: threads, or worker processes);
they share no mutable state, and their records come back in plan order whatever the concurrency.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from runner.errors import Location, UserError, UserErrors
from runner.kinds import ErrorKind
from runner.names import SCRIPTED
from runner.run.execute import internal_error
from runner.run.options import Arm
from runner.run.record import RunRecord, prompt_slot
from runner.run.templatecheck import case_template_errors
from runner.scoring.summary import RunSummary
from runner.spec.case import Case
from runner.suite.executors import choose_executor
from runner.suite.options import SuiteOptions
from runner.suite.pool import InOrder
from runner.suite.portable import RunTask
from runner.suite.saving import Saving
from runner.suite.shard import Shard
from runner.suite.slots import Slots
from runner.text import plural

# case full id, provider name, prompt slot (the prompt name, ``· faults NAME`` after it for a fault arm: prompt_slot),
# run number (1-based), tool definitions' name (None without -T)
RunKey = tuple[str, str, str, int, str | None]
Planned = TypeVar("Planned")  # an arm as the plan sees it: any value, repeated per case and run
Kept = TypeVar("Kept")  # what run_matrix keeps of each finished run: the record, or its summary


def _whole(record: RunRecord) -> RunRecord:
    """``run_matrix``'s default ``keep``: the whole record."""
    return record


class Interrupted(Exception):
    """``run_matrix`` stopped early because the suite's cancel event (``RunOptions.cancel``) was set.

    Attributes:
        records: what ``run_matrix`` keeps (``keep``) of each run that finished, in plan order.
        left: the key (``run_key``) of each planned run that did not finish, in plan order.
    """

    def __init__(self, records: list[Any], left: list[RunKey]) -> None:
        self.records = records
        self.left = left
        super().__init__(f"interrupted: {plural(len(records), 'run')} finished, {len(left)} not")


def preflight(cases: Sequence[Case], arms: Sequence[Arm]) -> None:
    """Render every prompt template against every case before anything runs.

    Raises UserErrors listing every template error (undefined variable, bad syntax), every error
    of each template (runner.run.templatecheck), each once however many cases it is found for.
    """
    found = case_template_errors(cases, list(dict.fromkeys(arm.prompt for arm in arms)))
    if found:
        raise UserErrors([error for error, _ in found])


def require_scripts(cases: Sequence[Case], arms: Sequence[Arm]) -> None:
    """Refuse, before anything runs, every case without a ``script`` when an arm is the scripted provider.

    Raises UserErrors naming each such case's file and line.
    """
    if not any(arm.provider.name == SCRIPTED for arm in arms):
        return
    errors = [UserError(f"case {case.full_id} has no script: the scripted provider needs one",
                        Location(str(case.source), case.line),
                        hint="add a `script:` to the case, or run it with a live model: -p MODEL")
              for case in cases if case.script is None]
    if errors:
        raise UserErrors(errors)


def run_matrix(
    cases: Sequence[Case],
    arms: Sequence[Arm],
    options: SuiteOptions,
    repeats: int = 1,
    on_record: Callable[[RunRecord], None] = lambda record: None,
    ordered: bool = True,
    on_finish: Callable[[RunRecord], None] = lambda record: None,
    earlier: Sequence[RunRecord] = (),
    keep: Callable[[RunRecord], Kept] = _whole,  # type: ignore[assignment]
    number: int | None = None,
) -> list[Kept]:
    """Run every case in every arm ``repeats`` times (a case's own ``runs`` wins), ``options.jobs`` at once.

    Returns ``keep(record)`` of each record in plan order: by arm, then case, then run index; by
    default the record itself, and with runner.scoring.summary.summarize only its summary, so a
    suite's records need not stay in memory once ``on_finish`` has saved them. For each run
    that finishes, on a thread that only saves (runner.suite.saving; in the calling thread at ``jobs``
    1), in the order they finish:
    ``on_finish`` at once (to save it), then ``on_record``, in plan order when ``ordered`` (so
    output is the same for any ``jobs``), else at once too. A planned run with the same key (``run_key``) as one
    of ``earlier`` (a previous invocation's records) is not run again: that record
    takes its place. A run for which ``on_finish`` raises (it could not be written
    out, say) becomes an internal error, cleared of all but its key and duration,
    and is given to ``on_finish`` again. At most a provider's ``max_concurrency`` runs of it go at
    once (runner.suite.slots); each run records the seconds it waited as ``queued``. Once 3 runs of a
    provider in a row could not connect to it, its remaining runs fail at once
    (runner.providers.breaker). Each provider's tries share one rate limiter (runner.providers.ratelimit)
    whose window starts at ``jobs`` or its ``max_concurrency``, whichever is less; each run records the
    seconds its tries waited for it as ``rate_limited``. Raises Interrupted, once running runs have stopped, when
    ``options.run.cancel`` is set. With ``options.shard``, only the runs of that shard are planned
    (runner.suite.shard). With ``number``, only the runs of that run number are planned (a round of
    ``--until-decided``, runner.suite.rounds). The runs go on threads of this process, or on worker processes, each with its
    own breakers and rate limiters (``options.workers``, runner.suite.executors); records come back here.
    """
    plan = list(plan_runs(cases, arms, repeats, options.shard, number))
    keys = plan_keys(cases, arms, repeats, options.shard, number)
    reused = {run_key(record): record for record in earlier}
    todo = [i for i, key in enumerate(keys) if key not in reused]
    slots = Slots({arm.provider.name: arm.provider.max_concurrency for arm in arms})
    run = choose_executor(arms, options, slots, len(todo))

    def show(job: int, record: RunRecord) -> None:
        if record.error_kind != ErrorKind.CANCELLED:
            on_record(record)

    in_order = InOrder(show)
    records: dict[int, Kept] = {}  # plan place -> what is kept of its finished run

    def finished(job: int, record: RunRecord) -> None:
        if record.error_kind != ErrorKind.CANCELLED:
            try:
                on_finish(record)
            except Exception as e:  # noqa: BLE001 (e.g. the record could not be written: save it as the run's internal error)
                internal_error(record, e, clear=True)
                on_finish(record)
            records[todo[job]] = keep(record)
        (in_order if ordered else show)(job, record)

    tasks = [RunTask(*plan[i]) for i in todo]
    if options.jobs == 1:  # one run at a time: its lines come before the next one's --live lines
        run(tasks, finished)
    else:
        saving = Saving(finished, options.run.cancel)  # the executor's loop hands records over and goes on
        try:
            run(tasks, saving.put)
        finally:
            saving.close()
    in_order.flush()
    records.update({i: keep(reused[key]) for i, key in enumerate(keys) if key in reused})
    in_plan_order = [records[i] for i in sorted(records)]
    if len(records) < len(plan):
        raise Interrupted(in_plan_order, [key for i, key in enumerate(keys) if i not in records])
    return in_plan_order


def plan_keys(cases: Sequence[Case], arms: Sequence[Arm], repeats: int = 1, shard: Shard | None = None,
              number: int | None = None) -> list[RunKey]:
    """The key of every run ``run_matrix`` plans for these arguments, in plan order (only ``shard``'s runs, and
    only run number ``number``'s, if given)."""
    return [(case.full_id, arm.provider.name, prompt_slot(arm.prompt.name, arm.fault_arm), run, arm.tool_defs)
            for case, arm, run in plan_runs(cases, arms, repeats, shard, number)]


def run_key(record: RunRecord | RunSummary) -> RunKey:
    """What identifies a run in a matrix, a record or its summary: ``(case full id, provider name, prompt slot, run
    number, tool definitions' name)``; the prompt slot is the prompt name, followed by the arm's fault arm where it
    has one (``default · faults flaky``: prompt_slot)."""
    return record.case, record.provider, prompt_slot(record.prompt, record.fault_arm), record.run, record.tool_defs



def plan_runs(cases: Sequence[Case], arms: Sequence[Planned], repeats: int, shard: Shard | None = None,
              only: int | None = None) -> Iterable[tuple[Case, Planned, int]]:
    """Every run of the matrix as ``(case, arm, run number)``, in plan order: by arm, then case, then run number
    (1-based, up to the case's ``runs`` or ``repeats``); only ``shard``'s runs and run number ``only``'s, if given.
    The one enumeration ``run`` plans and ``list --shard`` / ``run -l --shard`` count."""
    for arm in arms:
        for case in cases:
            for number in range(1, (case.runs or repeats) + 1):  # run numbers are 1-based
                if (shard is None or shard.holds(case.full_id, number)) and only in (None, number):
                    yield case, arm, number
