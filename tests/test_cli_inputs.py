"""The inputs real users have, read by ``manifold-dp release``: a centre typed with a leading minus
or rounded digits, connectome rows holding one triangle, latitudes and longitudes, spreadsheet
CSV files; and refusals whose advice matches what was run."""

import json

import numpy as np
import pytest

from manifold_dp import SPDAffineInvariant, SPDLogEuclidean, Sphere, cli, private_frechet_mean
from manifold_dp.data import sphere_cap
from manifold_dp.privacy.release import calibrate

SECRET = "7311"  # a marker placed in data files: it must never reach stderr
SPHERE = ("--manifold", "sphere", "--radius", "0.4", "--epsilon", "1", "--seed", "3")



def release(run, path, *args):
    return run("release", path, *args)


def assert_one_line_error(res, *fragments):
    """Exit status 2, nothing on stdout, one ``manifold-dp: error:`` line, no data marker."""
    lines = res.stderr.splitlines()
    assert res.returncode == 2, res.stderr
    assert res.stdout == ""
    assert len(lines) == 1 and lines[0].startswith("manifold-dp: error:"), res.stderr
    assert "Traceback" not in res.stderr and SECRET not in res.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture
def cap_csv(tmp_path):
    """Records around the direction of (-0.45, 0.2, 0.87)."""
    S = Sphere(2)
    center = np.array([-0.45, 0.2, 0.87]) / np.linalg.norm([-0.45, 0.2, 0.87])
    np.savetxt(tmp_path / "cap.csv", S.random_point(center, 0.3, size=40, rng=5), delimiter=",")
    return tmp_path / "cap.csv"


# --- --center ---------------------------------------------------------------------------------

@pytest.mark.parametrize("form", [("--center", "-0.45,0.2,0.87"), ("--center=-0.45,0.2,0.87",),
                                  ("--center", "-4.5e-1, 2e-1, 8.7e-1")])
def test_a_centre_with_a_leading_minus_is_a_value(run, cap_csv, form):
    res = release(run, cap_csv, *SPHERE[:2], *form, *SPHERE[2:])
    assert res.returncode == 0, res.stderr
    assert len(json.loads(res.stdout)["value"]) == 3


def test_a_negative_value_is_still_refused_where_it_is_invalid(run, cap_csv):
    assert_one_line_error(release(run, cap_csv, "--manifold", "sphere", "--center", "origin", "--radius", "-0.4",
                                  "--epsilon", "1"), "radius")


def test_a_rounded_unit_vector_is_normalised_with_a_note(run, cap_csv):
    res = release(run, cap_csv, *SPHERE[:2], "--center", "-0.45,0.2,0.87", *SPHERE[2:])  # norm 0.9997
    assert res.returncode == 0
    notes = [line for line in res.stderr.splitlines() if line.startswith("manifold-dp: note:")]
    assert len(notes) == 1 and "--center was normalised" in notes[0] and "its norm 0.9996" in notes[0]
    exact = release(run, cap_csv, *SPHERE[:2], "--center", "0,0,1", *SPHERE[2:])
    assert "note:" not in exact.stderr


@pytest.mark.parametrize("center", ["-0.45,0.2,0.97", "0,0,2", "0,0,0"])
def test_a_centre_far_off_the_sphere_is_refused_by_its_norm(run, cap_csv, center):
    assert_one_line_error(release(run, cap_csv, *SPHERE[:2], "--center", center, *SPHERE[2:]),
                          "--center is not on the sphere of radius 1", "its norm is")


def test_the_note_is_dropped_when_the_release_fails(run, cap_csv):
    res = release(run, cap_csv, *SPHERE[:2], "--center", "-0.45,0.2,0.87", "--radius", "0.4", "--epsilon", "-1")
    assert_one_line_error(res, "epsilon")


# --- SPD rows holding one triangle ------------------------------------------------------------

def _spd_rows(k, n, layout):
    M = SPDLogEuclidean(k)
    X = M.random_point(M.origin, 0.3, size=n, rng=2)
    rows, cols = np.triu_indices(k) if layout == "triu" else np.tril_indices(k)
    return X, X[:, rows, cols]


@pytest.mark.parametrize("layout", ["triu", "tril"])
@pytest.mark.parametrize("manifold", ["spd-le", "spd-ai"])
def test_triangle_rows_give_the_release_of_the_full_matrices(run, tmp_path, layout, manifold):
    X, rows = _spd_rows(4, 30, layout)
    np.savetxt(tmp_path / "tri.csv", rows, delimiter=",")
    np.save(tmp_path / "full.npy", X.reshape(30, -1))
    args = ("--manifold", manifold, "--center", "origin", "--radius", "1", "--epsilon", "1", "--seed", "4")
    tri = run("release", tmp_path / "tri.csv", "--layout", layout, *args)
    full = run("release", tmp_path / "full.npy", *args)
    assert tri.returncode == 0 and full.returncode == 0, tri.stderr
    assert json.loads(tri.stdout)["value"] == json.loads(full.stdout)["value"]
    assert json.loads(tri.stdout)["certificate"]["manifold"].endswith("(k=4)")


def test_a_triangle_centre_and_an_explicit_k(run, tmp_path):
    _, rows = _spd_rows(3, 20, "triu")
    np.savetxt(tmp_path / "tri.csv", rows, delimiter=",")
    res = run("release", tmp_path / "tri.csv", "--manifold", "spd-le", "--layout", "triu", "--k", "3",
              "--center", "1,0,0,1,0,1", "--radius", "1", "--epsilon", "1", "--seed", "1")
    assert res.returncode == 0, res.stderr
    assert_one_line_error(run("release", tmp_path / "tri.csv", "--manifold", "spd-le", "--layout", "triu", "--k", "4",
                              "--center", "origin", "--radius", "1", "--epsilon", "1"),
                          "--layout triu expects records of 10 numbers (--k 4)", "6 numbers")


def test_a_transposed_triangle_file_is_named_without_k(run, tmp_path):
    _, rows = _spd_rows(28, 86, "triu")  # 406 numbers a record, 86 records: stored one record per column
    np.save(tmp_path / "conn.npy", rows.T)
    assert_one_line_error(run("release", tmp_path / "conn.npy", "--manifold", "spd-ai", "--layout", "triu",
                              "--center", "origin", "--radius", "1", "--epsilon", "1"),
                          "k(k+1)/2 numbers", "86 numbers", "is the file transposed?")


def test_a_transposed_full_file_is_named_without_k(run, tmp_path):
    X, _ = _spd_rows(3, 5, "triu")
    np.save(tmp_path / "t.npy", X.reshape(5, -1).T)  # 9 rows of 5 numbers
    assert_one_line_error(run("release", tmp_path / "t.npy", "--manifold", "spd-le", "--center", "origin",
                              "--radius", "1", "--epsilon", "1"), "k*k", "is the file transposed?")


def test_layout_applies_to_spd_only(run, cap_csv):
    assert_one_line_error(release(run, cap_csv, *SPHERE[:2], "--center", "origin", "--layout", "triu", *SPHERE[2:]),
                          "--layout triu applies to --manifold spd-ai or spd-le only")


# --- latitude and longitude -------------------------------------------------------------------

def test_latlon_rows_are_unit_vectors_and_the_value_a_latlon(run, tmp_path):
    rng = np.random.default_rng(0)
    latlon = np.column_stack([45 + rng.normal(0, 2, 60), 10 + rng.normal(0, 2, 60)])
    np.savetxt(tmp_path / "ll.csv", latlon, delimiter=",")
    lat, lon = np.radians(latlon.T)
    np.save(tmp_path / "xyz.npy", np.column_stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)]))
    args = ("--manifold", "sphere", "--radius", "0.2", "--epsilon", "1", "--seed", "2")
    res = run("release", tmp_path / "ll.csv", "--input", "latlon", "--center", "45,10", *args)
    assert res.returncode == 0, res.stderr
    value = json.loads(res.stdout)["value"]
    assert len(value) == 2 and abs(value[0] - 45) < 5 and abs(value[1] - 10) < 5
    phi, lam = np.radians(45), np.radians(10)
    xyz = run("release", tmp_path / "xyz.npy", "--center",
              ",".join(f"{c:.17g}" for c in [np.cos(phi) * np.cos(lam), np.cos(phi) * np.sin(lam), np.sin(phi)]), *args)
    v = np.array(json.loads(xyz.stdout)["value"])
    assert np.allclose(value, [np.degrees(np.arcsin(v[2])), np.degrees(np.arctan2(v[1], v[0]))], atol=1e-4)


def test_a_latitude_beyond_the_pole_is_an_invalid_record(run, tmp_path):
    np.savetxt(tmp_path / "ll.csv", [[45, 10], [95, 10], [46, 11]], delimiter=",")
    args = ("--manifold", "sphere", "--input", "latlon", "--center", "45,10", "--radius", "0.2", "--epsilon", "1")
    res = run("release", tmp_path / "ll.csv", *args)
    assert res.returncode == 0 and "1 replaced by the centre because not points of Sphere" in res.stderr
    assert_one_line_error(run("release", tmp_path / "ll.csv", *args, "--strict"), "strict")
    (tmp_path / "inf.csv").write_text("45,10\ninf,10\n46,11\n")  # non-finite stays non-finite
    res = run("release", tmp_path / "inf.csv", *args)
    assert res.returncode == 0 and "1 replaced by the centre because non-finite" in res.stderr
    centre = ("--manifold", "sphere", "--input", "latlon", "--center", "95,10", "--radius", "0.2", "--epsilon", "1")
    assert_one_line_error(run("release", tmp_path / "ll.csv", *centre), "--center latitude must be in [-90, 90]", "95")


def test_a_two_column_file_is_not_silently_a_circle(run, tmp_path):
    """Latitudes and longitudes without --input latlon, or Poincaré-disk coordinates: refused by
    the file's shape with the option that reads them; --dim 1 still reads the circle."""
    np.savetxt(tmp_path / "ll.csv", [[45, 10], [46, 11]], delimiter=",")
    assert_one_line_error(run("release", tmp_path / "ll.csv", "--manifold", "sphere", "--center", "auto", "--epsilon",
                              "1"), "circle S^1", "--dim 1", "--input latlon")
    assert_one_line_error(run("release", tmp_path / "ll.csv", "--manifold", "hyperbolic", "--center", "auto",
                              "--epsilon", "1"), "line H^1", "--dim 1", "Poincare")
    np.savetxt(tmp_path / "circle.csv", [[0.6, 0.8], [0.8, 0.6]], delimiter=",")
    res = run("release", tmp_path / "circle.csv", "--manifold", "sphere", "--dim", "1", "--center", "origin",
              "--radius", "0.5", "--epsilon", "1")
    assert res.returncode == 0 and len(json.loads(res.stdout)["value"]) == 2


def test_a_triangle_file_without_its_layout_is_named(run, tmp_path):
    np.savetxt(tmp_path / "tri.csv", np.ones((3, 406)), delimiter=",")
    for extra in ((), ("--k", "28")):
        assert_one_line_error(run("release", tmp_path / "tri.csv", "--manifold", "spd-ai", *extra, "--center", "auto",
                                  "--epsilon", "1"), "406 = 28·29/2", "--layout triu")


def test_latlon_needs_two_numbers_on_the_two_sphere(run, tmp_path, cap_csv):
    assert_one_line_error(release(run, cap_csv, *SPHERE[:2], "--input", "latlon", "--center", "45,10", *SPHERE[2:]),
                          "--input latlon expects records of 2 numbers", "(3,)")
    assert_one_line_error(release(run, cap_csv, "--manifold", "hyperbolic", "--input", "latlon", "--center", "origin",
                                  *SPHERE[2:]), "--input latlon applies to --manifold sphere")


# --- spreadsheet CSV --------------------------------------------------------------------------

def test_a_byte_order_mark_is_read(run, tmp_path):
    X = sphere_cap(20, rng=3)
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + "\n".join(",".join(f"{c:.17g}" for c in r) for r in X).encode())
    res = release(run, tmp_path / "bom.csv", *SPHERE[:2], "--center", "origin", *SPHERE[2:])
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("text,fragment", [
    ("0,0,1\n0,0,1\n0,1,\n", "line 3, column 3 is empty"),
    ("\ufeff0,0,1\n0,0,1\n0,,1\n", "line 3, column 2 is empty"),
    ("0,0,1\n\n0, ,1\n", "line 3, column 2 is empty"),
    (f"0;0;1\n0;{SECRET};1\n", "line 1 is separated by semicolons, not commas"),
    (f"0\t0\t1\n0\t{SECRET}\t1\n", "line 1 is separated by tabs, not commas"),
])
def test_a_csv_problem_names_its_own_line_and_column(run, tmp_path, text, fragment):
    (tmp_path / "b.csv").write_text(text, encoding="utf-8")
    assert_one_line_error(release(run, tmp_path / "b.csv", *SPHERE[:2], "--center", "origin", *SPHERE[2:]), fragment)


# --- refusals whose advice matches what was run -------------------------------------------------

def test_the_restricted_laplace_refusal_does_not_advise_the_default():
    M = SPDAffineInvariant(8)
    X = M.random_point(M.origin, 0.5, size=50, rng=0)
    with pytest.raises(ValueError) as default:
        private_frechet_mean(X, M, center=M.origin, radius=1.0, epsilon=0.1, rng=0)
    assert "restrict=False" not in str(default.value)
    assert "the restricted law was used because the unrestricted law is not integrable" in str(default.value)
    with pytest.raises(ValueError) as forced:
        private_frechet_mean(X, M, center=M.origin, radius=1.0, epsilon=0.1, restrict=True, rng=0)
    assert "restrict=False" not in str(forced.value)  # the unrestricted law is not integrable here either


def test_a_float64_refusal_quotes_the_certificates_sigma(run, tmp_path):
    M = SPDLogEuclidean(28)
    X = M.random_point(M.origin, 0.5, size=86, rng=0)
    np.save(tmp_path / "c.npy", X.reshape(86, -1))
    args = ("--manifold", "spd-le", "--center", "origin", "--epsilon", "1", "--delta", "1e-6")
    ok = run("release", tmp_path / "c.npy", *args, "--radius", "4.5", "--mechanism", "tangent_gaussian", "--seed", "1")
    assert ok.returncode == 0, ok.stderr  # a Gaussian tail in R^406 at sigma 0.44 stays far inside float64
    sigma = calibrate(M, "ambient_gaussian", n=86, center=M.origin, radius=4.5, epsilon=1.0, delta=1e-6, bound="tight",
                      calibration="analytic", restrict=False).sigma  # the certificate's scale, had it fitted
    res = run("release", tmp_path / "c.npy", *args, "--radius", "4.5", "--mechanism", "ambient_gaussian")
    assert_one_line_error(res, "too large for a float64 release", "checked as 3σ")
    quoted = float(res.stderr.split("sigma=")[1].split()[0])
    assert quoted == pytest.approx(sigma, rel=1e-3)


def test_parser_reads_negative_lists_only_as_values():
    assert cli.NEGATIVE_VALUE.match("-0.45,0.2,0.87") and cli.NEGATIVE_VALUE.match("-1e-3")
    assert not cli.NEGATIVE_VALUE.match("--center") and not cli.NEGATIVE_VALUE.match("-x")


def test_a_private_ball_needs_no_radius_and_a_given_centre_does(run, cap_csv):
    res = release(run, cap_csv, "--manifold", "sphere", "--center", "auto", "--epsilon", "1", "--seed", "3")
    assert res.returncode == 0, res.stderr
    cert = json.loads(res.stdout)["certificate"]
    assert cert["center_selection"]["stages"][0]["stage"] == "centre"
    assert cert["radius_selection"] is not None or cert["center_selection"]["small_n_fallback"]
    res = release(run, cap_csv, "--manifold", "sphere", "--center", "origin", "--epsilon", "1")
    assert_one_line_error(res, "--radius is required")


def test_a_trailing_comma_on_every_row_is_an_empty_last_column(run, tmp_path):
    X = sphere_cap(20, rng=3)
    (tmp_path / "t.csv").write_text("".join(",".join(repr(float(v)) for v in row) + ",\n" for row in X))
    res = release(run, tmp_path / "t.csv", *SPHERE[:2], "--center", "origin", *SPHERE[2:])
    plain = tmp_path / "p.csv"
    plain.write_text("".join(",".join(repr(float(v)) for v in row) + "\n" for row in X))
    assert res.returncode == 0 and res.stdout == release(run, plain, *SPHERE[:2], "--center", "origin", *SPHERE[2:]).stdout
    (tmp_path / "m.csv").write_text("1,0,0,\n0,1,0\n")  # only some rows: still an empty cell, named
    assert_one_line_error(release(run, tmp_path / "m.csv", *SPHERE[:2], "--center", "origin", *SPHERE[2:]),
                          "line 1, column 4 is empty")


def test_a_gaussian_mechanism_without_delta_names_the_option(run, cap_csv):
    assert_one_line_error(release(run, cap_csv, *SPHERE[:2], "--center", "origin", "--mechanism", "ambient_gaussian",
                                  *SPHERE[2:]), "--delta", "ambient_gaussian")


def test_summary_format_gives_the_value_and_the_certificate_summary(run, cap_csv):
    args = (*SPHERE[:2], "--center", "origin", *SPHERE[2:])
    full = json.loads(release(run, cap_csv, *args).stdout)
    res = release(run, cap_csv, *args, "--format", "summary")
    first, second = res.stdout.splitlines()[:2]
    assert res.returncode == 0 and json.loads(first.removeprefix("value: ")) == full["value"]
    assert second.startswith("Riemannian Laplace (laplace): (1, 0)-DP frechet_mean")


@pytest.mark.parametrize("option,value", [("--radius-budget", "1.5"), ("--radius-quantile", "nan"),
                                          ("--radius-budget", "0"), ("--radius-budget", "1")])
def test_radius_auto_options_are_named_as_typed(run, tmp_path, option, value):
    """Refused by the option's name before the data are read (the file does not exist)."""
    res = release(run, tmp_path / "missing.csv", "--manifold", "sphere", "--center", "origin", "--radius", "auto",
                  "--epsilon", "1", option, value)
    assert_one_line_error(res, f"{option} must be a number in (0, 1), got")
    assert "AutoRadius" not in res.stderr


@pytest.mark.parametrize("name", ["spd-le", "spd-ai"])
def test_a_radius_whose_sensitivity_overflows_is_named(run, tmp_path, name):
    """At --radius 1e6 on SPD the sensitivity bound is not finite: the error names the radius."""
    path = tmp_path / "spd.csv"
    np.savetxt(path, np.tile(np.eye(3).ravel(), (20, 1)), delimiter=",")
    res = release(run, path, "--manifold", name, "--center", "origin", "--radius", "1e6", "--epsilon", "1")
    assert_one_line_error(res, "radius=1000000.0", "not finite in float64")
