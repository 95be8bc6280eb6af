"""The saving thread (runner.suite.saving): records handled in order off the executor's loop, a slow disk
holding the loop back only past ``depth`` records, a failure stopping the suite, and the second Ctrl-C
waiting for what it holds."""

from __future__ import annotations

import threading
import time

import pytest

from runner.suite.saving import Saving, drain


def test_items_are_handled_in_the_order_put_and_close_waits_for_them() -> None:
    handled: list[int] = []
    saving: Saving[str] = Saving(lambda job, item: (time.sleep(0.01), handled.append(job)), threading.Event())
    for job in (3, 0, 2, 1):
        saving.put(job, "record")
    saving.close()
    assert handled == [3, 0, 2, 1]


def test_put_waits_only_once_depth_items_wait() -> None:
    started, release = threading.Event(), threading.Event()

    def handle(job: int, item: None) -> None:
        started.set()
        release.wait()

    saving: Saving[None] = Saving(handle, threading.Event(), depth=2)
    saving.put(0, None)
    assert started.wait(5)  # the thread holds item 0
    saving.put(1, None)
    saving.put(2, None)  # two wait: the queue is full
    third = threading.Thread(target=saving.put, args=(3, None))
    third.start()
    third.join(0.2)
    assert third.is_alive()
    release.set()
    third.join(5)
    assert not third.is_alive()
    saving.close()


def test_a_handler_that_raises_stops_the_suite_and_close_raises_it() -> None:
    handled: list[int] = []
    cancel = threading.Event()

    def handle(job: int, item: str) -> None:
        if job == 1:
            raise ValueError("cannot save")
        handled.append(job)

    saving: Saving[str] = Saving(handle, cancel)
    for job in range(4):
        saving.put(job, "record")
    with pytest.raises(ValueError, match="cannot save"):
        saving.close()
    assert cancel.is_set() and handled == [0]  # what came after the failure is dropped


def test_drain_returns_once_what_every_open_saving_holds_is_handled() -> None:
    handled: list[int] = []
    saving: Saving[str] = Saving(lambda job, item: (time.sleep(0.05), handled.append(job)), threading.Event())
    for job in range(5):
        saving.put(job, "record")
    drain(5.0)
    assert handled == [0, 1, 2, 3, 4]
    saving.close()


def test_drain_gives_up_at_its_timeout() -> None:
    release = threading.Event()
    saving: Saving[None] = Saving(lambda job, item: release.wait(), threading.Event())
    saving.put(0, None)
    started = time.monotonic()
    drain(0.2)
    assert 0.15 < time.monotonic() - started < 2
    release.set()
    saving.close()
