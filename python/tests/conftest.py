"""Fixtures shared by the Python tests: the built ``numalab`` binary
(built_cli.py) and a Dask cluster of ``dask`` CLI processes
(cli_cluster.py)."""

import pytest

from built_cli import find_cli


@pytest.fixture
def numalab_cli() -> str:
    """The numalab binary; skips the test when none is built (set
    NUMALAB_BIN)."""
    cli = find_cli()
    if cli is None:
        pytest.skip("no built numalab binary (set NUMALAB_BIN)")
    return cli


@pytest.fixture
def cli_cluster(tmp_path):
    """A scheduler and the workers ``survivor`` and ``victim`` (one thread
    each), separate ``dask`` CLI processes on 127.0.0.1 (cli_cluster.py);
    all ended after the test, whatever it did to them."""
    pytest.importorskip("distributed")
    from cli_cluster import Cluster

    root = tmp_path / "cluster"
    root.mkdir()
    cluster = Cluster(root)
    try:
        cluster.start_scheduler()
        for name in ("survivor", "victim"):
            cluster.start_worker(name)
        yield cluster
    finally:
        cluster.stop()
