"""The Python examples of docs/python.md, run as written, with the claims
the text makes about their output checked (``CLAIMS``).

Conventions of the Markdown, which readers see as HTML comments:

- every ```python block runs, in a directory and namespace of its own;
- a ```toml block after ``<!-- file: NAME -->`` is the file NAME the
  examples read: it is written into each example's directory first;
- a block after ``<!-- not run: REASON -->`` (Slurm, Kubernetes) is only
  compiled;
- ``tcp://SCHEDULER:8786``, the text's stand-in for a scheduler's address,
  is replaced by the address of a scheduler with two workers started for
  the test as separate ``dask`` processes (cli_cluster.py).

Matplotlib draws with its Agg backend (no display). Left out: the sh
blocks (the docs runner's), and the claims of prose that names no example.
"""

from __future__ import annotations

import re
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import pandas as pd
import pytest

import numalab
from built_cli import ROOT, find_cli

DOC = ROOT / "docs" / "python.md"
PLACEHOLDER = "tcp://SCHEDULER:8786"


@dataclass
class Block:
    """A fenced block of the doc."""

    lang: str
    code: str
    line: int  # of the opening fence, 1-based
    marker: str  # the HTML comment on the line before the fence, or ""


def _blocks(text: str) -> List[Block]:
    """The fenced blocks of Markdown ``text``, dedented to their fence."""
    out: List[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        indent, lang, start = m.group(1), m.group(2), i
        i += 1
        body = []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        prev = next((lines[j].strip() for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        marker = prev if prev.startswith("<!--") else ""
        out.append(Block(lang, textwrap.dedent("\n".join(body)) + "\n", start + 1, marker))
        i += 1
    return out


BLOCKS = _blocks(DOC.read_text())
PYTHON = [b for b in BLOCKS if b.lang == "python"]


def _files() -> Dict[str, str]:
    """The files the doc gives (``<!-- file: NAME -->`` blocks)."""
    files = {}
    for b in BLOCKS:
        m = re.match(r"<!--\s*file:\s*(\S+)\s*-->", b.marker)
        if m:
            files[m.group(1)] = b.code
    return files


# -- The text's claims, each about the example whose code contains the key.


def _compare_example(ns: Dict[str, Any], here: Path) -> None:
    off, on = ns["off"], ns["on"]
    # "about 14 modeled seconds", "the run ends sooner"
    assert 12 < on.elapsed_s < off.elapsed_s < 16
    # "Balancing off scans nothing and migrates no page"
    assert off.vmstat["numa_pte_updates"] == 0 and off.vmstat["numa_pages_migrated"] == 0
    # "on, the scanner marks pages, hinting faults migrate them (over a
    # hundred thousand here)"
    assert on.vmstat["numa_pte_updates"] > 0
    assert on.vmstat["numa_pages_migrated"] > 100_000
    assert (here / "local-share.png").stat().st_size > 0
    # "at scale=0.1 this run ends before any scan and off and on come out
    # identical"
    small = [
        numalab.run("spr-4n", "numa01-threadlocal", set=s, scale=0.1)
        for s in (["kernel.numa_balancing=0"], [])
    ]
    assert small[1].vmstat["numa_pte_updates"] == 0
    assert small[0].elapsed_s == small[1].elapsed_s
    assert small[0].vmstat == small[1].vmstat
    # "lower the delay (numa_balancing.scan_delay_ms=100)": then it scans.
    early = numalab.run(
        "spr-4n", "numa01-threadlocal", set=["numa_balancing.scan_delay_ms=100"], scale=0.1
    )
    assert early.vmstat["numa_pte_updates"] > 0


def _local_sweep_example(ns: Dict[str, Any], here: Path) -> None:
    df = ns["df"]
    off = df[df.set == "kernel.numa_balancing=0"].set_index("seed")
    on = df[df.set == "kernel.numa_balancing=1"].set_index("seed")
    assert list(off.index) == list(on.index) == [1, 2, 3]
    # "every seed migrates pages and finishes in about two thirds of the
    # time (8 modeled seconds against 12)"
    assert (off.numa_pages_migrated == 0).all() and (on.numa_pages_migrated > 0).all()
    assert (on.elapsed_s < off.elapsed_s).all()
    assert round(on.elapsed_s.mean()) == 8 and round(off.elapsed_s.mean()) == 12
    # "byte for byte the command line's"
    cli = find_cli()
    if cli is not None:
        subprocess.run(
            [cli, "sweep", "balancing.toml", "-o", "by-cli"],
            cwd=here,
            check=True,
            stderr=subprocess.DEVNULL,
        )
        assert _tree(here / "balancing.sweep") == _tree(here / "by-cli")


def _cluster_example(ns: Dict[str, Any], here: Path) -> None:
    # "the table, and the out directory, are the same as a local sweep's"
    local = here / "local.sweep"
    pd.testing.assert_frame_equal(ns["df"], numalab.sweep("balancing.toml", out=local))
    assert _tree(here / "balancing.sweep") == _tree(local)


CLAIMS: Dict[str, Callable[[Dict[str, Any], Path], None]] = {
    '"numa01-threadlocal"': _compare_example,
    'numalab.sweep("balancing.toml", out=': _local_sweep_example,
    PLACEHOLDER: _cluster_example,
}


def _tree(d: Path) -> Dict[str, bytes]:
    return {str(f.relative_to(d)): f.read_bytes() for f in sorted(d.rglob("*")) if f.is_file()}


def _claims_of(block: Block) -> Optional[Callable[[Dict[str, Any], Path], None]]:
    found = [check for key, check in CLAIMS.items() if key in block.code]
    assert len(found) <= 1, f"python.md:{block.line}: more than one claim matches"
    return found[0] if found else None


def test_every_claim_has_its_example():
    runnable = [b for b in PYTHON if not b.marker.startswith("<!-- not run")]
    for key in CLAIMS:
        where = [b.line for b in runnable if key in b.code]
        assert len(where) == 1, f"claim key {key!r} is in the examples at lines {where}"


@pytest.mark.parametrize("block", PYTHON, ids=[f"python.md:{b.line}" for b in PYTHON])
def test_example(block: Block, tmp_path, monkeypatch, request):
    code = compile(block.code, f"docs/python.md:{block.line}", "exec")
    if block.marker.startswith("<!-- not run"):
        return  # it compiles; running it needs what the marker names
    if ".plot(" in block.code:
        pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
        monkeypatch.setenv("MPLBACKEND", "Agg")
    if PLACEHOLDER in block.code:
        pytest.importorskip("distributed")
        cluster = request.getfixturevalue("cli_cluster")
        code = compile(
            block.code.replace(PLACEHOLDER, cluster.address),
            f"docs/python.md:{block.line}",
            "exec",
        )
    for name, text in _files().items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    ns: Dict[str, Any] = {"__name__": "__docs__"}
    try:
        exec(code, ns)
        check = _claims_of(block)
        if check is not None:
            check(ns, tmp_path)
    finally:
        client = ns.get("client")
        if client is not None:
            client.close()
