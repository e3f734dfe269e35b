"""The command line, in process through ``main([...])`` (one subprocess, for a closed stdout pipe):
releases from files, help and defaults, the mechanism table, explicit sizes, one-line errors."""

import argparse
import importlib.util
import io
import json
import os
import subprocess
import sys
from contextlib import nullcontext

import numpy as np
import pytest

from manifold_dp import Hyperbolic, KendallShape2D, __version__, cli
from manifold_dp.data import eigen_spd, sphere_cap
from manifold_dp.manifolds import REGISTRY
from manifold_dp.privacy.release import MECHANISMS, check_public

SECRET = "7311"  # a marker placed in data files and exception messages: it must never reach stderr
SPHERE_ARGS = ("--manifold", "sphere", "--center", "origin", "--radius", "0.4", "--epsilon", "1")



def release(run, path, manifold, *extra):
    return run("release", path, "--manifold", manifold, *extra)


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


def fail_with(monkeypatch, error):
    """Make the release raise ``error`` (as the library would on a failure)."""
    def failing(*args, **kwargs):
        raise error
    monkeypatch.setattr(cli, "release_statistic", failing)


def subparsers(parser):
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


@pytest.fixture
def sphere_npy(tmp_path):
    X = sphere_cap(30, rng=1)
    X[0] = [0.7311, 0.6822, np.sqrt(1 - 0.7311**2 - 0.6822**2)]
    np.save(tmp_path / "x.npy", X)
    return tmp_path / "x.npy"


def kendall_landmarks(n, rng):
    k = KendallShape2D(5)
    return k.to_landmarks(k.random_point(k.origin, 0.1, size=n, rng=rng)) * 7 + 3  # (n, 5, 2)


# --- releases ---------------------------------------------------------------------------------

def test_release_sphere_npy_csv_json(run, tmp_path):
    X = sphere_cap(50, rng=1)
    np.save(tmp_path / "x.npy", X)
    np.savetxt(tmp_path / "x.csv", X, delimiter=",")
    (tmp_path / "x.json").write_text(json.dumps({"records": X.tolist()}))
    points = []
    for name in ("x.npy", "x.csv", "x.json"):
        res = run("release", tmp_path / name, *SPHERE_ARGS, "--seed", "3")
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
def test_release_each_manifold(run, tmp_path, manifold, mechanism, extra):
    rng = np.random.default_rng(2)
    if manifold.startswith("spd"):
        X, radius = eigen_spd(40, 3, rng=rng).reshape(40, 9), "0.5"
    elif manifold == "hyperbolic":
        X, radius = Hyperbolic(2).random_point(Hyperbolic(2).origin, 0.5, size=40, rng=rng), "1.0"
    elif manifold == "kendall2d":
        X, radius = kendall_landmarks(40, rng).reshape(40, 10), "0.3"
    else:
        X, radius = rng.normal(size=(40, 3)), "2.0"
    np.savetxt(tmp_path / "d.csv", X, delimiter=",")
    res = release(run, tmp_path / "d.csv", manifold, "--center", "origin", "--radius", radius, "--epsilon", "2",
                  "--mechanism", mechanism, "--seed", "1", *extra)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert "value" in out and out["certificate"]["epsilon"] == 2.0


@pytest.mark.parametrize("statistic,extra", [("variance", ()), ("median", ()),
                                             ("tangent-pca", ("--delta", "1e-6", "--components", "2"))])
def test_release_other_statistics_equal_the_api(run, sphere_npy, statistic, extra):
    """--statistic variance / median / tangent-pca: the same value as the library's function with the
    same seed, and its certificate."""
    from manifold_dp import Sphere, private_frechet_median, private_frechet_variance, private_tangent_pca

    res = release(run, sphere_npy, "sphere", "--center", "origin", "--radius", "0.4", "--epsilon", "1", "--seed", "5",
                  "--statistic", statistic, *extra)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    S, X = Sphere(2), np.load(sphere_npy)
    kw = dict(center=S.origin, radius=0.4, epsilon=1.0, rng=5)
    if statistic == "variance":
        assert out["value"] == private_frechet_variance(X, S, **kw).value
        assert out["certificate"]["statistic"] == "frechet_variance"
    elif statistic == "median":
        assert out["value"] == private_frechet_median(X, S, **kw).point.tolist()
        assert out["certificate"]["mechanism"] == "kng"
    else:
        rel = private_tangent_pca(X, S, delta=1e-6, n_components=2, **kw)
        assert out["mean"] == rel.mean.tolist() and out["components"] == rel.components.tolist()
        assert out["explained_variance"] == rel.explained_variance.tolist()
        assert out["certificate"]["n_components"] == 2


@pytest.mark.parametrize("extra,fragment", [
    (("--statistic", "variance", "--center", "auto"), "--center auto (the private ball) is the mean's"),
    (("--statistic", "median", "--center", "origin", "--radius", "auto"), "--radius auto does not apply to --statistic median"),
    (("--statistic", "tangent-pca", "--center", "origin", "--radius", "0.4", "--delta", "1e-6"),
     "--components K is required by --statistic tangent-pca"),
    (("--statistic", "tangent-pca", "--center", "origin", "--radius", "0.4", "--components", "1"), "give --delta"),
    (("--center", "origin", "--radius", "0.4", "--components", "1"), "applies to it only"),
    (("--statistic", "variance", "--center", "origin", "--radius", "0.4", "--mechanism", "kng", "--bound", "rauch"),
     "--mechanism, --bound does not apply to --statistic variance"),
    (("--statistic", "tangent-pca", "--center", "origin", "--radius", "0.4", "--delta", "1e-6", "--components", "1",
      "--restrict", "--round-to", "0.01"), "--restrict, --round-to does not apply to --statistic tangent-pca")])
def test_statistic_options_are_refused_where_they_do_not_apply(run, sphere_npy, extra, fragment):
    assert_one_line_error(release(run, sphere_npy, "sphere", "--epsilon", "1", *extra), fragment)


def test_release_writes_nothing_on_error(run, tmp_path):
    np.save(tmp_path / "x.npy", sphere_cap(10, rng=1))
    res = release(run, tmp_path / "x.npy", "sphere", "--center", "origin", "--radius", "0.4", "--epsilon", "-1",
                  "--output", tmp_path / "o.json")
    assert_one_line_error(res, "epsilon")
    assert not (tmp_path / "o.json").exists()


def test_output_is_written_whole_or_not_at_all(run, monkeypatch, sphere_npy, tmp_path):
    out = tmp_path / "out" / "release.json"
    out.parent.mkdir()
    res = run("release", sphere_npy, *SPHERE_ARGS, "--seed", "2", "--output", out)
    assert res.returncode == 0 and res.stdout == "", res.stderr
    assert "value" in json.loads(out.read_text())
    out.write_text("previous\n")
    fail_with(monkeypatch, RuntimeError("rejection sampler made no progress: its envelope is broken"))
    assert_one_line_error(run("release", sphere_npy, *SPHERE_ARGS, "--output", out), "no progress")
    assert out.read_text() == "previous\n"  # an error leaves an existing file untouched
    assert sorted(p.name for p in out.parent.iterdir()) == ["release.json"]  # and no temporary files


def test_output_is_checked_before_the_release(run, monkeypatch, sphere_npy, tmp_path):
    fail_with(monkeypatch, RuntimeError("the release was computed"))
    res = run("release", sphere_npy, *SPHERE_ARGS, "--output", tmp_path / "nodir" / "x.json")
    assert_one_line_error(res, "--output directory does not exist")
    assert not (tmp_path / "nodir").exists()
    assert_one_line_error(run("release", sphere_npy, *SPHERE_ARGS, "--output", tmp_path), "--output", "is a directory")
    res = run("release", tmp_path / "missing.npy", *SPHERE_ARGS, "--output", tmp_path / "nodir" / "x.json")
    assert_one_line_error(res, "--output")  # the output is checked even before the data are read


# --- help, defaults, version, the mechanism table -------------------------------------------

def test_version(run):
    res = run("--version")
    assert res.returncode == 0 and res.stdout.strip() == f"manifold-dp {__version__}" and res.stderr == ""


def test_every_option_has_help_and_shows_its_default():
    checked = 0
    for name, sub in subparsers(cli.parser()).items():
        text = " ".join(sub.format_help().split())
        for action in sub._actions:
            if action.default == argparse.SUPPRESS:  # --help
                continue
            assert action.help, f"{name} {action.dest} has no help"
            if not action.required:
                assert "default" in action.help or f"(default: {action.default})" in text, f"{name} {action.dest}"
            checked += 1
    assert checked >= 22
    release_help = " ".join(subparsers(cli.parser())["release"].format_help().split())
    for shown in ("(default: laplace;", "(default: tight)", "(default: analytic)", "(default: auto)",
                  "(default: fresh OS entropy)", "(default: stdout)", "(default: 1)", "(default: none, pure ε-DP)"):
        assert shown in release_help


def test_help_exits_zero_and_points_to_the_mechanism_table(run):
    res = run("release", "--help")
    assert res.returncode == 0 and res.stderr == ""
    assert "--epsilon EPSILON" in res.stdout
    assert "Which mechanism runs on which manifold: manifold-dp mechanisms" in res.stdout
    res = run("--help")
    assert res.returncode == 0 and "mechanisms" in res.stdout and "130 interrupted" in res.stdout


def test_radius_help_states_units_and_upper_limit_per_manifold(run):
    lines = {line.split(":")[0][2:]: line for line in cli.radius_help().splitlines()[1:]}
    assert set(lines) == set(REGISTRY)
    for name, cls in REGISTRY.items():
        r_star = cls.examples()[0].assumption_radius
        assert cls.radius_units != "geodesic distance" and cls.radius_units in lines[name]  # each space says its own
        assert (f"r < {r_star:.4g}" if np.isfinite(r_star) else "no upper limit") in lines[name]
    assert "r < 0.7854 × --sphere-radius" in lines["sphere"] and f"{np.pi / 4:.4g}" == "0.7854"  # π/4 on S^d
    assert "r < 0.3927" in lines["kendall2d"] and f"{np.pi / 8:.4g}" == "0.3927"  # π/8 for Kendall shapes
    assert "≤ 8" in lines["hyperbolic"]
    text = " ".join(run("release", "--help").stdout.split())
    for units in ("radians on the unit sphere (times --sphere-radius)", "‖Logm(C^-½ X C^-½)‖_F",
                  "‖Logm X − Logm C‖_F", "hyperbolic distance on the hyperboloid", "Procrustes distance (radians)",
                  "euclidean: Euclidean norm"):
        assert units in text


def test_mechanism_table_lists_every_pair_from_the_capabilities(run):
    res = run("mechanisms")
    assert res.returncode == 0 and res.stderr == ""
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in res.stdout.splitlines() if line.startswith("|")]
    assert rows[0] == ["mechanism", "guarantee", *REGISTRY]
    assert [row[0] for row in rows[2:]] == list(MECHANISMS)
    for row in rows[2:]:
        gaussian = ("tangent_gaussian", "ambient_gaussian", "riemannian_gaussian", "wrapped_gaussian")
        assert row[1] == ("(ε, δ)-DP" if row[0] in gaussian else "ε-DP")
        expected = ["yes" if cli.mechanism_support(cls.examples()[0], row[0]) else "-" for cls in REGISTRY.values()]
        assert row[2:] == expected
    table = dict((row[0], row[2:]) for row in rows[2:])
    assert table["laplace"] == table["kng"] == ["yes"] * len(REGISTRY)
    assert table["tangent_gaussian"] == ["yes" if n in ("euclidean", "spd-le") else "-" for n in REGISTRY]
    assert table["ambient_laplace"] == ["-" if n == "hyperbolic" else "yes" for n in REGISTRY]
    assert table["riemannian_gaussian"] == ["yes"] * len(REGISTRY)
    assert table["wrapped_laplace"] == table["wrapped_gaussian"] == ["-" if n in ("sphere", "kendall2d", "so3") else "yes"
                                                                     for n in REGISTRY]
    assert "tangent_gaussian: manifolds with a flat chart only (euclidean, spd-le)" in res.stdout
    assert "restricted to the ball automatically" in res.stdout and "hyperbolic, spd-ai" in res.stdout


@pytest.mark.parametrize("name", list(REGISTRY))
def test_mechanism_table_agrees_with_what_the_release_accepts(name):
    m = REGISTRY[name].examples()[0]
    X = np.repeat(m.origin[None], 4, axis=0)
    public = dict(center=m.origin, radius=0.1, epsilon=1.0, bound="tight", calibration="analytic", restrict=False,
                  accountant=None)
    for mechanism in MECHANISMS:
        try:
            check_public(X, m, mechanism=mechanism, delta=1e-6, **public)
        except ValueError:
            accepted = False
        else:
            accepted = True
        assert cli.mechanism_support(m, mechanism) == accepted, mechanism
        if accepted:  # the table's guarantee column: which mechanisms need δ
            with pytest.raises(ValueError, match="delta") if mechanism in cli.DELTA_MECHANISMS else nullcontext():
                check_public(X, m, mechanism=mechanism, delta=None, **public)


# --- sizes and layouts ------------------------------------------------------------------------

def test_every_manifold_has_a_size_option():
    assert {name: cli.size_option(name) for name in REGISTRY} == {
        "euclidean": "--dim", "sphere": "--dim", "hyperbolic": "--dim", "spd-ai": "--k", "spd-le": "--k",
        "kendall2d": "--landmarks", "so3": None}  # SO(3) has one size


@pytest.mark.parametrize("manifold,option,size,records,width", [
    ("sphere", "--dim", 2, sphere_cap(30, rng=1), 3),
    ("hyperbolic", "--dim", 2, Hyperbolic(2).random_point(Hyperbolic(2).origin, 0.5, size=30, rng=1), 3),
    ("euclidean", "--dim", 3, np.random.default_rng(1).normal(size=(30, 3)), 3),
    ("spd-ai", "--k", 3, eigen_spd(30, 3, rng=1), 9),
    ("spd-le", "--k", 3, eigen_spd(30, 3, rng=1).reshape(30, 9), 9),
    ("kendall2d", "--landmarks", 5, kendall_landmarks(30, 1), 10),
])
def test_an_explicit_size_that_matches_the_file_is_used(run, tmp_path, manifold, option, size, records, width):
    np.save(tmp_path / "d.npy", records)
    res = release(run, tmp_path / "d.npy", manifold, option, size, "--center", "origin", "--radius", "0.3",
                  "--epsilon", "1", "--seed", "1")
    assert res.returncode == 0, res.stderr
    assert np.size(json.loads(res.stdout)["value"]) == width
    wrong = release(run, tmp_path / "d.npy", manifold, option, size + 1, "--center", "origin", "--radius", "0.3",
                    "--epsilon", "1")
    assert_one_line_error(wrong, f"{option} {size + 1} expects records of", f"has records of {width} numbers")


def test_a_size_that_does_not_fit_says_whether_the_file_is_transposed(run, tmp_path):
    np.savetxt(tmp_path / "covs.csv", eigen_spd(40, 3, rng=1).reshape(40, 9).T, delimiter=",")  # 9 rows of 40
    res = release(run, tmp_path / "covs.csv", "spd-ai", "--k", "3", "--center", "origin", "--radius", "1", "--epsilon", "1")
    assert_one_line_error(res, "--k 3 expects records of 9 numbers", "covs.csv has records of 40 numbers",
                          "is the file transposed?")
    np.savetxt(tmp_path / "wide.csv", np.ones((5, 40)), delimiter=",")
    res = release(run, tmp_path / "wide.csv", "spd-ai", "--k", "3", "--center", "origin", "--radius", "1", "--epsilon", "1")
    assert_one_line_error(res, "records of 40 numbers")
    assert "transposed" not in res.stderr


@pytest.mark.parametrize("manifold,options,fragment", [
    ("sphere", ["--k", "3"], "--k does not apply to --manifold sphere; its size option is --dim"),
    ("spd-ai", ["--landmarks", "4"], "--landmarks does not apply to --manifold spd-ai; its size option is --k"),
    ("kendall2d", ["--dim", "3"], "--dim does not apply to --manifold kendall2d; its size option is --landmarks"),
    ("so3", ["--dim", "3"], "--dim does not apply to --manifold so3; it has one size and no size option"),
    ("hyperbolic", ["--sphere-radius", "2"], "--sphere-radius applies to --manifold sphere only"),
])
def test_an_option_of_another_manifold_is_refused_before_reading(run, tmp_path, manifold, options, fragment):
    res = release(run, tmp_path / "missing.npy", manifold, *options, "--center", "origin", "--radius", "0.3",
                  "--epsilon", "1")
    assert_one_line_error(res, fragment)


def test_npy_records_must_have_a_layout_of_the_manifold(run, tmp_path):
    np.save(tmp_path / "covs.npy", eigen_spd(30, 3, rng=1))  # (30, 3, 3): not S⁸
    res = release(run, tmp_path / "covs.npy", "sphere", "--center", "origin", "--radius", "0.3", "--epsilon", "1")
    assert_one_line_error(res, "covs.npy holds records of shape (3, 3), not a layout of sphere points ((9,))",
                          "they fit --manifold spd-ai or spd-le")
    np.save(tmp_path / "odd.npy", np.ones((30, 9, 1)))
    assert_one_line_error(release(run, tmp_path / "odd.npy", "spd-ai", "--center", "origin", "--radius", "1",
                                  "--epsilon", "1"), "records of shape (9, 1)")
    np.save(tmp_path / "shapes.npy", kendall_landmarks(30, 2))  # (30, 5, 2): real landmarks are a layout
    res = release(run, tmp_path / "shapes.npy", "kendall2d", "--center", "origin", "--radius", "0.3", "--epsilon", "1")
    assert res.returncode == 0, res.stderr
    assert np.shape(json.loads(res.stdout)["value"]) == (5, 2)


# --- errors at the boundary -------------------------------------------------------------------

def test_bad_files_give_one_clear_line(run, tmp_path):
    (tmp_path / "bad.csv").write_text("1,2,3\nsecret-value,5,6\n")
    res = release(run, tmp_path / "bad.csv", *SPHERE_ARGS[1:])
    assert_one_line_error(res, "line 2, column 1")
    assert "secret" not in res.stderr
    (tmp_path / "bad.json").write_text("{not json")
    assert_one_line_error(release(run, tmp_path / "bad.json", *SPHERE_ARGS[1:]), "invalid JSON at line 1, column 2")
    (tmp_path / "x.txt").write_text("1,2,3")
    assert_one_line_error(release(run, tmp_path / "x.txt", *SPHERE_ARGS[1:]), "unsupported")
    assert_one_line_error(release(run, tmp_path / "missing.npy", *SPHERE_ARGS[1:]), "not found")


def test_wrong_widths_and_nan_rows(run, tmp_path):
    np.savetxt(tmp_path / "spd.csv", np.ones((5, 8)), delimiter=",")
    assert_one_line_error(release(run, tmp_path / "spd.csv", "spd-ai", "--center", "origin", "--radius", "1",
                                  "--epsilon", "1"), "k*k")
    X = sphere_cap(20, rng=4)
    X[3] = np.nan
    np.savetxt(tmp_path / "nan.csv", X, delimiter=",")
    res = release(run, tmp_path / "nan.csv", *SPHERE_ARGS[1:])
    assert res.returncode == 0, res.stderr  # NaN rows are replaced by the centre, data-independently
    res = release(run, tmp_path / "nan.csv", "sphere", "--center", "1,2", "--radius", "0.4", "--epsilon", "1")
    assert_one_line_error(res, "--center must have 3 numbers")


def test_npz_is_refused_with_a_hint(run, tmp_path):
    np.savez(tmp_path / "x.npz", records=sphere_cap(10, rng=1))
    assert_one_line_error(release(run, tmp_path / "x.npz", *SPHERE_ARGS[1:]), "unsupported data format '.npz'",
                          "use .npy, .csv or .json", "numpy.save")
    (tmp_path / "disguised.npy").write_bytes((tmp_path / "x.npz").read_bytes())  # an archive named .npy
    assert_one_line_error(release(run, tmp_path / "disguised.npy", *SPHERE_ARGS[1:]), "disguised.npy")


def test_json_errors_give_the_position_not_the_contents(run, tmp_path):
    (tmp_path / "big.json").write_text("[[" + SECRET * 100 + ", 0, 0], [0, 0, 1]]")  # 400 digits: int → float overflows
    assert_one_line_error(release(run, tmp_path / "big.json", *SPHERE_ARGS[1:]), "big.json", "too large for float64")
    (tmp_path / "bad.json").write_text('[[0, 0, 1],\n [0, 1, "' + SECRET + '"')
    assert_one_line_error(release(run, tmp_path / "bad.json", *SPHERE_ARGS[1:]), "bad.json", "invalid JSON at line 2")


def test_csv_errors_name_the_line_not_the_contents(run, tmp_path):
    (tmp_path / "header.csv").write_text(f"x{SECRET},y,z\n1,0,0\n0,1,0\n")
    assert_one_line_error(release(run, tmp_path / "header.csv", *SPHERE_ARGS[1:]),
                          "line 1, column 1 is not a number", "remove any header row")
    (tmp_path / "cell.csv").write_text(f"1,0,0\n\n# a comment\n0,{SECRET}e,0\n")
    assert_one_line_error(release(run, tmp_path / "cell.csv", *SPHERE_ARGS[1:]), "line 4, column 2")
    (tmp_path / "ragged.csv").write_text(f"1,0,0\n0,1,0\n0.{SECRET},1\n")
    assert_one_line_error(release(run, tmp_path / "ragged.csv", *SPHERE_ARGS[1:]), "line 3 has 2 values")


@pytest.mark.parametrize("error,fragment", [
    (RuntimeError("the Fréchet mean could not be certified to the required accuracy; nothing was released"),
     "could not be certified"),
    (RuntimeError("rejection sampler made no progress: its envelope is broken"), "rejection sampler made no progress"),
    (OverflowError("math range error"), "numeric overflow: math range error"),
    (MemoryError(), "out of memory"),
    (TypeError("restrict must be True or False, got str"), "restrict must be"),
    (np.linalg.LinAlgError("Eigenvalues did not converge"), "Eigenvalues did not converge"),
])
def test_library_errors_print_their_message_on_one_line(run, monkeypatch, sphere_npy, error, fragment):
    fail_with(monkeypatch, error)
    assert_one_line_error(run("release", sphere_npy, *SPHERE_ARGS), fragment)


@pytest.mark.parametrize("error", [KeyError(f"record {SECRET}"), IndexError(f"index {SECRET} is out of bounds"),
                                   AssertionError(SECRET), ZeroDivisionError(SECRET)])
def test_other_exceptions_print_their_type_only(run, monkeypatch, sphere_npy, error):
    fail_with(monkeypatch, error)
    assert_one_line_error(run("release", sphere_npy, *SPHERE_ARGS), f"unexpected {type(error).__name__}",
                          "please report")


def test_keyboard_interrupt_is_one_line_and_status_130(run, monkeypatch, sphere_npy, tmp_path):
    fail_with(monkeypatch, KeyboardInterrupt())
    res = run("release", sphere_npy, *SPHERE_ARGS, "--output", tmp_path / "o.json")
    assert tuple(res) == (130, "", "manifold-dp: interrupted\n")
    assert list(tmp_path.glob("*.json")) == []


def test_a_closed_stdout_pipe_ends_quietly(tmp_path):
    """``manifold-dp release ... | head -c 0``: the reader is gone before the JSON is written
    (stdout block-buffered, as usual for a pipe: the write fails when it is flushed)."""
    np.save(tmp_path / "inside.npy", sphere_cap(30, radius=0.3, rng=1))  # no record to clip: no warning either
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    command = [sys.executable, "-m", "manifold_dp.cli", "release", str(tmp_path / "inside.npy"), *SPHERE_ARGS]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=600) == cli.EXIT_BROKEN_PIPE and stderr == ""


class _ClosedPipe(io.StringIO):
    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")


def test_a_failed_write_to_stdout_ends_quietly(run, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert cli.main(["mechanisms"]) == cli.EXIT_BROKEN_PIPE
    assert capsys.readouterr().err == ""


def test_numpy_and_library_warnings_become_one_line_each(run, monkeypatch, tmp_path):
    import warnings
    real = cli.release_statistic
    np.save(tmp_path / "inside.npy", sphere_cap(30, radius=0.3, rng=1))  # no record to clip or replace

    def noisy(*args, **kwargs):
        np.exp(np.array([1000.0])), np.sqrt(np.array([-1.0])), np.array([1.0]) / 0.0  # numpy floating warnings
        warnings.warn("frechet_mean did not reach tol=1e-12\nin max_iter=10 steps", RuntimeWarning)
        warnings.warn("frechet_mean did not reach tol=1e-12\nin max_iter=10 steps", RuntimeWarning)
        return real(*args, **kwargs)

    monkeypatch.setattr(cli, "release_statistic", noisy)
    res = run("release", tmp_path / "inside.npy", *SPHERE_ARGS, "--seed", "1")
    assert res.returncode == 0, res.stderr
    assert "value" in json.loads(res.stdout)
    assert res.stderr.splitlines() == ["manifold-dp: warning: frechet_mean did not reach tol=1e-12 in max_iter=10 steps"]


def test_warnings_are_dropped_when_the_release_fails(run, monkeypatch, sphere_npy):
    import warnings

    def failing(*args, **kwargs):
        np.log(np.zeros(1))
        warnings.warn("frechet_mean did not reach tol", RuntimeWarning)
        raise RuntimeError("the Fréchet mean could not be certified to the required accuracy; nothing was released")

    monkeypatch.setattr(cli, "release_statistic", failing)
    assert_one_line_error(run("release", sphere_npy, *SPHERE_ARGS), "could not be certified")


@pytest.mark.parametrize("center,fragment", [
    ("north", "--center must be 'origin'"), ("1,2,x", "--center must be 'origin'"), ("", "--center must be 'origin'"),
    ("missing.npy", "--center file not found"), ("strings.npy", "--center must be 'origin'"),
    ("archive.npy", "--center must be 'origin'"), ("1,0", "--center must have 3 numbers"),
])
def test_bad_center_names_the_option(run, monkeypatch, sphere_npy, tmp_path, center, fragment):
    np.save(tmp_path / "strings.npy", np.array([f"s{SECRET}", "0", "1"]))
    np.savez(tmp_path / "archive.npz", a=np.array([0.0, 0.0, 1.0]))
    (tmp_path / "archive.npy").write_bytes((tmp_path / "archive.npz").read_bytes())
    monkeypatch.chdir(tmp_path)
    res = run("release", sphere_npy, "--manifold", "sphere", "--center", center, "--radius", "0.4", "--epsilon", "1")
    assert_one_line_error(res, fragment)


def test_usage_errors_are_one_line(run):
    assert_one_line_error(run("release"), "required", "manifold-dp release --help")
    assert_one_line_error(run("release", "x.npy", "--manifold", "torus", "--center", "origin", "--radius", "1",
                              "--epsilon", "1"), "--manifold")
    assert_one_line_error(run("frobnicate"), "invalid choice")
    assert_one_line_error(run("release", "x.npy", *SPHERE_ARGS, "--dim", "0"), "--dim: must be an integer >= 1")
    assert_one_line_error(run("release", "x.npy", *SPHERE_ARGS, "--landmarks", "2"), "--landmarks: must be an integer >= 3")


@pytest.mark.parametrize("args,fragment", [
    (["--samples", "-5"], "--samples: must be an integer >= 100"), (["--samples", "0"], "halves"),
    (["--samples", "1"], "--samples"), (["--samples", "99"], "--samples"), (["--samples", "1e6"], "--samples"),
    (["--seed", "-1"], "--seed: must be an integer >= 0"), (["--seed", "x"], "--seed"),
])
def test_audit_arguments_are_validated_before_any_output(run, args, fragment):
    assert_one_line_error(run("audit", "laplace-euclidean", *args), fragment)


def test_release_and_reproduce_seeds_are_validated(run):
    assert_one_line_error(run("release", "x.npy", *SPHERE_ARGS, "--seed", "-1"), "--seed")
    assert_one_line_error(run("reproduce", "R21-F2", "--seed", "-3"), "--seed")


# --- reproduce, progress ----------------------------------------------------------------------

def test_reproduce_one_experiment_writes_png_and_report(run, tmp_path):
    res = run("reproduce", "R21-F2", "--out", tmp_path / "out")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "out" / "r21_f2_log_spread.png").stat().st_size > 10_000
    md = (tmp_path / "out" / "report.md").read_text()
    assert "R21-F2" in md and "Paper:" in md and "Ours:" in md
    assert "data:image/png;base64" in (tmp_path / "out" / "report.html").read_text()
    assert res.stderr == ""  # no progress bars when stderr is not a terminal
    assert_one_line_error(run("reproduce", "nope", "--out", tmp_path / "o2"), "unknown experiment 'nope'")


def test_reproduce_without_the_experiments_extra(run, monkeypatch, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    res = run("reproduce", "R21-F2", "--out", tmp_path / "o")
    assert_one_line_error(res, 'pip install "manifold_dp[experiments]"', "matplotlib")
    assert not (tmp_path / "o").exists()


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_drawn_only_on_a_terminal(monkeypatch):
    from manifold_dp.experiments._common import progress

    items = [1, 2, 3]
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert progress(items, "R21-F2 r") is items and cli._progress("laplace-euclidean", 10) is None
    monkeypatch.setattr(sys, "stderr", _Terminal())
    bar = progress(items, "R21-F2 r")
    assert bar is not items and list(bar) == items
    cli._progress("laplace-euclidean", 10)(5, 10)
    assert "R21-F2 r" in sys.stderr.getvalue() and "audit laplace-euclidean: 5/10 releases" in sys.stderr.getvalue()


# --- the records' diagnostics, strict mode and a private radius ----------------------------

def test_scaled_unit_vectors_are_reported_on_stderr_never_in_the_json(run, tmp_path):
    path = tmp_path / "scaled.npy"
    np.save(path, 3.0 * sphere_cap(200, rng=1))  # unit vectors × 3: not points of S²
    res = run("release", path, *SPHERE_ARGS, "--seed", "1")
    assert res.returncode == 0
    assert "200 replaced by the centre" in res.stderr and "RecordsWarning" in res.stderr
    assert "replaced" not in res.stdout and "clipped" not in res.stdout  # the JSON carries no diagnostics
    json.loads(res.stdout)


def test_strict_refuses_invalid_records_with_one_line(run, tmp_path):
    path = tmp_path / "scaled.npy"
    np.save(path, 3.0 * sphere_cap(50, rng=2))
    assert_one_line_error(run("release", path, *SPHERE_ARGS, "--strict"), "strict", "not points of", "not charged")
    good = tmp_path / "good.npy"
    np.save(good, sphere_cap(50, rng=2))
    assert run("release", good, *SPHERE_ARGS, "--strict", "--seed", "3").returncode == 0


def test_radius_auto_releases_with_both_parts_in_the_certificate(run, tmp_path):
    path = tmp_path / "dirs.npy"
    np.save(path, sphere_cap(2000, rng=3))
    res = run("release", path, "--manifold", "sphere", "--center", "origin", "--radius", "auto", "--epsilon", "2",
              "--radius-budget", "0.25", "--seed", "4")
    assert res.returncode == 0, res.stderr
    cert = json.loads(res.stdout)["certificate"]
    sel = cert["radius_selection"]
    assert cert["epsilon"] == pytest.approx(2.0) and sel["epsilon"] == pytest.approx(0.5)
    assert 0 < cert["radius"] < np.pi / 4 and cert["radius"] == pytest.approx(sel["chosen_radius"])


def test_radius_auto_options_need_radius_auto(run, tmp_path):
    path = tmp_path / "dirs.npy"
    np.save(path, sphere_cap(20, rng=5))
    assert_one_line_error(run("release", path, *SPHERE_ARGS, "--radius-quantile", "0.5"), "--radius auto only")
    res = run("release", path, "--manifold", "sphere", "--center", "origin", "--radius", "big", "--epsilon", "1")
    assert res.returncode == 2 and "'auto'" in res.stderr
