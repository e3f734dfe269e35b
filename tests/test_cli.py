"""The real entry point, through a subprocess: release from files, bad input, reproduce."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from manifold_dp import KendallShape2D
from manifold_dp.data import eigen_spd, sphere_cap


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "manifold_dp.cli", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600)


def release(path, manifold, *extra):
    return run("release", path, "--manifold", manifold, *extra)


def run_patched(setup, *args):
    """The CLI in a subprocess after ``setup`` (Python source) has run, to simulate a library
    failure or a missing optional package."""
    code = "import sys\nimport numpy as np\nimport manifold_dp.cli as cli\n" + textwrap.dedent(setup) + "\nsys.exit(cli.main(sys.argv[1:]))\n"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=600)


SECRET = "7311"  # a marker placed in data files: it must never reach stderr
SPHERE_ARGS = ("--manifold", "sphere", "--center", "origin", "--radius", "0.4", "--epsilon", "1")


def assert_one_line_error(res, *fragments):
    """Exit status 2, nothing on stdout, one stderr line ``manifold-dp: error: ...`` with no
    traceback and no data marker."""
    lines = res.stderr.splitlines()
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    assert len(lines) == 1 and lines[0].startswith("manifold-dp: error:"), res.stderr
    assert "Traceback" not in res.stderr and SECRET not in res.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture
def sphere_npy(tmp_path):
    X = sphere_cap(30, rng=1)
    X[0] = [0.7311, 0.6822, np.sqrt(1 - 0.7311**2 - 0.6822**2)]
    np.save(tmp_path / "x.npy", X)
    return tmp_path / "x.npy"


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
        assert np.isclose(np.linalg.norm(out["value"]), 1.0)
        assert out["certificate"]["mechanism"] == "laplace"
        points.append(out["value"])
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
    assert "value" in out and out["certificate"]["epsilon"] == 2.0


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
    assert_one_line_error(res, "required", "manifold-dp release --help")  # argparse errors: one line too
    assert_one_line_error(run("release", "x.npy", "--manifold", "torus", "--center", "origin", "--radius", "1", "--epsilon", "1"), "--manifold")
    assert_one_line_error(run("frobnicate"), "invalid choice")


def test_reproduce_one_experiment_writes_png_and_report(tmp_path):
    res = run("reproduce", "R21-F2", "--out", tmp_path / "out")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out" / "r21_f2_log_spread.png").stat().st_size > 10_000
    md = (tmp_path / "out" / "report.md").read_text()
    assert "R21-F2" in md and "Paper:" in md and "Ours:" in md
    assert "data:image/png;base64" in (tmp_path / "out" / "report.html").read_text()
    assert run("reproduce", "nope", "--out", tmp_path / "o2").returncode == 2


def test_version():
    from manifold_dp import __version__
    res = run("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"manifold-dp {__version__}" and res.stderr == ""


def test_npz_is_refused_with_a_hint(tmp_path):
    np.savez(tmp_path / "x.npz", records=sphere_cap(10, rng=1))
    res = release(tmp_path / "x.npz", "sphere", *SPHERE_ARGS[2:])
    assert_one_line_error(res, "unsupported data format '.npz'", "use .npy, .csv or .json", "numpy.save")
    (tmp_path / "disguised.npy").write_bytes((tmp_path / "x.npz").read_bytes())  # an archive named .npy
    assert_one_line_error(release(tmp_path / "disguised.npy", "sphere", *SPHERE_ARGS[2:]), "disguised.npy")


def test_json_integer_too_large_for_float(tmp_path):
    (tmp_path / "big.json").write_text("[[" + SECRET * 100 + ", 0, 0], [0, 0, 1]]")  # 400 digits: int → float overflows
    assert_one_line_error(release(tmp_path / "big.json", "sphere", *SPHERE_ARGS[2:]), "big.json", "too large for float64")
    (tmp_path / "bad.json").write_text('[[0, 0, 1],\n [0, 1, "' + SECRET + '"')
    assert_one_line_error(release(tmp_path / "bad.json", "sphere", *SPHERE_ARGS[2:]), "bad.json")


def test_csv_errors_name_the_line_not_the_contents(tmp_path):
    (tmp_path / "header.csv").write_text(f"x{SECRET},y,z\n1,0,0\n0,1,0\n")
    assert_one_line_error(release(tmp_path / "header.csv", "sphere", *SPHERE_ARGS[2:]),
                          "line 1, column 1 is not a number", "remove any header row")
    (tmp_path / "cell.csv").write_text(f"1,0,0\n\n# a comment\n0,{SECRET}e,0\n")
    assert_one_line_error(release(tmp_path / "cell.csv", "sphere", *SPHERE_ARGS[2:]), "line 4, column 2")
    (tmp_path / "ragged.csv").write_text(f"1,0,0\n0,1,0\n0.{SECRET},1\n")
    assert_one_line_error(release(tmp_path / "ragged.csv", "sphere", *SPHERE_ARGS[2:]), "line 3 has 2 values")


FAIL_RELEASE = """
    def failing(*args, **kwargs):
        raise {error}
    cli.private_frechet_mean = failing
"""


@pytest.mark.parametrize("error,fragment", [
    ('RuntimeError("the Fréchet mean could not be certified to the required accuracy; nothing was released")', "could not be certified"),
    ('RuntimeError("rejection sampler made no progress: its envelope is broken")', "rejection sampler made no progress"),
    ('OverflowError("math range error")', "numeric overflow: math range error"),
    ("MemoryError()", "out of memory"),
    ('TypeError("restrict must be True or False, got str")', "restrict must be"),
])
def test_library_errors_are_one_line(sphere_npy, error, fragment):
    res = run_patched(FAIL_RELEASE.format(error=error), "release", sphere_npy, *SPHERE_ARGS)
    assert_one_line_error(res, fragment)


def test_numpy_and_library_warnings_become_one_line_each(sphere_npy):
    setup = """
        import warnings
        real = cli.private_frechet_mean
        def noisy(*args, **kwargs):
            np.exp(np.array([1000.0])), np.sqrt(np.array([-1.0])), np.array([1.0]) / 0.0  # numpy floating warnings
            warnings.warn("frechet_mean did not reach tol=1e-12\\nin max_iter=10 steps", RuntimeWarning)
            warnings.warn("frechet_mean did not reach tol=1e-12\\nin max_iter=10 steps", RuntimeWarning)
            return real(*args, **kwargs)
        cli.private_frechet_mean = noisy
    """
    res = run_patched(setup, "release", sphere_npy, *SPHERE_ARGS, "--seed", "1")
    assert res.returncode == 0, res.stderr
    assert "value" in json.loads(res.stdout)
    assert res.stderr.splitlines() == ["manifold-dp: warning: frechet_mean did not reach tol=1e-12 in max_iter=10 steps"]


def test_warnings_are_dropped_when_the_release_fails(sphere_npy):
    setup = """
        import warnings
        def failing(*args, **kwargs):
            np.log(np.zeros(1))
            warnings.warn("frechet_mean did not reach tol", RuntimeWarning)
            raise RuntimeError("the Fréchet mean could not be certified to the required accuracy; nothing was released")
        cli.private_frechet_mean = failing
    """
    assert_one_line_error(run_patched(setup, "release", sphere_npy, *SPHERE_ARGS), "could not be certified")


def test_output_is_checked_before_the_release(sphere_npy, tmp_path):
    setup = FAIL_RELEASE.format(error='RuntimeError("the release was computed")')
    res = run_patched(setup, "release", sphere_npy, *SPHERE_ARGS, "--output", tmp_path / "nodir" / "x.json")
    assert_one_line_error(res, "--output directory does not exist")
    assert not (tmp_path / "nodir").exists()
    res = run_patched(setup, "release", sphere_npy, *SPHERE_ARGS, "--output", tmp_path)
    assert_one_line_error(res, "--output", "is a directory")
    res = run_patched(setup, "release", tmp_path / "missing.npy", *SPHERE_ARGS, "--output", tmp_path / "nodir" / "x.json")
    assert_one_line_error(res, "--output")  # the output is checked even before the data are read


def test_output_is_written_whole_or_not_at_all(sphere_npy, tmp_path):
    out = tmp_path / "out" / "release.json"
    out.parent.mkdir()
    res = run("release", sphere_npy, *SPHERE_ARGS, "--seed", "2", "--output", out)
    assert res.returncode == 0 and res.stdout == "", res.stderr
    assert "value" in json.loads(out.read_text())
    out.write_text("previous\n")
    setup = FAIL_RELEASE.format(error='RuntimeError("rejection sampler made no progress: its envelope is broken")')
    assert_one_line_error(run_patched(setup, "release", sphere_npy, *SPHERE_ARGS, "--output", out), "no progress")
    assert out.read_text() == "previous\n"  # an error leaves an existing file untouched
    assert sorted(p.name for p in out.parent.iterdir()) == ["release.json"]  # and no temporary files


@pytest.mark.parametrize("center,fragment", [
    ("north", "--center must be 'origin'"), ("1,2,x", "--center must be 'origin'"), ("", "--center must be 'origin'"),
    ("missing.npy", "--center file not found"), ("strings.npy", "--center must be 'origin'"),
    ("archive.npy", "--center must be 'origin'"), ("1,0", "--center must have 3 numbers"),
])
def test_bad_center_names_the_option(sphere_npy, tmp_path, center, fragment):
    np.save(tmp_path / "strings.npy", np.array([f"s{SECRET}", "0", "1"]))
    np.savez(tmp_path / "archive.npz", a=np.array([0.0, 0.0, 1.0]))
    (tmp_path / "archive.npy").write_bytes((tmp_path / "archive.npz").read_bytes())
    res = run("release", sphere_npy, "--manifold", "sphere", "--center", center, "--radius", "0.4", "--epsilon", "1", cwd=tmp_path)
    assert_one_line_error(res, fragment)


@pytest.mark.parametrize("args,fragment", [
    (["--samples", "-5"], "--samples: must be an integer >= 100"), (["--samples", "0"], "halves"),
    (["--samples", "1"], "--samples"), (["--samples", "99"], "--samples"), (["--samples", "1e6"], "--samples"),
    (["--seed", "-1"], "--seed: must be an integer >= 0"), (["--seed", "x"], "--seed"),
])
def test_audit_arguments_are_validated_before_any_output(args, fragment):
    assert_one_line_error(run("audit", "laplace-euclidean", *args), fragment)


def test_release_and_reproduce_seeds_are_validated():
    assert_one_line_error(run("release", "x.npy", *SPHERE_ARGS, "--seed", "-1"), "--seed")
    assert_one_line_error(run("reproduce", "R21-F2", "--seed", "-3"), "--seed")


def test_reproduce_without_the_experiments_extra(tmp_path):
    res = run_patched("sys.modules['matplotlib'] = None  # as if not installed", "reproduce", "R21-F2", "--out", tmp_path / "o")
    assert_one_line_error(res, 'pip install "manifold_dp[experiments]"', "matplotlib")
    assert not (tmp_path / "o").exists()
