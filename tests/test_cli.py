"""The real entry point, through a subprocess: release from files, bad input, reproduce."""

import json
import subprocess
import sys

import numpy as np
import pytest

from manifold_dp import KendallShape2D
from manifold_dp.data import eigen_spd, sphere_cap


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "manifold_dp.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600)


def release(path, manifold, *extra):
    return run("release", path, "--manifold", manifold, *extra)


def test_release_sphere_npy_csv_json(tmp_path):
    X = sphere_cap(50, rng=1)
    np.save(tmp_path / "x.npy", X)
    np.savetxt(tmp_path / "x.csv", X, delimiter=",")
    (tmp_path / "x.json").write_text(json.dumps({"records": X.tolist()}))
    points = []
    for name in ("x.npy", "x.csv", "x.json"):
        res = release(tmp_path / name, "sphere", "--center", "origin", "--radius", "0.4", "--epsilon", "1", "--seed", "3")
        assert res.returncode == 0, res.stderr
        out = json.loads(res.stdout)
        assert np.isclose(np.linalg.norm(out["point"]), 1.0)
        assert out["certificate"]["mechanism"] == "Riemannian Laplace"
        points.append(out["point"])
    assert np.allclose(points[0], points[1]) and np.allclose(points[0], points[2])


@pytest.mark.parametrize("manifold,mechanism,extra", [
    ("spd-ai", "laplace", []), ("spd-ai", "kng", []), ("spd-le", "tangent_gaussian", ["--delta", "1e-6"]),
    ("hyperbolic", "laplace", []), ("kendall2d", "kng", []), ("euclidean", "ambient_gaussian", ["--delta", "1e-5"]),
])
def test_release_each_manifold(tmp_path, manifold, mechanism, extra):
    rng = np.random.default_rng(2)
    if manifold.startswith("spd"):
        X, radius = eigen_spd(40, 3, rng=rng).reshape(40, 9), "0.5"
    elif manifold == "hyperbolic":
        from manifold_dp import Hyperbolic
        X, radius = Hyperbolic(2).random_point(Hyperbolic(2).origin, 0.5, size=40, rng=rng), "1.0"
    elif manifold == "kendall2d":
        k = KendallShape2D(5)
        X, radius = k.to_landmarks(k.random_point(k.origin, 0.1, size=40, rng=rng)).reshape(40, 10) * 7 + 3, "0.3"
    else:
        X, radius = rng.normal(size=(40, 3)), "2.0"
    np.savetxt(tmp_path / "d.csv", X, delimiter=",")
    res = release(tmp_path / "d.csv", manifold, "--center", "origin", "--radius", radius, "--epsilon", "2", "--mechanism", mechanism, "--seed", "1", *extra)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert "point" in out and out["certificate"]["epsilon"] == 2.0


def test_release_writes_nothing_on_error(tmp_path):
    X = sphere_cap(10, rng=1)
    np.save(tmp_path / "x.npy", X)
    res = release(tmp_path / "x.npy", "sphere", "--center", "origin", "--radius", "0.4", "--epsilon", "-1", "--output", tmp_path / "o.json")
    assert res.returncode == 2 and "epsilon" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o.json").exists()


def test_bad_files_give_one_clear_line(tmp_path):
    (tmp_path / "bad.csv").write_text("1,2,3\nsecret-value,5,6\n")
    res = release(tmp_path / "bad.csv", "sphere", "--center", "origin", "--radius", "0.4", "--epsilon", "1")
    assert res.returncode == 2 and "secret" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    (tmp_path / "bad.json").write_text("{not json")
    assert release(tmp_path / "bad.json", "sphere", "--center", "origin", "--radius", "0.4", "--epsilon", "1").returncode == 2
    (tmp_path / "x.txt").write_text("1,2,3")
    res = release(tmp_path / "x.txt", "sphere", "--center", "origin", "--radius", "0.4", "--epsilon", "1")
    assert res.returncode == 2 and "unsupported" in res.stderr
    res = release(tmp_path / "missing.npy", "sphere", "--center", "origin", "--radius", "0.4", "--epsilon", "1")
    assert res.returncode == 2 and "not found" in res.stderr


def test_wrong_shapes_and_nan_rows(tmp_path):
    np.savetxt(tmp_path / "spd.csv", np.ones((5, 8)), delimiter=",")
    res = release(tmp_path / "spd.csv", "spd-ai", "--center", "origin", "--radius", "1", "--epsilon", "1")
    assert res.returncode == 2 and "k*k" in res.stderr
    X = sphere_cap(20, rng=4)
    X[3] = np.nan
    np.savetxt(tmp_path / "nan.csv", X, delimiter=",")
    res = release(tmp_path / "nan.csv", "sphere", "--center", "origin", "--radius", "0.4", "--epsilon", "1")
    assert res.returncode == 0, res.stderr  # NaN rows are replaced by the centre, data-independently
    res = release(tmp_path / "nan.csv", "sphere", "--center", "1,2", "--radius", "0.4", "--epsilon", "1")
    assert res.returncode == 2 and "--center" in res.stderr


def test_missing_arguments():
    res = run("release")
    assert res.returncode == 2 and "required" in res.stderr


def test_reproduce_one_experiment_writes_png_and_report(tmp_path):
    res = run("reproduce", "R21-F2", "--out", tmp_path / "out")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out" / "r21_f2_log_spread.png").stat().st_size > 10_000
    md = (tmp_path / "out" / "report.md").read_text()
    assert "R21-F2" in md and "Paper:" in md and "Ours:" in md
    assert "data:image/png;base64" in (tmp_path / "out" / "report.html").read_text()
    assert run("reproduce", "nope", "--out", tmp_path / "o2").returncode == 2
