"""The run matrix: cases x arms (provider x prompt) x repeats, each run isolated
(runner.run.execute), the templates checked before any starts, ``--resume`` keys.

Runs execute concurrently on a bounded pool (runner.run.pool); they share no mutable
state, and their records come back in plan order whatever the concurrency.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable, Iterable, Sequence, TypeVar

from runner.errors import Location, UserError, UserErrors
from runner.kinds import ErrorKind
from runner.names import SCRIPTED
from runner.providers.breaker import Breaker
from runner.providers.ratelimit import RateLimiter
from runner.run.execute import execute, internal_error
from runner.run.options import Arm, RunOptions
from runner.run.pool import InOrder, run_pool
from runner.run.prompts import (
    context_for,
    system_prompt,
    turn_prompt,
    user_prompts,
)
from runner.run.record import ERROR, RunRecord
from runner.run.shard import Shard
from runner.run.slots import Slots
from runner.spec.case import Case
from runner.text import plural

RunKey = tuple[str, str, str, int]  # case full id, provider name, prompt name, run number (1-based)
Kept = TypeVar("Kept")  # what run_matrix keeps of each finished run: the record, or its summary


def _whole(record: RunRecord) -> RunRecord:
    """``run_matrix``'s default ``keep``: the whole record."""
    return record


class Interrupted(Exception):
    """``run_matrix`` stopped early because ``RunOptions.cancel`` was set.

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

    Raises UserErrors listing every template error (undefined variable, bad syntax), each
    template rendered on its own so one error does not hide the next.
    """
    errors: list[UserError] = []
    seen: set[str] = set()
    for case in cases:
        for arm in arms:
            context = context_for(case, [], "/workspace")
            renders = [partial(system_prompt, arm.prompt, case, context),
                       *(partial(turn_prompt, case, index, context) for index in range(len(case.turns))),
                       *([partial(user_prompts, case, context)] if case.user is not None else [])]
            for render in renders:
                try:
                    render()
                except UserError as e:
                    if e.render() not in seen:
                        seen.add(e.render())
                        errors.append(e)
    if errors:
        raise UserErrors(errors)


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
    options: RunOptions,
    repeats: int = 1,
    on_record: Callable[[RunRecord], None] = lambda record: None,
    ordered: bool = True,
    on_finish: Callable[[RunRecord], None] = lambda record: None,
    earlier: Sequence[RunRecord] = (),
    keep: Callable[[RunRecord], Kept] = _whole,  # type: ignore[assignment]
) -> list[Kept]:
    """Run every case in every arm ``repeats`` times (a case's own ``runs`` wins), ``options.jobs`` at once.

    Returns ``keep(record)`` of each record in plan order: by arm, then case, then run index; by
    default the record itself, and with runner.scoring.summary.summarize only its summary, so a
    suite's records need not stay in memory once ``on_finish`` has saved them. For each run
    that finishes, in the calling thread: ``on_finish`` at once (to save it), then
    ``on_record``, in plan order when ``ordered`` (so output is the same for any
    ``jobs``), else at once too. A planned run with the same key (``run_key``) as one
    of ``earlier`` (a previous invocation's records) is not run again: that record
    takes its place. A run for which ``on_finish`` raises (it could not be written
    out, say) becomes an internal error, cleared of all but its key and duration,
    and is given to ``on_finish`` again. At most a provider's ``max_concurrency`` runs of it go at
    once (runner.run.slots); each run records the seconds it waited as ``queued``. Once 3 runs of a
    provider in a row could not connect to it, its remaining runs fail at once
    (runner.providers.breaker). Each provider's tries share one rate limiter (runner.providers.ratelimit)
    whose window starts at ``jobs`` or its ``max_concurrency``, whichever is less; each run records the
    seconds its tries waited for it as ``rate_limited``. Raises Interrupted, once running runs have stopped, when
    ``options.cancel`` is set. With ``options.shard``, only the runs of that shard are planned
    (runner.run.shard).
    """
    plan = list(_plan(cases, arms, repeats, options.shard))
    keys = plan_keys(cases, arms, repeats, options.shard)
    reused = {run_key(record): record for record in earlier}
    todo = [i for i, key in enumerate(keys) if key not in reused]
    breakers = {arm.provider.name: Breaker(arm.provider.name) for arm in arms}  # one per provider, this suite's
    slots = Slots({arm.provider.name: arm.provider.max_concurrency for arm in arms})
    limiters = {arm.provider.name: RateLimiter(arm.provider.name, min(options.jobs, arm.provider.max_concurrency
                                                                      or options.jobs), options.cancel)
                for arm in arms if arm.provider.limited is not None}

    def work(job: int) -> RunRecord:
        case, arm, run = plan[todo[job]]
        with slots.held(arm.provider.name, options.cancel) as waited:
            if waited is None:  # interrupted while waiting: never started
                return RunRecord(case.full_id, arm.provider.name, arm.prompt.name, run, ERROR,
                                 "cancelled: the suite was interrupted", ErrorKind.CANCELLED)
            record = execute(case, arm, options, run, breakers[arm.provider.name], limiters.get(arm.provider.name))
            record.queued = waited
            return record

    def show(job: int, record: RunRecord) -> None:
        if record.error_kind != ErrorKind.CANCELLED:
            on_record(record)

    in_order = InOrder(show)
    records: dict[int, Kept] = {}  # plan place -> what is kept of its finished run

    def finished(job: int, record: RunRecord) -> None:
        if record.error_kind != ErrorKind.CANCELLED:
            try:
                on_finish(record)
            except Exception as e:  # e.g. the record could not be written: save it as the run's internal error
                internal_error(record, e, clear=True)
                on_finish(record)
            records[todo[job]] = keep(record)
        (in_order if ordered else show)(job, record)

    run_pool(work, len(todo), options.jobs, options.cancel, finished)
    in_order.flush()
    records.update({i: keep(reused[key]) for i, key in enumerate(keys) if key in reused})
    in_plan_order = [records[i] for i in sorted(records)]
    if len(records) < len(plan):
        raise Interrupted(in_plan_order, [key for i, key in enumerate(keys) if i not in records])
    return in_plan_order


def plan_keys(cases: Sequence[Case], arms: Sequence[Arm], repeats: int = 1, shard: Shard | None = None) -> list[RunKey]:
    """The key of every run ``run_matrix`` plans for these arguments, in plan order (only ``shard``'s runs, if given)."""
    return [(case.full_id, arm.provider.name, arm.prompt.name, run) for case, arm, run in _plan(cases, arms, repeats, shard)]


def run_key(record: RunRecord) -> RunKey:
    """What identifies a run in a matrix: ``(case full id, provider name, prompt name, run number)``."""
    return record.case, record.provider, record.prompt, record.run


def _plan(cases: Sequence[Case], arms: Sequence[Arm], repeats: int,
          shard: Shard | None = None) -> Iterable[tuple[Case, Arm, int]]:
    for arm in arms:
        for case in cases:
            for number in range(1, (case.runs or repeats) + 1):  # run numbers are 1-based
                if shard is None or shard.holds(case.full_id, number):
                    yield case, arm, number
