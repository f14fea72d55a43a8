"""Worker processes for a many-trace load or ingest: one per core, each taking one task at a time
through a pipe of its own.

A worker that dies mid-task (killed, out of memory) fails only the task it held: `on_crash` says
what that task's result is, a new worker takes its place, and the other tasks go on. Workers die
with the process that started them: on Linux the kernel kills them when it exits
(PR_SET_PDEATHSIG), elsewhere they notice it is gone within a second; so does multiprocessing's
resource tracker, once no worker is left. A kill -9 of `traceview` leaves no process behind.
Workers run where the scheduler puts them (kept each to a core of its own, they took as much CPU
or more: CHANGELOG.md, "Speed mechanisms measured")."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar

from traceview import preload

R = TypeVar("R")
CrashFn = Callable[[tuple[object, ...], str], Any]  # (the task, why its worker died) -> result
_PR_SET_PDEATHSIG = 1


def map_in_processes(
    fn: Callable[..., R],
    tasks: Sequence[tuple[object, ...]],
    jobs: int | None = None,
    on_done: Callable[[int, int, R], None] | None = None,
    on_crash: CrashFn | None = None,
) -> list[R]:
    """`fn(*task)` for each task, one process per core (or `jobs`); results in task order.
    `fn` must be a module-level function (it is sent to the workers by name). A task whose
    worker died gets `on_crash(task, why)`; without `on_crash`, a RuntimeError."""
    workers = max(1, min(len(tasks), jobs or preload.cores()))
    if workers == 1:
        results_in_order: list[R] = []
        for i, task in enumerate(tasks):
            results_in_order.append(fn(*task))
            if on_done:
                on_done(i + 1, len(tasks), results_in_order[-1])
        return results_in_order
    with _Pool(fn, workers) as pool:
        return pool.run(tasks, on_done, on_crash)


class _Worker:
    def __init__(self, context: Any, fn: Callable[..., Any]) -> None:
        self.conn, theirs = context.Pipe()
        self.process: BaseProcess = context.Process(
            target=_serve, args=(theirs, fn, os.getpid()), daemon=True
        )
        self.process.start()
        theirs.close()
        self.task: int | None = None  # the index of the task it holds

    def let_go(self) -> None:
        with suppress(OSError, ValueError):
            self.conn.close()  # an idle worker leaves when its pipe closes
        if self.task is not None and self.process.is_alive():
            self.process.kill()  # one still working (an interrupt): now

    def join(self) -> None:
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


class _Pool:
    def __init__(self, fn: Callable[..., Any], size: int) -> None:
        # spawn, not fork: polars' thread pools do not survive a fork.
        self._context = multiprocessing.get_context("spawn")
        self._fn = fn
        self._size = size
        self._workers: list[_Worker] = []

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, *_: object) -> None:
        for worker in self._workers:  # all told first, so they leave together
            worker.let_go()
        for worker in self._workers:
            worker.join()

    def _start(self) -> _Worker:
        with _workers_skip_main(), preload.for_workers():
            worker = _Worker(self._context, self._fn)
        self._workers.append(worker)
        return worker

    def run(
        self,
        tasks: Sequence[tuple[object, ...]],
        on_done: Callable[[int, int, Any], None] | None,
        on_crash: CrashFn | None,
    ) -> list[Any]:
        results: dict[int, Any] = {}
        todo = iter(range(len(tasks)))

        def give(worker: _Worker) -> None:
            i = next(todo, None)
            worker.task = i
            if i is not None:
                worker.conn.send(tasks[i])

        for _ in range(self._size):
            give(self._start())
        while len(results) < len(tasks):
            busy = [w for w in self._workers if w.task is not None]
            ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
            for worker in busy:
                i = worker.task
                assert i is not None
                if worker.conn in ready or worker.conn.poll():
                    try:
                        results[i] = worker.conn.recv()
                    except (EOFError, OSError):
                        results[i] = self._crashed(worker, tasks[i], on_crash)
                        worker = self._replace(worker)
                elif worker.process.sentinel in ready:
                    results[i] = self._crashed(worker, tasks[i], on_crash)
                    worker = self._replace(worker)
                else:
                    continue
                if on_done:
                    on_done(len(results), len(tasks), results[i])
                give(worker)
        return [results[i] for i in range(len(tasks))]

    def _crashed(self, worker: _Worker, task: tuple[object, ...], on_crash: CrashFn | None) -> Any:
        worker.process.join(timeout=5)
        why = _why_it_died(worker.process.exitcode)
        if on_crash is None:
            raise RuntimeError(f"a worker process {why}")
        return on_crash(task, why)

    def _replace(self, dead: _Worker) -> _Worker:
        dead.task = None
        dead.let_go()
        dead.join()
        self._workers.remove(dead)
        return self._start()


def _why_it_died(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        hint = " (out of memory?)" if -exitcode == signal.SIGKILL else ""
        return f"was killed by {name}{hint}"
    return f"stopped (exit status {exitcode})"


def _serve(conn: Connection, fn: Callable[..., Any], parent: int) -> None:
    """(In a worker.) Tasks from the pipe until it closes; dies with the parent."""
    _die_with(parent)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        conn.send(fn(*task))


def _die_with(parent: int) -> None:
    if sys.platform.startswith("linux"):
        with suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the line above
        os._exit(1)
    if not sys.platform.startswith("linux"):

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(1)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()


@contextmanager
def _workers_skip_main() -> Iterator[None]:
    """Spawned workers import the main module again, unless it hides where it came from. They
    need only traceview; and a user's script without an `if __name__ == "__main__":` guard would
    otherwise run again in each of them (and fail there, starting workers of its own)."""
    main = sys.modules.get("__main__")
    saved: dict[str, object] = {
        k: main.__dict__[k] for k in ("__file__", "__spec__") if main and k in main.__dict__
    }
    if main is None or not saved:
        yield
        return
    main.__dict__.pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.update(saved)
