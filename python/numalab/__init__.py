"""numalab from Python: the model of Linux automatic NUMA balancing.

The same runs, comparisons, reproductions and sweeps as the ``numalab``
command line, computed by the same Rust code (the ``numalab._numalab``
extension), with results as Python objects and pandas tables:

>>> import numalab
>>> r = numalab.run("tiny-2n", "numa02", scale=0.05)
>>> r.to_pandas("timeseries").head()

``sweep(spec, client=...)`` runs a sweep's points as tasks on a Dask
distributed cluster (one task per point); without a client it runs them
here on every core. Either way the result is the table ``numalab sweep``
writes as results.csv, in the same point order; with ``out=DIR`` the
sweep also keeps, and resumes from, the directory ``numalab sweep -o DIR``
keeps. Left out: real-kernel and QEMU runs, traces and plots, which stay
on the command line.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import warnings
from pathlib import Path
from typing import Any, Dict, Generator, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import pandas as pd

from . import _numalab

__version__: str = _numalab.__version__

__all__ = [
    "Comparison",
    "Reproduction",
    "Run",
    "__version__",
    "compare",
    "knobs",
    "machines",
    "reproduce",
    "reproductions",
    "run",
    "sweep",
    "workloads",
]

#: The kinds of table ``Run.to_pandas`` makes.
TABLE_KINDS = ("timeseries", "tasks", "counters", "nodes", "processes")


class Run:
    """One model run: the Run record (the JSON ``numalab run --json``
    writes), as a dict in ``record``, with its figures as attributes and
    its tables as pandas DataFrames (``to_pandas``)."""

    def __init__(self, record: Mapping[str, Any]) -> None:
        self.record: Dict[str, Any] = dict(record)

    @classmethod
    def from_json(cls, text: str) -> "Run":
        """A Run from Run record JSON text (``numalab run --json``)."""
        return cls(json.loads(text))

    def to_json(self) -> str:
        """The Run record as JSON text (readable by ``numalab compare``)."""
        return json.dumps(self.record)

    @property
    def machine(self) -> str:
        """Machine name."""
        return str(self.record["machine"].get("name", "?"))

    @property
    def workload(self) -> str:
        """Workload name."""
        return str(self.record["workload"].get("name", "?"))

    @property
    def seed(self) -> int:
        """PRNG seed."""
        return int(self.record["seed"])

    @property
    def scale(self) -> float:
        """``--scale`` of the run."""
        return float(self.record["scale"])

    @property
    def elapsed_s(self) -> float:
        """Wall-clock seconds (virtual time)."""
        return float(self.record["elapsed_s"])

    @property
    def user_s(self) -> float:
        """User CPU seconds."""
        return float(self.record["user_s"])

    @property
    def sys_s(self) -> float:
        """System CPU seconds."""
        return float(self.record["sys_s"])

    @property
    def score(self) -> Optional[float]:
        """The workload's score (e.g. throughput), if it has one."""
        s = self.record.get("score")
        return None if s is None else float(s["value"])

    @property
    def settings(self) -> Dict[str, str]:
        """Every knob's value in the run."""
        return dict(self.record.get("settings", {}))

    @property
    def vmstat(self) -> Dict[str, int]:
        """The /proc/vmstat counters."""
        return dict(self.record.get("vmstat", {}))

    @property
    def lab(self) -> Dict[str, float]:
        """The model's own figures (shares, rates) that no kernel file has."""
        return dict(self.record.get("lab", {}))

    def summary(self) -> str:
        """The summary ``numalab run`` prints."""
        return _numalab.run_summary(self.to_json())

    def __repr__(self) -> str:
        return (
            f"Run(machine={self.machine!r}, workload={self.workload!r}, seed={self.seed}, "
            f"scale={self.scale}, elapsed_s={self.elapsed_s:.3f})"
        )

    def to_pandas(self, kind: str = "timeseries") -> pd.DataFrame:
        """A table of the run.

        ``kind`` is one of:

        - ``"timeseries"``: one row per sample, the record's columns
          (``t_s`` first: virtual seconds);
        - ``"tasks"``: one row per task (thread): times, last CPU and node,
          bytes per node (``bytes_node<N>``), NUMA state (``numa_*``,
          faults per node ``numa_faults_node<N>_<kind>``);
        - ``"counters"``: one row per counter, columns ``source``
          (``vmstat``, ``lab``, or ``memory.stat:<cgroup>``), ``name``,
          ``value``;
        - ``"nodes"``: one row per NUMA node (memory, traffic);
        - ``"processes"``: one row per process (times, pages per node).
        """
        if kind == "timeseries":
            ts = self.record.get("timeseries") or {"columns": ["t_s"], "rows": []}
            return pd.DataFrame(ts["rows"], columns=ts["columns"])
        if kind == "tasks":
            return pd.DataFrame([_task_row(t) for t in self.record.get("tasks", [])])
        if kind == "counters":
            rows: List[Tuple[str, str, float]] = []
            rows += [("vmstat", k, v) for k, v in sorted(self.record.get("vmstat", {}).items())]
            rows += [("lab", k, v) for k, v in sorted(self.record.get("lab", {}).items())]
            for path, cg in sorted(self.record.get("cgroups", {}).items()):
                for k, v in sorted(cg.get("memory_stat", {}).items()):
                    rows.append((f"memory.stat:{path}", k, v))
            return pd.DataFrame(rows, columns=["source", "name", "value"])
        if kind == "nodes":
            return pd.DataFrame(self.record.get("nodes", []))
        if kind == "processes":
            rows2 = []
            for p in self.record.get("processes", []):
                row = {k: v for k, v in p.items() if k != "pages_by_node"}
                for n, pages in enumerate(p.get("pages_by_node", [])):
                    row[f"pages_node{n}"] = pages
                rows2.append(row)
            return pd.DataFrame(rows2)
        raise ValueError(f"to_pandas {kind}: expected one of {', '.join(TABLE_KINDS)}")


def _task_row(t: Mapping[str, Any]) -> Dict[str, Any]:
    """One task of a Run record as a flat row."""
    row: Dict[str, Any] = {
        k: v for k, v in t.items() if k not in ("bytes_by_node", "numa", "access_latency")
    }
    for n, b in enumerate(t.get("bytes_by_node", [])):
        row[f"bytes_node{n}"] = b
    numa = t.get("numa")
    if numa is not None:
        for k, v in numa.items():
            if k != "faults":
                row[f"numa_{k}"] = v
        for f in numa.get("faults", []):
            for k, v in f.items():
                if k != "node":
                    row[f"numa_faults_node{f['node']}_{k}"] = v
    lat = t.get("access_latency")
    if lat is not None:
        for k in ("reads_over", "writes_over", "max_ns"):
            row[f"latency_{k}"] = lat.get(k)
    return row


def run(
    machine: str,
    workload: str,
    set: Iterable[str] = (),  # noqa: A002 - the CLI's --set
    seed: int = 1,
    scale: float = 1.0,
) -> Run:
    """One model run, as ``numalab run -m MACHINE -w WORKLOAD --set ...``.

    ``machine`` and ``workload`` are preset names or TOML spec files;
    ``set`` holds ``KEY=VALUE`` knob settings (``numalab list knobs``).
    Bad input raises ``ValueError`` with the CLI's one-line message.
    """
    return Run.from_json(_numalab.run(machine, workload, list(set), seed, scale))


class Comparison:
    """The mmtests compare-kernels table of several columns of runs
    (``numalab compare``): ``text`` as printed, ``to_pandas()`` one row
    per run (``numalab compare --csv``)."""

    def __init__(self, text: str, csv: str) -> None:
        self.text = text
        self._csv = csv

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def to_pandas(self) -> pd.DataFrame:
        """One row per run: its column label, figures and counters."""
        return pd.read_csv(io.StringIO(self._csv))


def compare(
    runs: Sequence[Union[Run, Sequence[Run]]],
    labels: Optional[Sequence[str]] = None,
    cgroup: Optional[str] = None,
    force: bool = False,
) -> Comparison:
    """Compares columns of runs, the first being the base.

    Each item of ``runs`` is a ``Run`` or a list of runs (iterations of one
    configuration). ``labels`` name the columns (default ``run1``,
    ``run2``, ...). A column may hold runs of several workloads: each is a
    test with its own rows, ``n/a`` in a column without it. Runs of
    different machines or scales are refused with ``ValueError`` unless
    ``force`` (then a warning).
    """
    columns: List[Tuple[str, List[str]]] = []
    for i, col in enumerate(runs):
        items = [col] if isinstance(col, Run) else list(col)
        label = labels[i] if labels is not None and i < len(labels) else f"run{i + 1}"
        columns.append((label, [r.to_json() for r in items]))
    if labels is not None and len(labels) != len(columns):
        raise ValueError(f"compare: {len(labels)} labels for {len(columns)} columns")
    text, csv, warning = _numalab.compare_runs(columns, cgroup, force)
    if warning is not None:
        warnings.warn(warning, stacklevel=2)
    return Comparison(text, csv)


class Reproduction:
    """The outcome of ``reproduce``: the text ``numalab reproduce``
    prints, the verdict rows (``to_pandas()``), each reproduction's tally,
    and the runs of each configuration."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.text: str = data["text"]
        outcomes = data["outcomes"]
        #: Reproduction name -> counts of figures by verdict.
        self.tally: Dict[str, Dict[str, int]] = {o["name"]: o["tally"] for o in outcomes}
        #: (reproduction name, configuration label) -> its runs.
        self.runs: Dict[Tuple[str, str], List[Run]] = {
            (o["name"], s["label"]): [Run.from_json(r) for r in s["runs"]]
            for o in outcomes
            for s in o["sets"]
        }
        self._rows = [dict(f, reproduction=o["name"]) for o in outcomes for f in o["figures"]]

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return self.text

    def to_pandas(self) -> pd.DataFrame:
        """One row per figure: ``reproduction``, ``config``, ``metric``,
        ``published`` (NaN for model-only figures), ``modeled``,
        ``tolerance``, ``verdict``, ``judged``, ``unexpected`` (what
        ``--check`` fails on: a miss not declared known, a missing figure,
        or a declared known miss that holds at scale 1)."""
        cols = [
            "reproduction", "config", "metric", "published", "modeled",
            "tolerance", "verdict", "judged", "unexpected",
        ]  # fmt: skip
        return pd.DataFrame(self._rows, columns=cols)


def reproduce(
    name: str,
    scale: float = 1.0,
    iterations: Optional[int] = None,
    seed: int = 1,
    sets: Sequence[str] = (),
    workloads: Sequence[str] = (),
) -> Reproduction:
    """Runs a published experiment (``numalab reproduce NAME``), or every
    one for ``"all"``; ``iterations`` defaults to the reproduction's own.
    ``sets`` are ``--set KEY=VALUE`` (a knob in every configuration after
    its own), ``workloads`` are ``--workload NAME=FILE`` (a workload preset
    replaced by a file of the same name), as on the command line."""
    if isinstance(sets, str) or isinstance(workloads, str):
        raise TypeError("sets and workloads are lists of strings, not one string")
    return Reproduction(
        json.loads(
            _numalab.reproduce_json(
                name, scale, iterations, seed, [str(s) for s in sets], [str(w) for w in workloads]
            )
        )
    )


def reproductions() -> List[Dict[str, Any]]:
    """The reproductions (``numalab list reproductions``), each with its
    machine, workloads, iterations and configurations."""
    return list(json.loads(_numalab.reproductions_json()))


def machines() -> List[Tuple[str, str]]:
    """Machine presets: (name, description), as ``numalab list machines``."""
    return _numalab.machines()


def workloads() -> List[Tuple[str, str]]:
    """Workload presets: (name, description), as ``numalab list workloads``."""
    return _numalab.workloads()


def knobs() -> List[Dict[str, Any]]:
    """Every knob (``numalab list knobs``): name, default, type, unit,
    location, description, source, aliases; and the cgroup files
    (``kind`` ``"cgroup"``, name ``CGROUP:<file>``)."""
    return list(json.loads(_numalab.knobs_json()))


SweepSpec = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def _spec(spec: SweepSpec) -> Tuple[str, str, str]:
    """A sweep spec as (text, format, default name): a path of a TOML
    file, TOML text, or a dict of the same keys. The default name is the
    file's stem (as ``numalab sweep``), else ``sweep``; a ``name`` in the
    spec wins."""
    if isinstance(spec, Mapping):
        return json.dumps(dict(spec)), "json", "sweep"
    if isinstance(spec, os.PathLike) or ("\n" not in spec and spec.endswith(".toml")):
        path = Path(spec)
        try:
            return path.read_text(), "toml", path.stem
        except OSError as e:
            raise ValueError(f"{path}: {e.strerror}") from None
    return str(spec), "toml", "sweep"


def _read_results(csv: str) -> pd.DataFrame:
    """A sweep's results.csv as a DataFrame: text columns stay text (an
    empty ``set`` is ""), an empty score is NaN."""
    text_cols = {c: str for c in ("sweep", "machine", "workload", "set")}
    return pd.read_csv(
        io.StringIO(csv), dtype=text_cols, keep_default_na=False, na_values={"score": [""]}
    )


def _point_task(
    version: str, index: int, machine: str, workload: str, seed: int, set: List[str], scale: float
) -> str:
    """One sweep point on a Dask worker: the record JSON. Refuses to run
    on a worker whose numalab differs from the client's, whose records
    could differ."""
    if version != __version__:
        raise RuntimeError(
            f"numalab {__version__} on this Dask worker but {version} on the client: "
            "install the same numalab wheel on every worker"
        )
    return _numalab.sweep_point(index, machine, workload, seed, set, scale)


def _worker_version() -> str:
    return __version__


def sweep(
    spec: SweepSpec,
    client: Any = None,
    jobs: Optional[int] = None,
    out: Union[str, "os.PathLike[str]", None] = None,
) -> pd.DataFrame:
    """Runs a sweep (the spec of ``numalab sweep SWEEP.toml``: a path, TOML
    text, or a dict) and returns its results table: the columns and point
    order of the CLI's results.csv.

    With ``client`` (a ``dask.distributed.Client``) every point is a task
    on the cluster; every worker needs this same numalab version
    installed. Each point's record is taken from the cluster as soon as
    the point completes, and its task released, so a worker lost later
    holds no finished point: Dask runs again only the points a lost
    worker had not finished. Without ``client`` the points run here on
    ``jobs`` threads (default every core). The table is the same either
    way.

    With ``out`` (a directory, written here on the client) the sweep
    keeps the directory ``numalab sweep -o OUT`` keeps: each point's Run
    record is saved to ``OUT/points/NNNNN.json`` as it arrives, and
    ``results.csv`` and ``results.jsonl`` at the end. A point already
    saved there (with the same machine, workload, seed, settings and
    scale) is not run again, so a stopped sweep resumes where it stopped,
    from Python or the command line.
    """
    text, fmt, stem = _spec(spec)
    found = json.loads(_numalab.sweep_points(text, fmt))
    name = found["name"] or stem
    out_dir = None if out is None else os.fspath(out)
    if client is None:
        return _read_results(_numalab.sweep_local(text, fmt, name, jobs, out_dir))
    versions = client.run(_worker_version)
    wrong = {w: v for w, v in versions.items() if v != __version__}
    if wrong:
        raise RuntimeError(
            f"numalab {__version__} on the client but other versions on workers {wrong}: "
            "install the same numalab wheel on every worker"
        )
    points = found["points"]
    records: List[Optional[str]] = [None] * len(points)
    if out_dir is not None:
        records = list(_numalab.sweep_resume(text, fmt, out_dir))
    todo = [p for p in points if records[p["index"]] is None]
    arrivals = _run_on_cluster(client, todo, found["scale"], name, _digest(text, fmt))
    with contextlib.closing(arrivals):
        for p, record in arrivals:
            if out_dir is not None:
                _numalab.sweep_save(
                    out_dir,
                    p["index"],
                    p["machine"],
                    p["workload"],
                    p["seed"],
                    p["set"],
                    found["scale"],
                    record,
                )
            records[p["index"]] = record
    done = [r for r in records if r is not None]
    return _read_results(_numalab.sweep_table(text, fmt, name, done, out_dir))


def _run_on_cluster(
    client: Any, points: List[Dict[str, Any]], scale: float, name: str, digest: str
) -> Generator[Tuple[Dict[str, Any], str], None, None]:
    """Runs ``points`` as tasks on ``client``'s cluster and yields each
    (point, record JSON) as it completes. Each task is released as soon as
    its record is here: a finished task whose future is held keeps its
    result only on the worker that ran it, and Dask would run the point
    again if that worker died before the end of the sweep. On an error
    the remaining tasks are cancelled and the error raised."""
    from distributed import as_completed

    pending: Dict[str, Tuple[Dict[str, Any], Any]] = {}
    for p in points:
        future = client.submit(
            _point_task,
            __version__,
            p["index"],
            p["machine"],
            p["workload"],
            p["seed"],
            p["set"],
            scale,
            key=f"numalab-{name}-{p['index']:05}-{digest}",
        )
        pending[future.key] = (p, future)
    completed = as_completed([f for _, f in pending.values()], loop=client.loop, with_results=True)
    try:
        for future, record in completed:
            p, _ = pending.pop(future.key)
            future.release()
            yield p, record
    finally:
        if pending:
            client.cancel([f for _, f in pending.values()])


def _digest(text: str, fmt: str) -> str:
    """A short digest of a spec: task keys of different sweeps differ."""
    import hashlib

    return hashlib.sha256((fmt + "\0" + text).encode()).hexdigest()[:12]
