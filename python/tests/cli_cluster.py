"""A Dask cluster as users start one, for the tests: a ``dask scheduler``
and ``dask worker`` processes launched with the ``dask`` command (of this
interpreter) on 127.0.0.1, ports chosen by the OS, each process in its own
session so that a worker's nanny and worker process can be stopped or
killed together, as when its host dies. The workers are given only the
scheduler's TCP address. Left out: TLS, more than one host."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pytest

#: Longest wait for a process to start or a condition to hold.
TIMEOUT_S = 60.0


def wait_for(what: str, ready: Callable[[], Any], timeout: float = TIMEOUT_S) -> Any:
    """Polls ``ready`` until it returns something true, and returns that;
    fails the test naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = ready()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.02)


class Cluster:
    """A scheduler and named workers, each a ``dask`` CLI process; logs
    in ``root/NAME.log``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.procs: Dict[str, subprocess.Popen] = {}
        #: The scheduler's address, ``tcp://127.0.0.1:PORT``.
        self.address = ""

    def start_scheduler(self) -> str:
        """Starts the scheduler and returns its address once it listens."""
        scheduler_file = self.root / "scheduler.json"
        self._start(
            "scheduler",
            "scheduler",
            "--host", "127.0.0.1",
            "--port", "0",
            "--no-dashboard",
            "--scheduler-file", str(scheduler_file),
        )  # fmt: skip

        def address() -> Optional[str]:
            self.check_alive("scheduler")
            try:
                return str(json.loads(scheduler_file.read_text())["address"])
            except (OSError, ValueError, KeyError):
                return None  # not written yet, or half written

        self.address = wait_for("the scheduler's address", address)
        return self.address

    def start_worker(self, name: str, nthreads: int = 1) -> None:
        """Starts worker ``name`` (one process under a nanny) connecting to
        the scheduler by its TCP address."""
        self._start(
            name,
            "worker",
            self.address,
            "--name", name,
            "--host", "127.0.0.1",
            "--nworkers", "1",
            "--nthreads", str(nthreads),
            "--no-dashboard",
            "--local-directory", str(self.root / name),
            "--death-timeout", str(int(TIMEOUT_S)),
        )  # fmt: skip

    def _start(self, name: str, *args: str) -> None:
        with open(self.root / f"{name}.log", "wb") as log:
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-m", "dask", *args],
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self, name: str) -> str:
        """The end of process ``name``'s output."""
        return (self.root / f"{name}.log").read_text(errors="replace")[-3000:]

    def check_alive(self, name: str) -> None:
        """Fails the test, with its output, if process ``name`` has exited."""
        proc = self.procs[name]
        if proc.poll() is not None:
            pytest.fail(f"dask {name} exited ({proc.returncode}):\n{self.log(name)}")

    def signal(self, name: str, sig: int) -> None:
        """Sends ``sig`` to process ``name``'s whole process group."""
        os.killpg(self.procs[name].pid, sig)

    def group(self, name: str) -> List[Any]:
        """Process ``name`` and its descendants (a nanny and its worker),
        as psutil processes."""
        import psutil

        top = psutil.Process(self.procs[name].pid)
        return [top, *top.children(recursive=True)]

    def stop(self) -> None:
        """Ends every process group: SIGTERM, then SIGKILL for what is left
        after 10 s."""
        for proc in self.procs.values():
            if proc.poll() is None:
                _killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
            # Whatever is left of the group (a nanny's worker process).
            _killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass  # the group has ended
