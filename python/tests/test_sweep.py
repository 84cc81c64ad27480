"""Sweeps from Python: locally and on a Dask LocalCluster on loopback,
which must give the same table as each other and as the CLI's
results.csv (when a built numalab binary is found)."""

import json
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


def _stats(points):
    return {f.name: (f.stat().st_ino, f.stat().st_mtime_ns) for f in points.iterdir()}


def test_a_local_sweep_keeps_and_resumes_the_cli_directory(tmp_path, numalab_cli):
    out = tmp_path / "out"
    df = numalab.sweep(SPEC, jobs=2, out=out)
    points = out / "points"
    assert sorted(f.name for f in points.iterdir()) == [f"{i:05}.json" for i in range(8)]
    assert (out / "results.csv").read_text().count("\n") == 9
    assert len((out / "results.jsonl").read_text().splitlines()) == 8
    # Run again: every point is done, none is run or rewritten.
    before = _stats(points)
    pd.testing.assert_frame_equal(numalab.sweep(SPEC, out=out), df)
    assert _stats(points) == before
    # A lost point, and one whose file holds another point's record, are
    # run again; the others are kept.
    (points / "00003.json").unlink()
    (points / "00005.json").write_text((points / "00004.json").read_text())
    pd.testing.assert_frame_equal(numalab.sweep(SPEC, out=out), df)
    after = _stats(points)
    assert {n for n in after if after[n] != before.get(n)} == {"00003.json", "00005.json"}
    # The command line resumes a directory the package wrote, and the
    # other way round, to the same bytes.
    f = tmp_path / "py-test.toml"
    f.write_text(SPEC)
    (points / "00006.json").unlink()
    run = subprocess.run(
        [numalab_cli, "sweep", str(f), "-o", str(out)], check=True, capture_output=True, text=True
    )
    assert "8 points, 7 done before, 1 to run" in run.stderr
    cli_out = tmp_path / "cli"
    subprocess.run([numalab_cli, "sweep", str(f), "-o", str(cli_out)], check=True)
    (cli_out / "points" / "00001.json").unlink()
    pd.testing.assert_frame_equal(numalab.sweep(SPEC, out=cli_out), df)
    tree = {g.relative_to(out): g.read_bytes() for g in sorted(out.rglob("*")) if g.is_file()}
    assert tree == {
        g.relative_to(cli_out): g.read_bytes() for g in sorted(cli_out.rglob("*")) if g.is_file()
    }


def test_a_record_of_another_point_is_not_saved(tmp_path):
    found = json.loads(numalab._numalab.sweep_points(SPEC, "toml"))
    p0, p1 = found["points"][:2]
    record = numalab._numalab.sweep_point(
        p1["index"], p1["machine"], p1["workload"], p1["seed"], p1["set"], found["scale"]
    )
    args = (p0["machine"], p0["workload"], p0["seed"], p0["set"], found["scale"], record)
    with pytest.raises(ValueError, match="point 0: the record is not this point's"):
        numalab._numalab.sweep_save(str(tmp_path), 0, *args)
    assert not (tmp_path / "points" / "00000.json").exists()


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
