"""Private tangent PCA: the Analyze-Gauss scale and sensitivity, utility, composition, an audit.

The scale is checked against closed forms written here (the classical Gaussian ``σ`` and the
exact Gaussian ``δ(ε)`` curve of Balle & Wang 2018, Thm 8); the sensitivity ``√2·C²/n`` on
worst-case neighbour pairs; the audit distinguishes a worst-case pair of datasets through the
public function and catches a variant with half the noise.
"""

import json
import math

import numpy as np
import pytest
from scipy.linalg import subspace_angles
from scipy.stats import beta, norm

import manifold_dp.privacy.tangent_pca as tangent_pca
from manifold_dp import Euclidean, KendallShape2D, PrivacyAccountant, SPDAffineInvariant, Sphere
from manifold_dp.manifolds import REGISTRY
from manifold_dp.privacy import BudgetExceededError, InvalidRecordsError, ReleaseWarning, measurements
from manifold_dp.privacy.tangent_pca import private_tangent_pca, second_moment_sensitivity

pytestmark = pytest.mark.filterwarnings(r"ignore:of \d+ records.* clipped:UserWarning",
                                        "ignore:.*mostly noise:UserWarning")


def upper(M):
    """The vector Analyze-Gauss perturbs: the upper triangle, diagonal included."""
    return M[np.triu_indices(M.shape[-1])]


def gaussian_delta(sigma, sensitivity, epsilon):
    """Balle & Wang 2018, Thm 8, written out independently of the library."""
    a, b = sensitivity / (2 * sigma), epsilon * sigma / sensitivity
    return norm.cdf(a - b) - math.exp(epsilon) * norm.cdf(-a - b)


def euclidean_release(n=200, d=3, seed=0, **kwargs):
    X = np.random.default_rng(seed).uniform(-0.5, 0.5, size=(n, d))
    params = dict(center=np.zeros(d), radius=1.0, epsilon=1.0, delta=1e-5, n_components=2, rng=1) | kwargs
    return X, private_tangent_pca(X, Euclidean(d), **params)


# --- the scale and the sensitivity -----------------------------------------------------------

def test_clip_norm_and_sensitivity_follow_the_stated_formulas():
    X, rel = euclidean_release()
    sm = rel.certificate.second_moment
    C = min(np.linalg.norm(rel.mean) + 1.0, math.inf)  # ρ(μ̃, center) + radius on R^d
    assert sm.clip_norm == pytest.approx(C, rel=1e-15)
    closed = math.sqrt(2) * C**2 / len(X)
    assert closed <= sm.sensitivity <= closed * (1 + 1e-9)  # only the float slack on top
    assert sm.dimension == 3 and sm.mechanism == "analyze_gauss"
    S = Sphere(2)
    near = S.exp(S.origin, np.array([2.0, 0.0, 0.0]))  # ρ(μ̃, center) + r beyond π: the cap is the whole sphere
    assert tangent_pca.tangent_clip_norm(S, near, S.origin, 1.2) == pytest.approx(math.pi)


def test_classical_scale_equals_the_dwork_roth_closed_form():
    _, rel = euclidean_release(epsilon=0.8, mean_share=0.5, calibration="classical")
    sm = rel.certificate.second_moment
    assert sm.epsilon == pytest.approx(0.4) and sm.delta == 1e-5  # a pure mean leaves all of δ
    assert sm.scale == pytest.approx(sm.sensitivity * math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.4, rel=1e-12)


@pytest.mark.parametrize("epsilon, delta", [(1.0, 1e-5), (6.0, 1e-8), (0.3, 1e-3)])
def test_analytic_scale_is_the_smallest_meeting_the_exact_gaussian_curve(epsilon, delta):
    _, rel = euclidean_release(epsilon=epsilon, delta=delta, mean_share=0.25)
    sm = rel.certificate.second_moment
    assert sm.epsilon == pytest.approx(0.75 * epsilon, rel=1e-15)
    assert gaussian_delta(sm.scale, sm.sensitivity, sm.epsilon) <= delta * (1 + 1e-9)
    assert gaussian_delta(sm.scale * (1 - 1e-6), sm.sensitivity, sm.epsilon) > delta


def test_sensitivity_bound_holds_on_worst_case_neighbour_pairs():
    rng = np.random.default_rng(3)
    n, C = 7, 1.3
    for d in (2, 5, 9):
        bound = second_moment_sensitivity(n, C, d)
        v = rng.normal(size=(20000, d))
        w = rng.normal(size=(20000, d))
        v *= C * rng.uniform(size=(20000, 1)) ** 0.2 / np.linalg.norm(v, axis=1, keepdims=True)
        w *= C * rng.uniform(size=(20000, 1)) ** 0.2 / np.linalg.norm(w, axis=1, keepdims=True)
        diff = (np.einsum("ni,nj->nij", v, v) - np.einsum("ni,nj->nij", w, w)) / n
        iu = np.triu_indices(d)
        worst_random = np.linalg.norm(diff[:, iu[0], iu[1]], axis=1).max()
        assert worst_random <= bound
        e1, e2 = np.eye(d)[0] * C, np.eye(d)[1] * C  # orthogonal, norm C: the maximum √2·C²/n
        orthogonal = np.linalg.norm(upper(np.outer(e1, e1) - np.outer(e2, e2)) / n)
        assert orthogonal == pytest.approx(math.sqrt(2) * C**2 / n, rel=1e-14) and orthogonal <= bound
        assert worst_random < orthogonal  # random search does not beat the orthogonal pair
        antipodal = np.linalg.norm(upper(np.outer(e1, e1) - np.outer(-e1, -e1)))  # same outer product
        assert antipodal == 0.0


def test_tangent_rows_are_clipped_even_at_the_cut_locus():
    S = Sphere(2)
    mean = S.exp(S.origin, np.array([0.3, 0.1, 0.0]))
    records = np.stack([-mean, S.origin, S.exp(mean, np.array([0.0, 3.0, 0.0])), mean])  # antipode first
    C = 0.5
    rows = tangent_pca._tangent_rows(S, records, mean, C)
    assert rows.shape == (4, 2) and np.all(np.isfinite(rows))
    assert np.linalg.norm(rows, axis=1).max() <= C * (1 + 1e-12)
    assert np.linalg.norm(rows[-1]) < 1e-15  # the mean itself
    bad = tangent_pca._tangent_rows(Euclidean(2), np.array([[np.inf, 0.0], [1.0, 0.0]]), np.zeros(2), 2.0)
    assert np.array_equal(bad, [[0.0, 0.0], [1.0, 0.0]])  # a non-finite row contributes nothing


# --- utility: the principal subspace -------------------------------------------------------------

def test_principal_subspace_recovered_at_large_epsilon_on_euclidean_data():
    rng = np.random.default_rng(11)
    d, n = 6, 4000
    Q = np.linalg.qr(rng.normal(size=(d, d)))[0]
    X = (rng.normal(size=(n, d)) * [1.0, 0.7, 0.15, 0.1, 0.1, 0.05]) @ Q.T
    rel = private_tangent_pca(X, Euclidean(d), center=np.zeros(d), radius=5.0, epsilon=20.0, delta=1e-6,
                              n_components=2, rng=2)
    angles = subspace_angles(rel.components.T, Q[:, :2])
    assert angles.max() < 0.1
    assert rel.explained_variance == pytest.approx([1.0, 0.49], rel=0.15)
    noisy = private_tangent_pca(X, Euclidean(d), center=np.zeros(d), radius=5.0, epsilon=0.05, delta=1e-6,
                                n_components=2, rng=2)
    assert subspace_angles(noisy.components.T, Q[:, :2]).max() > 0.3  # the test can fail: small ε does not recover it


def test_principal_subspace_recovered_on_spd_matrices():
    M = SPDAffineInvariant(3)
    rng = np.random.default_rng(5)
    basis = np.linalg.qr(rng.normal(size=(6, 6)))[0]
    coords = (rng.normal(size=(3000, 6)) * [0.5, 0.3, 0.04, 0.03, 0.03, 0.02]) @ basis.T
    X = M.exp(np.eye(3), M.from_tangent_coordinates(np.eye(3), coords))
    rel = private_tangent_pca(X, M, center=np.eye(3), radius=2.5, epsilon=20.0, delta=1e-6, n_components=2, rng=4)
    # the non-private reference: tangent PCA of the same records at the released mean
    at_mean = M.to_tangent_coordinates(rel.mean, M.log(rel.mean, X))
    exact = np.linalg.eigh(at_mean.T @ at_mean / len(X))[1][:, ::-1][:, :2]
    assert subspace_angles(rel.component_coordinates.T, exact).max() < 0.1
    assert subspace_angles(rel.component_coordinates.T, basis[:, :2]).max() < 0.15
    # components are tangent vectors at the mean, orthonormal in the Riemannian metric
    gram = M.inner(rel.mean, rel.components[:, None], rel.components[None, :])
    assert np.allclose(gram, np.eye(2), atol=1e-10)


@pytest.mark.parametrize("manifold", [m for cls in REGISTRY.values() for m in cls.examples()], ids=repr)
def test_every_manifold_releases_orthonormal_tangent_components(manifold):
    center = manifold.origin
    radius = 0.5 * min(1.0, manifold.assumption_radius)
    X = manifold.random_point(center, radius * 0.8, size=300, rng=0)
    rel = private_tangent_pca(X, manifold, center=center, radius=radius, epsilon=5.0, delta=1e-5, n_components=2,
                              rng=1)
    assert rel.components.shape == (2,) + tuple(manifold.point_shape)
    gram = np.real(manifold.inner(rel.mean, rel.components[:, None], rel.components[None, :]))
    assert np.allclose(gram, np.eye(2), atol=1e-9)
    back = manifold.to_tangent_coordinates(rel.mean, rel.components)
    assert np.allclose(back, rel.component_coordinates, atol=1e-9)
    assert np.all(np.diff(rel.explained_variance) <= 0) and np.all(rel.explained_variance >= 0)
    assert rel.second_moment.shape == (manifold.dim, manifold.dim)
    assert np.array_equal(rel.second_moment, rel.second_moment.T)
    grid = rel.certificate.second_moment.output_grid_spacing
    assert np.array_equal(np.round(rel.second_moment / grid) * grid, rel.second_moment)


# --- one certificate, one charge ---------------------------------------------------------------

def test_certificate_composition_matches_the_accountant():
    X = np.random.default_rng(0).uniform(-0.5, 0.5, size=(300, 3))
    acc = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    rel = private_tangent_pca(X, Euclidean(3), center=np.zeros(3), radius=1.0, epsilon=1.5, delta=1e-5,
                              n_components=2, mean_share=0.2, accountant=acc, rng=np.random.default_rng(1))
    cert = rel.certificate
    assert len(acc.events) == 2  # the mean (pure ε) and the second moment (Gaussian), charged together
    assert acc.spent()[0] == pytest.approx(cert.composed_epsilon, rel=1e-12)
    assert (cert.mean.epsilon, cert.mean.delta) == (pytest.approx(0.3), 0.0)
    assert cert.second_moment.epsilon == pytest.approx(1.2) and cert.second_moment.delta == 1e-5
    assert cert.epsilon == pytest.approx(1.5) and cert.delta == 1e-5
    assert cert.composed_epsilon <= cert.epsilon * (1 + 1e-9)
    assert rel.mean_release.certificate is cert.mean
    # a Gaussian mean shares δ, and two Gaussians compose tighter than the sum (μ-GDP)
    acc2 = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    rel2 = private_tangent_pca(X, Euclidean(3), center=np.zeros(3), radius=1.0, epsilon=1.5, delta=1e-5,
                               n_components=2, mean_mechanism="tangent_gaussian", accountant=acc2,
                               rng=np.random.default_rng(1))
    c2 = rel2.certificate
    assert c2.mean.delta == pytest.approx(5e-6) and c2.second_moment.delta == pytest.approx(5e-6)
    assert c2.delta == pytest.approx(1e-5)
    assert acc2.spent()[0] == pytest.approx(c2.composed_epsilon, rel=1e-12)
    assert c2.composed_epsilon < 0.95 * c2.epsilon
    data = json.loads(cert.to_json())
    assert data["statistic"] == "tangent_pca" and data["second_moment"]["clip_norm"] == cert.second_moment.clip_norm
    assert data["mean"]["statistic"] == "frechet_mean" and data["schema"] == tangent_pca.SCHEMA_ID
    assert "Analyze Gauss" in cert.summary()


def test_the_accountant_is_charged_all_at_once_before_the_records_are_read(monkeypatch):
    X = np.random.default_rng(0).uniform(-0.5, 0.5, size=(50, 3))
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    read = []
    real = tangent_pca.release_statistic

    def spy(*args, **kwargs):
        read.append(len(acc.events))
        return real(*args, **kwargs)

    monkeypatch.setattr(tangent_pca, "release_statistic", spy)
    params = dict(center=np.zeros(3), radius=1.0, delta=1e-5, n_components=1, accountant=acc)
    with pytest.raises(BudgetExceededError):
        private_tangent_pca(X, Euclidean(3), epsilon=1.5, **params)
    assert acc.events == () and read == []  # nothing charged, nothing read
    private_tangent_pca(X, Euclidean(3), epsilon=0.6, **params)
    assert read == [2]  # both parts charged before the mean read the records
    with pytest.raises(BudgetExceededError):  # 0.4 left: the mean alone (0.3) would fit, the pair does not
        private_tangent_pca(X, Euclidean(3), epsilon=0.6, **params)
    assert len(acc.events) == 2 and read == [2]
    bad = X.copy()
    bad[0] = np.nan
    with pytest.raises(InvalidRecordsError):
        private_tangent_pca(bad, Euclidean(3), epsilon=0.1, strict=True, **params)
    assert len(acc.events) == 2


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(n_components=4), ValueError, "n_components must be between 1 and the manifold's dimension 3"),
    (dict(n_components=0), ValueError, "n_components"),
    (dict(n_components=True), TypeError, "n_components must be an int"),
    (dict(n_components=1.0), TypeError, "n_components must be an int"),
    (dict(epsilon=0.0), ValueError, "epsilon must be"),
    (dict(epsilon=math.inf), ValueError, "epsilon must be"),
    (dict(delta=None), ValueError, "delta is required"),
    (dict(delta=0.0), ValueError, "delta must be"),
    (dict(delta=1.0), ValueError, "delta must be"),
    (dict(mean_share=0.0), ValueError, "mean_share must be a number in"),
    (dict(mean_share=1.0), ValueError, "mean_share must be a number in"),
    (dict(mean_share=True), ValueError, "mean_share must be a number in"),
    (dict(radius="auto"), ValueError, "radius='auto' is not supported"),
    (dict(radius=-1.0), ValueError, "radius must be"),
    (dict(mean_mechanism="nope"), ValueError, "mechanism must be one of"),
    (dict(calibration="nope"), ValueError, "calibration must be"),
])
def test_refusals_quote_the_parameter(kwargs, error, match):
    X = np.zeros((10, 3))
    params = dict(center=np.zeros(3), radius=1.0, epsilon=1.0, delta=1e-5, n_components=2, rng=0) | kwargs
    with pytest.raises(error, match=match):
        private_tangent_pca(X, Euclidean(3), **params)
    with pytest.raises(TypeError, match="records first"):
        private_tangent_pca(Euclidean(3), X, **params)


def test_a_fixed_seed_with_an_accountant_is_warned():
    X = np.zeros((10, 2))
    with pytest.warns(ReleaseWarning, match="fixed seed"):
        private_tangent_pca(X, Euclidean(2), center=np.zeros(2), radius=1.0, epsilon=1.0, delta=1e-5, n_components=1,
                            accountant=PrivacyAccountant(5.0, 1e-3), rng=3)


def test_kendall_shapes_release_real_coordinates():
    K = KendallShape2D(6)
    X = K.random_point(K.origin, 0.25, size=400, rng=2)
    rel = private_tangent_pca(X, K, center=K.origin, radius=0.35, epsilon=10.0, delta=1e-5, n_components=3, rng=3)
    assert rel.component_coordinates.shape == (3, K.dim) and rel.component_coordinates.dtype == np.float64
    assert np.iscomplexobj(rel.components) and rel.certificate.second_moment.clip_norm <= math.pi / 2


# --- the audit ------------------------------------------------------------------------------------

AUDIT_N = 1000  # releases per dataset
AUDIT_ALPHA = 1e-3  # each Clopper-Pearson bound holds with probability 1 − α: a false alarm has probability ≤ 2α


def _audit_statistic(D, epsilon, delta, share, seed):
    """``n·(S̃₀₀ − S̃₁₁)`` minus the known records' contribution: the special record's part plus noise."""
    n = len(D)
    rng = np.random.default_rng(seed)
    out = np.empty(AUDIT_N)
    for i in range(AUDIT_N):
        rel = private_tangent_pca(D, Euclidean(2), center=np.zeros(2), radius=1.0, epsilon=epsilon, delta=delta,
                                  n_components=1, mean_share=share, rng=rng)
        S = rel.second_moment * n - (n - 1) * np.outer(rel.mean, rel.mean)  # the n − 1 records at 0
        out[i] = S[0, 0] - S[1, 1]
    return out


def _epsilon_lower_bound(a, b, threshold, delta):
    """ε_LB from the test "statistic > threshold": ``log((p_lo − δ)/q_hi)`` with Clopper-Pearson bounds."""
    k_p, k_q = int(np.sum(a > threshold)), int(np.sum(b > threshold))
    p_lo = beta.ppf(AUDIT_ALPHA, k_p, AUDIT_N - k_p + 1) if k_p else 0.0
    q_hi = beta.ppf(1 - AUDIT_ALPHA, k_q + 1, AUDIT_N - k_q) if k_q < AUDIT_N else 1.0
    return math.log(p_lo - delta) - math.log(q_hi) if p_lo > delta else -math.inf


@pytest.mark.slow
def test_audit_distinguishes_a_worst_case_pair_and_catches_half_the_noise(monkeypatch):
    """D and D' differ in one record, ``(1, 0)`` against ``(0, 1)`` (orthogonal, at the radius: the
    sensitivity's worst case); the other records sit at the centre. The statistic shifts by about
    ``2`` between them, with standard deviation ``√2·n·σ``. A test "statistic > threshold" at a
    threshold fixed in advance (1.45 standard deviations of the calibrated noise above D''s mean)
    gives a lower bound on ε holding with probability ≥ 1 − 2·10⁻³; the released (ε, δ) must
    not be below it, and a variant whose second moment has half the σ must be caught (its bound
    exceeds ε). δ = 0.1 makes the audit powerful at this size; the calibration is the same."""
    n, eps2, delta, eps1 = 1000, 2.0, 0.1, 0.2
    epsilon, share = eps1 + eps2, eps1 / (eps1 + eps2)
    D = np.zeros((n, 2))
    D[0] = [1.0, 0.0]
    D_prime = np.zeros((n, 2))
    D_prime[0] = [0.0, 1.0]
    sigma = measurements.gaussian_scale(1.0, eps2, delta) * math.sqrt(2) / n  # σ = z·Δ, Δ = √2·C²/n, C ≈ 1
    sigma_T = math.sqrt(2) * n * sigma  # the statistic's noise: n·(E₀₀ − E₁₁)
    threshold = -1.0 + 1.45 * sigma_T
    a = _audit_statistic(D, epsilon, delta, share, seed=1)
    b = _audit_statistic(D_prime, epsilon, delta, share, seed=2)
    assert abs(a.mean() - 1.0) < 0.25 and abs(b.mean() + 1.0) < 0.25  # the shift the design relies on
    assert _epsilon_lower_bound(a, b, threshold, delta) <= epsilon
    real = measurements.gaussian_scale
    monkeypatch.setattr(measurements, "gaussian_scale", lambda *args, **kwargs: real(*args, **kwargs) / 2)
    a_half = _audit_statistic(D, epsilon, delta, share, seed=3)
    b_half = _audit_statistic(D_prime, epsilon, delta, share, seed=4)
    assert _epsilon_lower_bound(a_half, b_half, threshold, delta) > epsilon


def test_a_second_moment_swamped_by_noise_is_warned_and_the_docstring_example_runs():
    X = np.random.default_rng(0).uniform(-0.5, 0.5, size=(20, 3))
    with pytest.warns(ReleaseWarning, match="components are mostly noise"):
        private_tangent_pca(X, Euclidean(3), center=np.zeros(3), radius=1.0, epsilon=0.1, delta=1e-5, n_components=1,
                            rng=0)
    import doctest

    result = doctest.testmod(tangent_pca)
    assert result.failed == 0 and result.attempted >= 4


def test_defaults_choose_the_mean_and_bound_the_variances():
    """δ is always given, so the mean's mechanism is ``auto`` by default (its certificate records the
    comparison; on SPD-LE(8) the tangent Gaussian, whose expected error is below the Laplace's);
    released variances never exceed ``C²``, the largest the clipped records allow, however noisy."""
    from manifold_dp import SPDLogEuclidean

    M = SPDLogEuclidean(8)
    X = M.random_point(M.origin, 0.3, size=60, rng=np.random.default_rng(0))
    with pytest.warns(ReleaseWarning):
        rel = tangent_pca.private_tangent_pca(X, M, center=M.origin, radius=2.0, epsilon=0.05, delta=1e-6,
                                              n_components=3, rng=0)
    mean = rel.certificate.mean
    assert mean.mechanism_selection is not None and mean.mechanism == mean.mechanism_selection.chosen
    assert mean.mechanism != "laplace"
    top = rel.certificate.second_moment.clip_norm ** 2
    assert np.all(rel.explained_variance <= top) and rel.explained_variance[0] == top  # clipped: the noise is huge


def test_delta_warnings_speak_of_the_whole_delta():
    """The second moment always spends δ: no "not used" warning for a pure-ε mean, and the 1/n
    warning is about the whole δ, once (the mean's share is not checked on its own)."""
    import warnings

    M = Euclidean(3)
    X = np.random.default_rng(0).normal(size=(400, 3)) * 0.3

    def said(delta, **kw):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tangent_pca.private_tangent_pca(X, M, center=np.zeros(3), radius=1.0, epsilon=1.0, delta=delta,
                                            n_components=1, rng=0, **kw)
        return [str(w.message) for w in caught if issubclass(w.category, ReleaseWarning) and "delta=" in str(w.message)]

    assert said(1e-6, mean_mechanism="laplace") == [] and said(1e-6) == []
    (large,) = said(0.004, mean_mechanism="laplace")
    assert large.startswith("delta=0.004 is at least 1/n = 0.0025")
