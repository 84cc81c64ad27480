"""Sweeps from Python: locally and on a Dask LocalCluster on loopback,
which must give the same table as each other and as the CLI's
results.csv (when a built numalab binary is found)."""

import subprocess

import pandas as pd
import pytest

import numalab

SPEC = """\
name = "py-test"
scale = 0.05
machines = ["tiny-2n"]
workloads = ["numa02", "numa01"]
seeds = [1, 2]
[knobs]
"kernel.numa_balancing" = ["0", "1"]
# The runs are short: the first scan comes at 50 ms, not 1 s.
"numa_balancing.scan_delay_ms" = ["50"]
"""
OFF = "kernel.numa_balancing=0 numa_balancing.scan_delay_ms=50"
ON = "kernel.numa_balancing=1 numa_balancing.scan_delay_ms=50"


def test_local_sweep_table():
    df = numalab.sweep(SPEC, jobs=2)
    assert len(df) == 8
    assert list(df.point) == list(range(8))
    assert list(df.columns[:6]) == ["sweep", "point", "machine", "workload", "seed", "set"]
    assert set(df.sweep) == {"py-test"}
    assert df.loc[0, "set"] == OFF
    # Balancing off never scans; on does.
    off = df[df.set == OFF]
    on = df[df.set == ON]
    assert len(off) == len(on) == 4
    assert (off.numa_pte_updates == 0).all()
    assert (on.numa_pte_updates > 0).any()
    # The table does not depend on the number of threads.
    pd.testing.assert_frame_equal(df, numalab.sweep(SPEC, jobs=1))


def test_spec_forms_agree(tmp_path):
    f = tmp_path / "grid.toml"
    f.write_text(SPEC.replace('name = "py-test"\n', ""))
    from_file = numalab.sweep(f, jobs=1)
    # Without a name the file's stem names the sweep, as the CLI does.
    assert set(from_file.sweep) == {"grid"}
    as_dict = {
        "name": "grid",
        "scale": 0.05,
        "machines": ["tiny-2n"],
        "workloads": ["numa02", "numa01"],
        "seeds": [1, 2],
        "knobs": {"kernel.numa_balancing": ["0", "1"], "numa_balancing.scan_delay_ms": ["50"]},
    }
    pd.testing.assert_frame_equal(from_file, numalab.sweep(as_dict, jobs=1))
    pd.testing.assert_frame_equal(from_file, numalab.sweep(str(f), jobs=1))


def test_list_sweep_and_bad_specs():
    spec = {
        "scale": 0.02,
        "points": [
            {"machine": "tiny-2n", "workload": "numa02", "set": ["kernel.numa_balancing=0"]},
            {"machine": "tiny-2n", "workload": "numa01", "seed": 3},
        ],
    }
    df = numalab.sweep(spec)
    assert list(df.workload) == ["numa02", "numa01"] and list(df.seed) == [1, 3]
    assert df.loc[1, "set"] == ""
    with pytest.raises(ValueError, match="not both"):
        numalab.sweep({**spec, "machines": ["tiny-2n"], "workloads": ["numa02"]})
    with pytest.raises(ValueError, match="bogus"):
        numalab.sweep({"bogus": 1})
    with pytest.raises(ValueError, match="point 0"):
        numalab.sweep({"machines": ["nope"], "workloads": ["numa02"]})
    with pytest.raises(ValueError, match="missing.toml"):
        numalab.sweep("missing.toml")


def test_local_sweep_equals_the_cli_results_csv(tmp_path, numalab_cli):
    cli = numalab_cli
    f = tmp_path / "s.toml"
    f.write_text(SPEC)
    out = tmp_path / "out"
    subprocess.run([cli, "sweep", str(f), "-o", str(out), "-j", "2"], check=True)
    cli_df = numalab._read_results((out / "results.csv").read_text())
    pd.testing.assert_frame_equal(numalab.sweep(f, jobs=2), cli_df)


def test_dask_local_cluster_gives_the_local_table():
    distributed = pytest.importorskip("distributed")
    # A worker process on loopback: it imports the installed numalab and
    # gets each point's task over TCP, as a remote worker would.
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster, distributed.Client(cluster) as client:
        on_dask = numalab.sweep(SPEC, client=client)
        # Bad input is the same ValueError through the cluster.
        with pytest.raises(ValueError, match="point 0"):
            numalab.sweep({"machines": ["nope"], "workloads": ["numa02"]}, client=client)
    pd.testing.assert_frame_equal(on_dask, numalab.sweep(SPEC))


def test_a_worker_of_another_version_refuses():
    with pytest.raises(RuntimeError, match="same numalab wheel"):
        numalab._point_task("0.0.0-other", 0, "tiny-2n", "numa02", 1, [], 0.02)
