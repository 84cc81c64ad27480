"""Type stubs of the Rust extension ``numalab._numalab``.

A thin layer over the numalab crate: structured results cross as JSON
text, which ``numalab/__init__.py`` parses. Every function raises
``ValueError`` with the command line's one-line message on bad input.
"""

from typing import List, Optional, Tuple

__version__: str

def run(machine: str, workload: str, set: List[str], seed: int, scale: float) -> str:
    """One model run; the Run record JSON."""

def run_summary(record: str) -> str:
    """The summary ``numalab run`` prints of a Run record JSON."""

def compare_runs(
    columns: List[Tuple[str, List[str]]], cgroup: Optional[str], force: bool
) -> Tuple[str, str, Optional[str]]:
    """(table text, CSV, warning or None) of columns (label, [Run JSON])."""

def reproduce_json(name: str, scale: float, iterations: Optional[int], seed: int) -> str:
    """JSON {"text", "outcomes": [{"name", "text", "tally", "figures", "sets"}]}."""

def reproductions_json() -> str:
    """JSON list of the reproductions."""

def machines() -> List[Tuple[str, str]]:
    """(name, description) of every machine preset."""

def workloads() -> List[Tuple[str, str]]:
    """(name, description) of every workload preset."""

def knobs_json() -> str:
    """JSON list of the knobs and cgroup files."""

def sweep_points(text: str, fmt: str) -> str:
    """JSON {"name", "scale", "points": [...]} of a checked sweep spec."""

def sweep_point(
    index: int, machine: str, workload: str, seed: int, set: List[str], scale: float
) -> str:
    """One sweep point's Run record JSON."""

def sweep_resume(text: str, fmt: str, out: str) -> List[Optional[str]]:
    """Creates sweep directory ``out``; per point, the record JSON saved there (None: to run)."""

def sweep_save(
    out: str,
    index: int,
    machine: str,
    workload: str,
    seed: int,
    set: List[str],
    scale: float,
    record: str,
) -> None:
    """Saves one point's record JSON to its file in sweep directory ``out``."""

def sweep_table(text: str, fmt: str, name: str, records: List[str], out: Optional[str]) -> str:
    """The results.csv of a sweep from its records in point order (also written to ``out``)."""

def sweep_local(text: str, fmt: str, name: str, jobs: Optional[int], out: Optional[str]) -> str:
    """A whole sweep run here (resuming and saving to ``out``); its results.csv."""
