"""Reading real data sets out of the geomstats wheel without importing geomstats, on a small
wheel made here with the same layout (the tests download nothing)."""

import json
import zipfile

import numpy as np
import pytest

from manifold_dp.experiments import _offline_data
from manifold_dp.experiments.r21_sphere import CITY_REGION, _cities_text
from manifold_dp.experiments.u23_descriptors import _connectomes


def _correlations(count, size, rng):
    A = rng.standard_normal((count, size, 3 * size))
    C = A @ np.swapaxes(A, 1, 2)
    d = np.sqrt(np.einsum("kii->ki", C))
    return C / d[:, :, None] / d[:, None, :]


def fake_geomstats_wheel(folder, seed=0):
    """A zip with geomstats' member names: 20 cities (12 near the public point of R21-F1cd) and
    30 correlation matrices 28 × 28 written as the upper triangle, row by row."""
    rng = np.random.default_rng(seed)
    lat0, lng0 = CITY_REGION[1:]
    near = [(lat0 + rng.uniform(-8, 8), lng0 + rng.uniform(-8, 8)) for _ in range(12)]
    far = [(rng.uniform(-60, 0), rng.uniform(-120, -40)) for _ in range(8)]
    cities = [{"city": f"city {i}", "lat": lat, "lng": lng} for i, (lat, lng) in enumerate(near + far)]
    C = _correlations(30, 28, rng)
    iu = np.triu_indices(28, 1)
    lines = ["Id," + ",".join(f"FNC{i + 1}" for i in range(iu[0].size))]
    lines += [f"{i}," + ",".join(f"{v:.17g}" for v in c[iu]) for i, c in enumerate(C)]
    path = folder / _offline_data.WHEEL
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(_offline_data.CITIES, json.dumps(cities))
        z.writestr(_offline_data.CONNECTOMES, "\n".join(lines) + "\n")
        z.writestr(_offline_data.KARATE, "\n".join("\t".join(str(int(v)) for v in row) for row in two_clubs()) + "\n")
    return path, C, cities


def two_clubs():
    """A 34-member friendship graph of two dense clubs (17 each) joined by one friendship."""
    A = np.zeros((34, 34), int)
    A[:17, :17] = A[17:, 17:] = 1
    A[0, 17] = A[17, 0] = 1
    np.fill_diagonal(A, 0)
    return A


@pytest.fixture
def wheel(tmp_path, monkeypatch):
    path, C, cities = fake_geomstats_wheel(tmp_path)
    monkeypatch.setenv("MANIFOLD_DP_GEOMSTATS_WHEEL", str(path))
    return C, cities


def test_connectomes_are_read_back_exactly(wheel):
    C, _ = wheel
    X, reason = _offline_data.load_connectomes()
    assert reason is None and X.shape == C.shape
    np.testing.assert_allclose(X, C, rtol=0, atol=1e-15)


def test_cities_become_unit_vectors_at_their_latitude(wheel):
    _, cities = wheel
    (points, names), reason = _offline_data.load_cities()
    assert reason is None and names == [c["city"] for c in cities]
    np.testing.assert_allclose(np.linalg.norm(points, axis=1), 1.0, atol=1e-15)
    np.testing.assert_allclose(np.degrees(np.arcsin(points[:, 2])), [c["lat"] for c in cities], atol=1e-12)


def test_a_missing_wheel_is_reported_not_raised(tmp_path, monkeypatch):
    monkeypatch.setenv("MANIFOLD_DP_GEOMSTATS_WHEEL", str(tmp_path / "absent.whl"))
    assert _offline_data.load_cities()[0] is None
    loaded, reason = _connectomes()
    assert loaded is None and "MANIFOLD_DP_GEOMSTATS_WHEEL" in reason
    assert "could not run" in _cities_text({"unavailable": reason})
    monkeypatch.delenv("MANIFOLD_DP_GEOMSTATS_WHEEL")
    monkeypatch.setenv("MANIFOLD_DP_CACHE", str(tmp_path))
    path, reason = _offline_data.geomstats_wheel(download=False)
    assert path is None and str(tmp_path) in reason


def test_connectome_records_are_clipped_into_the_public_ball(wheel):
    (records, centre, radius, seen), reason = _connectomes()
    from manifold_dp.manifolds import SPDLogEuclidean

    m = SPDLogEuclidean(28)
    assert reason is None and len(records) == 30 - 20
    assert np.all(m.dist(centre, records) <= radius * (1 + 1e-9)) and seen > 0


def test_the_karate_embedding_puts_friends_closer_than_strangers(wheel):
    from manifold_dp import Hyperbolic

    X, reason = _offline_data.load_karate_embedding(epochs=200)
    H, A = Hyperbolic(2), two_clubs()
    assert reason is None and X.shape == (34, 3) and bool(np.all(H.belongs(X)))
    D = H.dist(X[:, None], X[None, :])
    strangers = (A == 0) & ~np.eye(34, dtype=bool)
    assert D[A > 0].mean() < 0.5 * D[strangers].mean()
    Y, _ = _offline_data.load_karate_embedding(epochs=200)
    assert np.array_equal(X, Y)  # deterministic
