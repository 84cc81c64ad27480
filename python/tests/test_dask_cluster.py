"""A sweep on a Dask cluster of separate processes, as users run one: a
``dask scheduler`` and two ``dask worker`` processes started from the
command line on 127.0.0.1 (the OS picks free ports), which reach the
scheduler only over TCP. One worker is killed with SIGKILL in the middle
of a point.

What "resumes nothing twice" means here, checked against the scheduler's
own record of finished tasks and the sweep directory:

- every point is run to completion exactly once: the points the killed
  worker had finished are not run again, and the one it was running is
  finished by the other worker;
- each point's record is written once to ``OUT/points`` (the directory of
  ``numalab sweep -o OUT``), and running the sweep again with the same
  ``out`` submits no task and rewrites no file;
- the table equals the local run's, and the sweep directory equals the
  command line's byte for byte.

Left out: more than one host, and a killed scheduler (the sweep then
fails; rerunning it with the same ``out`` resumes it)."""

from __future__ import annotations

import collections
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional

import pandas as pd
import pytest

import numalab
from built_cli import find_cli
from cli_cluster import TIMEOUT_S, Cluster, wait_for

distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")
psutil = pytest.importorskip("psutil")

# The scheduler runs this module's query functions; it cannot import the
# test module, so they travel by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

# 8 points of a fifth of a second to a second each (balancing off, on):
# long enough to catch a worker in the middle of one, short enough for
# the test to take about half a minute.
SPEC = """\
name = "cluster"
scale = 1.0
machines = ["tiny-2n"]
workloads = ["numa02"]
seeds = [1, 2, 3, 4]
[knobs]
"kernel.numa_balancing" = ["0", "1"]
"""
POINTS = 8


def _worker_tasks(dask_scheduler: Any, address: str) -> Dict[str, List[str]]:
    """On the scheduler: the tasks a worker is running or has been given
    (``processing``) and the finished ones whose result it still holds
    (``holding``)."""
    ws = dask_scheduler.workers[address]
    return {
        "processing": sorted(str(ts.key) for ts in ws.processing),
        "holding": sorted(str(ts.key) for ts in ws.has_what),
    }


def _ping(dask_scheduler: Any) -> None:
    """A round trip to the scheduler, after the messages it has read."""


def _finished(client: Any) -> List[Dict[str, Any]]:
    """The scheduler's record of finished tasks (its task stream): key,
    worker, status, one entry each time a task finished."""
    return [r for r in client.get_task_stream() if str(r["key"]).startswith("numalab-")]


def _kill_mid_point(client: Any, cluster: Cluster, victim: str, sweep_done: threading.Event):
    """Kills the victim worker (SIGKILL to its process group) at a moment
    when it has finished at least one point, is running another, and holds
    no finished result the client has not taken yet. Returns the keys it
    was given at that moment.

    A worker that holds a finished result when it dies makes Dask run that
    point again, whatever the sweep does, if the kill comes between the
    point finishing and the client taking its record; so the moment is
    made certain rather than left to timing: the victim is stopped
    (SIGSTOP), the scheduler asked twice (so every message the victim sent
    before it stopped has been handled), and only then killed, or resumed
    (SIGCONT) to try again. A sweep that leaves finished results on the
    workers never gets there and fails here."""

    def caught() -> Optional[List[str]]:
        if sweep_done.is_set():
            pytest.fail(
                "the sweep ended before the victim was caught running a point with "
                "every point it had finished taken by the client (finished points "
                f"left on the workers?); finished: {_finished(client)}"
            )
        if not any(r["worker"] == victim for r in _finished(client)):
            return None
        tasks = client.run_on_scheduler(_worker_tasks, address=victim)
        if not tasks["processing"] or tasks["holding"]:
            return None
        cluster.signal("victim", signal.SIGSTOP)
        wait_for(
            "the victim to stop",
            lambda: all(p.status() == psutil.STATUS_STOPPED for p in cluster.group("victim")),
        )
        client.run_on_scheduler(_ping)
        tasks = client.run_on_scheduler(_worker_tasks, address=victim)
        if tasks["processing"] and not tasks["holding"]:
            cluster.signal("victim", signal.SIGKILL)
            return tasks["processing"]
        cluster.signal("victim", signal.SIGCONT)
        return None

    return wait_for("the victim to be running a point, its finished ones delivered", caught)


def _sweep_dir(out: Path) -> Dict[str, bytes]:
    """Every file of a sweep directory, by relative path."""
    return {str(f.relative_to(out)): f.read_bytes() for f in sorted(out.rglob("*")) if f.is_file()}


def test_a_sweep_survives_a_killed_worker(cli_cluster, tmp_path):
    cluster = cli_cluster
    client = distributed.Client(cluster.address, timeout=TIMEOUT_S)
    try:
        client.wait_for_workers(2, timeout=TIMEOUT_S)
        workers = {w["name"]: a for a, w in client.scheduler_info()["workers"].items()}
        victim, survivor = workers["victim"], workers["survivor"]
        _finished(client)  # starts the scheduler's task stream before the sweep

        out = tmp_path / "on-dask"
        result: Dict[str, Any] = {}
        done = threading.Event()

        def run() -> None:
            try:
                result["table"] = numalab.sweep(SPEC, client=client, out=out)
            except BaseException as e:  # reported by the test thread
                result["error"] = e
            finally:
                done.set()

        # A daemon thread: a sweep hung on a broken cluster cannot hold up
        # the end of the test run.
        threading.Thread(target=run, daemon=True).start()
        in_flight = _kill_mid_point(client, cluster, victim, done)
        assert cluster.procs["victim"].wait(timeout=TIMEOUT_S) == -signal.SIGKILL
        wait_for("the sweep to finish", done.is_set)
        if "error" in result:
            raise result["error"]
        on_dask = result["table"]

        # Every point finished exactly once, the killed worker's unfinished
        # ones on the survivor.
        finished = _finished(client)
        assert all(r["status"] == "OK" for r in finished), finished
        runs = collections.Counter(str(r["key"]) for r in finished)
        assert len(runs) == POINTS, runs
        twice = {k: n for k, n in runs.items() if n > 1}
        assert not twice, f"points run to completion more than once: {twice}"
        by = {str(r["key"]): r["worker"] for r in finished}
        assert any(w == victim for w in by.values())
        assert in_flight and all(by[k] == survivor for k in in_flight), (in_flight, by)
        assert victim not in client.scheduler_info()["workers"]

        # Resuming runs nothing and rewrites nothing.
        saved = {f.name: f.stat() for f in (out / "points").iterdir()}
        assert len(saved) == POINTS
        again = numalab.sweep(SPEC, client=client, out=out)
        pd.testing.assert_frame_equal(again, on_dask)
        assert len(_finished(client)) == len(finished)
        for f in (out / "points").iterdir():
            before, now = saved[f.name], f.stat()
            assert (now.st_ino, now.st_mtime_ns) == (before.st_ino, before.st_mtime_ns), f
    finally:
        client.close()

    # The same table and records as a local run and as the command line's.
    local = tmp_path / "local"
    pd.testing.assert_frame_equal(on_dask, numalab.sweep(SPEC, out=local))
    assert _sweep_dir(out) == _sweep_dir(local)
    cli = find_cli()
    if cli is not None:
        spec = tmp_path / "cluster.toml"
        spec.write_text(SPEC)
        subprocess.run(
            [cli, "sweep", str(spec), "-o", str(tmp_path / "cli")],
            check=True,
            timeout=TIMEOUT_S,
            stderr=subprocess.DEVNULL,
        )
        assert _sweep_dir(out) == _sweep_dir(tmp_path / "cli")
