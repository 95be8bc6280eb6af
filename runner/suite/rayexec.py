"""``run --executor ray``: each run a task on a Ray cluster (docs/scale.md, "Ray").

The driver (the ``tooltrial run`` process) connects to the cluster at ``--ray-address``, else
``$RAY_ADDRESS``, else starts a local Ray for the run, and sends each run as one task: its
RunTask (the case, with its files, setup, turns, checks and script; the arm, with its prompt's
text and its provider's settings), the suite's WorkerSetup (runner.suite.portable) and, for a case
with a fixture, that folder as a tar archive put in Ray's object store once per folder. The
workspace, its sandbox, the agent's commands and the verify commands run on the node that takes
the task; its RunRecord comes back to the driver, which alone writes the results folder.

Ray is imported only here, and this module only when ``--executor ray`` is chosen. Each task asks
TASK_CPUS of a CPU (runs mostly wait for a model), spread over the nodes; the driver keeps ``-j``
tasks in flight and holds every provider's ``max_concurrency`` slots itself (runner.suite.slots).
Provider keys, named by the arms, judges and simulated users (``key_variables``), reach the workers
as a task argument held in the object store (``run_on_node``); they enter no record and no Ray log.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import logging
import os
import shutil
import socket
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import runner
from runner.errors import UserError
from runner.kinds import ErrorKind
from runner.providers.registry import kind_of
from runner.run.execute import internal_error
from runner.run.options import Arm
from runner.run.record import RunRecord
from runner.scoring.metrics import fill_metrics
from runner.spec.case import Case
from runner.spec.fixture import FixtureError, copy_fixture
from runner.suite.executors import CANCELLED, on_threads
from runner.suite.options import SuiteOptions
from runner.suite.portable import RunTask, WorkerSetup, run_task
from runner.suite.slots import Slots
from runner.text import first_line

if TYPE_CHECKING:
    from runner.spec.config import Config

TASK_CPUS = 0.25  # of a CPU per run: a run mostly waits for its model, so four share a core
RAY_HINT = "install the ray extra: pip install 'tooltrial[ray]'"
_POLL = 0.1  # seconds between looks at the cancel event while a task runs
_CANCEL_WAIT = 10.0  # seconds a cancelled task is given to remove its workspace
_CONNECT_TIMEOUT = 5.0  # seconds to reach the cluster's GCS port before ray.init, which waits far longer


def load_ray() -> Any:
    """The ``ray`` module. Raises UserError with RAY_HINT when it is not installed."""
    try:
        import ray
    except ImportError as e:
        raise UserError(f"--executor ray needs Ray, which is not installed here ({e})", hint=RAY_HINT) from e
    return ray


def cluster_address(given: str | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The cluster to join: ``given`` (``--ray-address``), else ``$RAY_ADDRESS``, else None (a new
    local Ray is started for the run, never one ``ray start`` left running here)."""
    return given or environ.get("RAY_ADDRESS") or None


def check_ray(address: str | None) -> None:
    """Refuse, before anything runs, ``--executor ray`` without Ray installed or with a cluster
    ``address`` (``cluster_address``) that does not answer. Raises UserError with the fix."""
    load_ray()
    if address is not None:
        _reachable(address)


def key_variables(names: Iterable[str], config: Config | None) -> list[str]:
    """The environment variables the providers ``names`` (``-p`` values, judges', simulated
    users') read their keys from, as each one's kind says (runner.providers.kind): for a live one, an
    alias's ``api_key_env`` and those litellm reads for the model (``OPENAI_API_KEY`` for ``openai/...``,
    ``OLLAMA_API_BASE`` for ``ollama/...``: litellm's own ``validate_environment``), in order, each once.
    The scripted provider reads none."""
    aliases = config.providers if config else {}
    found = [key for name in dict.fromkeys(names) for key in kind_of(name, aliases).key_variables(name, config)]
    return list(dict.fromkeys(found))


def forwarded_keys(variables: Iterable[str], environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The key ``variables`` set (not blank) in ``environ``, by name, for the workers' environment;
    a variable unset here is left to what the nodes' own environment holds."""
    return {name: environ[name] for name in dict.fromkeys(variables) if environ.get(name, "").strip()}


class RayRuns:
    """The Ray executor (meets runner.suite.executors.Executor): ``options.jobs`` runs in flight on the
    cluster at ``address``, each a task, each provider's ``max_concurrency`` slots held here, its wait
    recorded as ``queued``. The cluster is joined when the runs start and left when they end; the
    workers get ``env`` (``forwarded_keys``) as their environment's additions."""

    def __init__(self, arms: Sequence[Arm], options: SuiteOptions, slots: Slots, address: str | None,
                 env: Mapping[str, str]) -> None:
        self.setup = WorkerSetup.from_options(options.run, arms, options.jobs)
        self.options, self.slots, self.address, self.env = options, slots, address, env

    def __call__(self, tasks: Sequence[RunTask],
                 on_result: Callable[[int, RunRecord], None]) -> None:
        with RayExecutor(self.setup, self.address, self.env) as cluster:

            def run(task: RunTask) -> RunRecord:
                record = cluster.call(task, self.options.run.cancel)
                record.sandbox = record.sandbox or self.options.run.sandbox.confinement  # one lost has none
                return record

            on_threads(tasks, on_result, self.options, self.slots, run)


def pack_folder(folder: Path) -> bytes:
    """``folder``'s tree as an uncompressed tar archive (symlinks kept as links, modes kept).

    Raises OSError when it cannot be read.
    """
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(folder, arcname=".")
    return buffer.getvalue()


@contextlib.contextmanager
def unpacked(case: Case, archive: bytes | None) -> Iterator[Case]:
    """``case`` with its fixture folder unpacked from ``archive`` (``pack_folder``) into a temporary
    folder of this node, removed after the block; ``case`` as it is without an archive."""
    if archive is None or case.fixture is None:
        yield case
        return
    home = Path(tempfile.mkdtemp(prefix="tooltrial-fixture-")).resolve()  # the copy follows no link on its way
    try:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(home / case.fixture, filter="tar")
        yield _with_fixtures(case, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def run_on_node(task: RunTask, setup: WorkerSetup, fixture: bytes | None, keys: Mapping[str, str],
                version: str) -> RunRecord:
    """One Ray task: ``task``'s record, run on this node (runner.suite.portable.run_task) with its
    fixture unpacked here and the provider ``keys`` (``forwarded_keys``) in this worker's environment.
    Raises RuntimeError when this node's tooltrial is not ``version``.

    The keys come as a task argument from the driver's object store, not as the job's
    ``runtime_env``, which Ray's runtime-env agent writes to its log on every node. A Ray worker
    process serves one job, one task at a time, so what it sets here is this suite's alone; the
    agent's commands never see it (runner.sandbox scrubs their environment).
    """
    if runner.__version__ != version:
        raise RuntimeError(f"this Ray node has tooltrial {runner.__version__}, the driver {version}: "
                           "install the same version on every node")
    for name, value in keys.items():
        if os.environ.get(name) != value:
            os.environ[name] = value
    with unpacked(task.case, fixture) as case:
        return run_task(RunTask(case, task.arm, task.number), setup)


class RayExecutor:
    """A connection to a Ray cluster that runs tasks of one suite. ``call`` is thread-safe: the
    driver's run threads (runner.suite.pool) each keep one task in flight. Use as a context manager:
    leaving it disconnects (and stops a Ray it started).

    Args:
        setup: what every run shares (runner.suite.portable.WorkerSetup).
        address: the cluster (``cluster_address``), None to start a local one.
        env: the provider keys every worker gets (``forwarded_keys``).

    Raises UserError when Ray is not installed or the cluster cannot be reached.
    """

    def __init__(self, setup: WorkerSetup, address: str | None, env: Mapping[str, str]) -> None:
        self.ray = load_ray()
        if address is not None:
            _reachable(address)
        try:
            self.ray.init(address=address or "local", log_to_driver=False,
                          logging_level=logging.WARNING, namespace="tooltrial",
                          **({} if address else {"include_dashboard": False}))
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise UserError(f"cannot join the Ray cluster at {address or 'a local Ray'}: {first_line(str(e), '')}",
                            hint="give a running cluster's head as --ray-address HOST:PORT "
                                 "(ray start --head prints it), or leave it out for a local Ray") from e
        self._remote = self.ray.remote(run_on_node).options(num_cpus=TASK_CPUS, scheduling_strategy="SPREAD",
                                                             max_retries=0)
        self._setup = self.ray.put(setup)
        self._keys = self.ray.put(dict(env))
        self._fixtures: dict[Path, Any] = {}  # folder -> its archive in the object store, put once
        self._lock = threading.Lock()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.ray.shutdown()

    def call(self, task: RunTask, cancel: threading.Event) -> RunRecord:
        """``task``'s record, run on a node of the cluster. When ``cancel`` is set first, the task is
        cancelled (Ray interrupts it, its workspace is removed) and the record is ``cancelled``; a
        task that raised is the run's internal error, one whose worker or node was lost its
        ``worker_lost`` error (infrastructure). Never raises an Exception."""
        sent = time.monotonic()
        ref = self._remote.remote(task, self._setup, self._fixture(task.case), self._keys, runner.__version__)
        while not self.ray.wait([ref], timeout=_POLL)[0]:
            if cancel.is_set():
                self.ray.cancel(ref)
                self.ray.wait([ref], timeout=_CANCEL_WAIT)
                return task.unrun(ErrorKind.CANCELLED, CANCELLED)
        try:
            record: RunRecord = self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as e:  # raised in the task: tooltrial's own bug
            record = task.unrun(ErrorKind.INTERNAL, "")
            cause = e.cause if isinstance(e.cause, Exception) else e
            internal_error(record, cause)
        except self.ray.exceptions.RayError as e:  # the worker process or its node went away
            record = task.unrun(ErrorKind.WORKER_LOST, f"the Ray task of this run was lost: {type(e).__name__}: "
                                                       f"{first_line(str(e), '')}")
            record.duration = time.monotonic() - sent
            fill_metrics(task.case, record)  # its failure cause, as for any error
        return record

    def _fixture(self, case: Case) -> Any:
        """The object-store reference of ``case``'s fixture folder, packed and put on first use; None
        without a fixture, or when the folder cannot be copied here (not found, a symbolic link on its
        way: the run then says so, as locally)."""
        if case.fixture is None or case.fixtures_dir is None:
            return None
        folder = case.fixtures_dir / case.fixture
        with self._lock:
            if folder not in self._fixtures:
                try:
                    self._fixtures[folder] = self.ray.put(_packed_fixture(case.fixtures_dir, case.fixture))
                except (FixtureError, OSError):
                    self._fixtures[folder] = None
            return self._fixtures[folder]


def _packed_fixture(fixtures: Path, name: str) -> bytes:
    """Fixture ``name`` copied as a workspace copies it (runner.spec.fixture: no symbolic link on its way
    followed), then packed (``pack_folder``). Raises FixtureError or OSError."""
    with tempfile.TemporaryDirectory(prefix="tooltrial-fixture-") as copy:
        copy_fixture(fixtures, name, Path(copy))
        return pack_folder(Path(copy))


def _with_fixtures(case: Case, home: Path) -> Case:
    return dataclasses.replace(case, fixtures_dir=home)


def _reachable(address: str) -> None:
    """Raise UserError unless ``address`` (``HOST:PORT``, or ``ray://...`` / ``auto``, taken as given)
    accepts a TCP connection within _CONNECT_TIMEOUT seconds."""
    host, sep, port = address.rpartition(":")
    if not sep or "://" in address or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT).close()
    except OSError as e:
        raise UserError(f"cannot reach the Ray cluster at {address}: {e.strerror or e}",
                        hint="start one (ray start --head --port PORT) or give its head's address as "
                             "--ray-address HOST:PORT") from e
