"""The scikit-learn estimator: scikit-learn's own checks, a pyRiemann pipeline, seeds, the budget.

The estimator is a wrapper, so these tests check the wrapping: every fit is one release through
``private_frechet_mean`` (reproducible with an int seed, fresh with ``None``, charged every time,
clones share the budget), the layouts pyRiemann and the library use, and ``transform``'s tangent
vectors. The release itself is tested in test_privacy.py and test_contract_mechanisms.py.
"""

import doctest
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from pyriemann.estimation import Covariances
from scipy import sparse
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import check_estimator

import manifold_dp.estimators as estimators_module
from manifold_dp import Euclidean, KendallShape2D, PrivacyAccountant, SPDAffineInvariant, Sphere
from manifold_dp.estimators import EXPECTED_FAILED_CHECKS, PrivateFrechetMean
from manifold_dp.privacy import BudgetExceededError, ReleaseWarning

# the library tells the data holder how many records it clipped; these tests clip on purpose
pytestmark = pytest.mark.filterwarnings(r"ignore:of \d+ records.* clipped:UserWarning")

K = 4  # channels


def signals(n_trials=40, seed=0):
    """Seeded multichannel signals ``(n_trials, K, 256)`` whose covariances sit near ``A Aᵀ``."""
    rng = np.random.default_rng(seed)
    mixing = np.eye(K) + 0.2 * rng.standard_normal((K, K))
    return np.einsum("ij,njt->nit", mixing, rng.standard_normal((n_trials, K, 256)))


def spd_estimator(**kwargs):
    params = dict(center=np.eye(K), radius=1.5, epsilon=1.0, random_state=0) | kwargs
    return PrivateFrechetMean(SPDAffineInvariant(K), **params)


def vectors(n=30, d=3, seed=1):
    return np.random.default_rng(seed).normal(size=(n, d))


# --- scikit-learn's estimator checks ---------------------------------------------------------

def test_sklearn_estimator_checks_pass_except_the_documented_ones():
    est = PrivateFrechetMean("euclidean", center="origin", radius=1.0, epsilon=1.0)
    results = check_estimator(est, on_fail=None, on_skip=None, expected_failed_checks=EXPECTED_FAILED_CHECKS)
    names = {r["check_name"] for r in results}
    assert {"check_fit_idempotent", "check_transformer_general", "check_n_features_in_after_fitting",
            "check_estimators_pickle", "check_complex_data", "check_estimator_sparse_array"} <= names
    not_passed = {r["check_name"]: (r["status"], repr(r["exception"])) for r in results if r["status"] != "passed"}
    expected = {name: "xfail" for name in EXPECTED_FAILED_CHECKS}
    if os.environ.get("SCIPY_ARRAY_API") != "1":
        # scipy reads SCIPY_ARRAY_API when it is imported: this check runs in a subprocess below
        expected["check_array_api_input"] = "skipped"
    assert {name: status for name, (status, _) in not_passed.items()} == expected, not_passed
    for name, reason in EXPECTED_FAILED_CHECKS.items():  # each exception is documented, with its reason
        assert f"``{name}``" in PrivateFrechetMean.__doc__ and len(reason) > 40


def test_sklearn_array_api_check_passes_with_scipy_array_api_set():
    code = (
        "import json\n"
        "from sklearn.utils.estimator_checks import check_estimator\n"
        "from manifold_dp.estimators import EXPECTED_FAILED_CHECKS, PrivateFrechetMean, PrivateMDM, PrivateTangentPCA\n"
        "out = []\n"
        "for est in [PrivateFrechetMean('euclidean', center='origin', radius=1.0, epsilon=1.0),\n"
        "            PrivateTangentPCA('euclidean', center='origin', radius=1.0, epsilon=1.0, delta=1e-5),\n"
        "            PrivateMDM('euclidean', center='origin', radius=5.0, epsilon=1.0)]:\n"
        "    res = check_estimator(est, on_fail=None, on_skip=None, expected_failed_checks=EXPECTED_FAILED_CHECKS)\n"
        "    out.append([[r['check_name'], r['status']] for r in res])\n"
        "print(json.dumps(out))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=os.environ | {"SCIPY_ARRAY_API": "1"},
                         capture_output=True, text=True, check=True)
    for results in json.loads(out.stdout.strip().splitlines()[-1]):  # the three estimators
        statuses = dict(map(tuple, results))
        assert statuses["check_array_api_input"] == "passed"
        assert {name for name, status in statuses.items() if status != "passed"} == set(EXPECTED_FAILED_CHECKS)


def test_the_core_does_not_import_scikit_learn():
    code = ("import sys, manifold_dp, manifold_dp.privacy, manifold_dp.cli\n"
            "print(sorted(m for m in sys.modules if m.startswith('sklearn')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- a pyRiemann pipeline ------------------------------------------------------------------

def test_pyriemann_pipeline_releases_an_spd_mean_with_its_certificate():
    X = signals()
    pipe = make_pipeline(Covariances(), spd_estimator())
    pipe.fit(X)
    est = pipe[-1]
    manifold = SPDAffineInvariant(K)
    assert est.mean_.shape == (K, K)
    assert np.allclose(est.mean_, est.mean_.T, rtol=0, atol=1e-12)  # the library's projection: exact up to float
    assert np.linalg.eigvalsh(est.mean_).min() > 0
    assert manifold.check_point(est.mean_) == (True, "")
    assert est.release_.point is est.mean_ and est.release_.certificate is est.certificate_
    cert = est.certificate_
    assert (cert.mechanism, cert.epsilon, cert.delta, cert.n, cert.radius) == ("laplace", 1.0, 0.0, len(X), 1.5)
    assert est.n_features_in_ == K and est.manifold_ == manifold
    # the released mean lies near the covariances' mean (n = 40, σ = 2r/(nε) = 0.075)
    covs = Covariances().fit_transform(X)
    assert manifold.dist(est.mean_, covs).mean() < manifold.dist(np.eye(K), covs).mean()
    assert pipe.transform(X).shape == (len(X), K * K)


def test_it_replaces_tangent_space_in_a_classification_pipeline():
    X = signals(60, seed=3)
    y = np.repeat([0, 1], 30)
    X[y == 1, 0] *= 2.0  # class 1 has more power on channel 0
    pipe = make_pipeline(Covariances(), spd_estimator(), LogisticRegression()).fit(X, y)
    assert pipe.predict(X).shape == (60,)
    assert (pipe.predict(X) == y).mean() > 0.9


# --- seeds ----------------------------------------------------------------------------------

def test_refit_with_the_same_int_seed_reproduces_and_none_differs():
    covs = Covariances().fit_transform(signals())
    seeded = spd_estimator(random_state=7)
    first = seeded.fit(covs).mean_.copy()
    assert np.array_equal(seeded.fit(covs).mean_, first)
    assert np.array_equal(spd_estimator(random_state=7).fit(covs).mean_, first)
    assert not np.array_equal(spd_estimator(random_state=8).fit(covs).mean_, first)
    fresh = spd_estimator(random_state=None)
    a = fresh.fit(covs).mean_.copy()
    b = fresh.fit(covs).mean_.copy()
    assert not np.array_equal(a, b)


def test_a_generator_continues_its_stream_across_refits():
    X = vectors()
    est = PrivateFrechetMean(Euclidean(3), center=np.zeros(3), radius=2.0, epsilon=1.0,
                             random_state=np.random.default_rng(5))
    a, b = est.fit(X).mean_.copy(), est.fit(X).mean_.copy()
    twin = PrivateFrechetMean(Euclidean(3), center=np.zeros(3), radius=2.0, epsilon=1.0,
                              random_state=np.random.default_rng(5))
    assert not np.array_equal(a, b)
    assert np.array_equal(twin.fit(X).mean_, a) and np.array_equal(twin.fit(X).mean_, b)


def test_fit_is_one_call_of_private_frechet_mean_with_a_secure_default_source(monkeypatch):
    calls = []
    real = estimators_module.private_frechet_mean

    def spy(X, manifold, **kwargs):
        release = real(X, manifold, **kwargs)
        calls.append((kwargs, release))
        return release

    monkeypatch.setattr(estimators_module, "private_frechet_mean", spy)
    X = vectors()
    est = PrivateFrechetMean(Euclidean(3), center=np.zeros(3), radius=2.0, epsilon=0.5, mechanism="kng").fit(X)
    assert len(calls) == 1
    kwargs, release = calls[0]
    assert est.release_ is release and est.mean_ is release.point
    assert (kwargs["epsilon"], kwargs["mechanism"], kwargs["radius"]) == (0.5, "kng", 2.0)
    assert type(kwargs["rng"].bit_generator).__name__ == "PCG64DXSM"  # OS entropy (manifold_dp._random)
    est.set_params(random_state=3).fit(X)
    assert len(calls) == 2 and type(calls[1][0]["rng"]) is np.random.Generator


@pytest.mark.parametrize("bad, error", [(np.random.RandomState(0), TypeError), (True, TypeError), (-1, ValueError),
                                        (1.5, TypeError)])
def test_random_state_refuses_legacy_and_odd_sources(bad, error):
    est = PrivateFrechetMean(Euclidean(3), center=np.zeros(3), radius=2.0, epsilon=1.0, random_state=bad)
    with pytest.raises(error, match="random_state"):
        est.fit(vectors())


# --- the budget -----------------------------------------------------------------------------

def test_the_accountant_is_charged_at_every_fit():
    X = vectors()
    acc = PrivacyAccountant(epsilon=1.0)
    est = PrivateFrechetMean(Euclidean(3), center=np.zeros(3), radius=2.0, epsilon=0.25, accountant=acc,
                             random_state=np.random.default_rng(0))
    for fits in range(1, 5):
        est.fit(X)
        assert len(acc.events) == fits
        assert acc.spent()[0] == pytest.approx(0.25 * fits)
    with pytest.raises(BudgetExceededError):
        est.fit(X)
    assert len(acc.events) == 4
    with pytest.raises(NotFittedError):  # the refused refit leaves no earlier release behind
        est.transform(X)


def test_clones_share_the_accountant_instead_of_copying_the_budget():
    X = vectors()
    acc = PrivacyAccountant(epsilon=1.0)
    est = PrivateFrechetMean(Euclidean(3), center=np.zeros(3), radius=2.0, epsilon=0.5, accountant=acc)
    twin = clone(est)
    assert twin.accountant is acc and twin.get_params()["epsilon"] == 0.5
    twin.fit(X)
    clone(est).fit(X)
    assert acc.spent()[0] == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        est.fit(X)


# --- parameters, layouts, transform -------------------------------------------------------------

def test_parameters_are_stored_unchanged_and_checked_at_fit():
    center = np.array([0.0, 0.0, 1.0])
    est = PrivateFrechetMean(Sphere(2), center=center, radius=3.0, epsilon=-1.0, mechanism="nope")
    params = est.get_params()
    assert params["center"] is center and params["epsilon"] == -1.0 and params["mechanism"] == "nope"
    with pytest.raises(ValueError, match="epsilon must be"):
        est.fit(Sphere(2).random_point(center, 0.3, size=10, rng=0))
    est.set_params(epsilon=1.0)
    with pytest.raises(ValueError, match="mechanism must be one of"):
        est.fit(Sphere(2).random_point(center, 0.3, size=10, rng=0))
    est.set_params(mechanism="laplace")
    with pytest.raises(ValueError, match="radius"):
        est.fit(Sphere(2).random_point(center, 0.3, size=10, rng=0))
    with pytest.raises(ValueError, match="manifold must be a manifold_dp manifold or one of"):
        PrivateFrechetMean("torus", center="origin", radius=1.0, epsilon=1.0).fit(vectors())


def test_nonfinite_records_are_replaced_not_refused():
    X = vectors()
    with_nan, with_center = X.copy(), X.copy()
    with_nan[3] = np.nan
    with_center[3] = 0.0
    est = PrivateFrechetMean(Euclidean(3), center=np.zeros(3), radius=2.0, epsilon=1.0, random_state=4)
    assert np.array_equal(est.fit(with_nan).mean_, clone(est).fit(with_center).mean_)


def test_containers_the_library_refuses_stay_refused():
    X = vectors()
    est = PrivateFrechetMean(Euclidean(3), center=np.zeros(3), radius=2.0, epsilon=1.0, random_state=0)
    with pytest.raises(TypeError, match="masked array"):
        est.fit(np.ma.masked_array(X, mask=np.zeros_like(X, dtype=bool)))
    with pytest.raises(TypeError, match="dtype kind 'O'"):
        est.fit(X.astype(object))
    with pytest.raises(TypeError, match="sparse"):
        est.fit(sparse.csr_array(X))


def test_layouts_of_pyriemann_and_the_library_give_the_same_release():
    covs = Covariances().fit_transform(signals())
    reference = spd_estimator().fit(covs).mean_
    flat = spd_estimator().fit(covs.reshape(len(covs), -1))
    assert np.array_equal(flat.mean_, reference) and flat.n_features_in_ == K * K
    named = PrivateFrechetMean("spd-ai", center="origin", radius=1.5, epsilon=1.0, random_state=0).fit(covs)
    assert named.manifold_ == SPDAffineInvariant(K) and np.array_equal(named.mean_, reference)
    kendall = KendallShape2D(5)
    preshapes = kendall.random_point(kendall.origin, 0.2, size=20, rng=1)
    landmarks = kendall.to_user(preshapes)
    fits = [PrivateFrechetMean(m, center="origin", radius=0.3, epsilon=3.0, random_state=0).fit(x)
            for m, x in [(kendall, preshapes), (kendall, landmarks), ("kendall2d", landmarks.reshape(20, -1))]]
    assert all(np.array_equal(f.mean_, fits[0].mean_) for f in fits)


def test_transform_gives_tangent_vectors_at_the_private_mean():
    X = vectors()
    euclid = PrivateFrechetMean("euclidean", center="origin", radius=2.0, epsilon=1.0, random_state=0).fit(X)
    assert euclid.transform(X).shape == (30, 3)
    assert np.allclose(euclid.transform(X), X - euclid.mean_)
    covs = Covariances().fit_transform(signals())
    spd = spd_estimator().fit(covs)
    T = spd.transform(covs)
    assert T.shape == (len(covs), K * K) and T.dtype == np.float64
    assert np.allclose(T, SPDAffineInvariant(K).log(spd.mean_, covs).reshape(len(covs), -1))
    assert list(spd.get_feature_names_out()) == [f"privatefrechetmean{i}" for i in range(K * K)]
    kendall = KendallShape2D(5)
    landmarks = kendall.to_user(kendall.random_point(kendall.origin, 0.2, size=20, rng=1))
    shapes = PrivateFrechetMean(kendall, center="origin", radius=0.3, epsilon=3.0, random_state=0).fit(landmarks)
    V = kendall.log(shapes.mean_, kendall.as_points(landmarks))
    T = shapes.transform(landmarks)
    assert T.shape == (20, 10) and T.dtype == np.float64
    assert np.array_equal(T[:, 0::2], V.real) and np.array_equal(T[:, 1::2], V.imag)
    with pytest.raises(ValueError, match="X has 3 features, but PrivateFrechetMean is expecting 4"):
        spd.transform(covs[:, :3, :3])


def test_the_docstring_example_runs():
    result = doctest.testmod(estimators_module)
    assert result.failed == 0 and result.attempted >= 5


def test_a_fixed_seed_is_refused_with_an_accountant_and_warned_without():
    """An adversarial review reconstructed every record exactly from leave-one-out folds fitted with
    one int seed (or one Generator, copied into every clone): the folds' noise was identical, so
    differences of their means were noise-free, while the accountant recorded n composed releases.
    Composition assumes independent noise."""
    X = vectors()
    acc = PrivacyAccountant(epsilon=10.0)
    with pytest.raises(ValueError, match="fixed seed"):
        PrivateFrechetMean(Euclidean(3), center=np.zeros(3), radius=2.0, epsilon=0.5, accountant=acc,
                           random_state=0).fit(X)
    assert acc.spent()[0] == 0.0  # refused before anything was charged
    with pytest.warns(ReleaseWarning, match="fixed seed"):
        PrivateFrechetMean(Euclidean(3), center=np.zeros(3), radius=2.0, epsilon=0.5, random_state=0).fit(X)


def test_cross_validation_folds_draw_independent_noise_from_a_shared_generator():
    from sklearn.model_selection import LeaveOneOut, cross_validate

    rng = np.random.default_rng(7)
    n = 12
    X = rng.uniform(-0.5, 0.5, size=(n, 2))  # inside the ball: no clipping
    acc = PrivacyAccountant(epsilon=n * 0.5 + 1e-9)
    est = PrivateFrechetMean("euclidean", center="origin", radius=1.0, epsilon=0.5, accountant=acc,
                             random_state=np.random.default_rng(0))
    out = cross_validate(est, X, cv=LeaveOneOut(), scoring=lambda e, X, y=None: 0.0, return_estimator=True)
    means = np.array([e.mean_ for e in out["estimator"]])
    reconstructed = (n - 1) * (means[0] - means)  # = x_i − x_0 exactly if the folds shared their noise
    sigma = out["estimator"][0].certificate_.scale
    assert np.abs(reconstructed - (X - X[0])).max() > sigma  # the noise does not cancel
    assert acc.spent()[0] == pytest.approx(n * 0.5)


def test_a_generator_estimator_cannot_be_pickled_into_identical_copies():
    import pickle

    est = PrivateFrechetMean("euclidean", center="origin", radius=1.0, epsilon=0.5, random_state=np.random.default_rng(0))
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(est)
    pickle.dumps(PrivateFrechetMean("euclidean", center="origin", radius=1.0, epsilon=0.5))  # OS entropy: fine


# --- PrivateTangentPCA and PrivateMDM ----------------------------------------------------------

from pyriemann.classification import MDM  # noqa: E402

from manifold_dp.estimators import MDM_EXPECTED_FAILED_CHECKS, MDMCertificate, PrivateMDM, PrivateTangentPCA  # noqa: E402


def labelled_signals(n_per_class=30, seed=3):
    """Two classes of signals; class 1 has twice the power on channel 0 (covariances far apart)."""
    X = signals(2 * n_per_class, seed=seed)
    y = np.repeat([0, 1], n_per_class)
    X[y == 1, 0] *= 2.0
    return X, y


@pytest.mark.parametrize("est, expected_failed", [
    (PrivateTangentPCA("euclidean", center="origin", radius=1.0, epsilon=1.0, delta=1e-5), EXPECTED_FAILED_CHECKS),
    (PrivateMDM("euclidean", center="origin", radius=5.0, epsilon=1.0), MDM_EXPECTED_FAILED_CHECKS),
], ids=["PrivateTangentPCA", "PrivateMDM"])
def test_new_estimators_pass_sklearn_checks_except_the_documented_ones(est, expected_failed):
    results = check_estimator(est, on_fail=None, on_skip=None, expected_failed_checks=expected_failed)
    names = {r["check_name"] for r in results}
    assert {"check_fit_idempotent", "check_n_features_in_after_fitting", "check_estimators_pickle"} <= names
    if isinstance(est, PrivateMDM):
        assert {"check_classifiers_train", "check_classifiers_classes", "check_supervised_y_2d",
                "check_classifiers_regression_target"} <= names
    not_passed = {r["check_name"]: r["status"] for r in results if r["status"] != "passed"}
    expected = {name: "xfail" for name in expected_failed}
    if os.environ.get("SCIPY_ARRAY_API") != "1":
        expected["check_array_api_input"] = "skipped"
    assert not_passed == expected
    for name in expected_failed:
        assert f"``{name}``" in type(est).__doc__


def test_private_mdm_drops_into_a_pyriemann_pipeline_and_matches_mdm_at_large_epsilon():
    X, y = labelled_signals()
    # radius 2.6 holds every covariance (the farthest is 2.55 from I): no clipping, so the private means
    # approach pyRiemann's as epsilon grows
    pipe = make_pipeline(Covariances(), PrivateMDM(SPDAffineInvariant(K), center=np.eye(K), radius=2.6, epsilon=50.0,
                                                   random_state=0)).fit(X, y)
    reference = make_pipeline(Covariances(), MDM()).fit(X, y)
    assert (pipe.predict(X) == reference.predict(X)).mean() >= 0.95
    assert (pipe.predict(X) == y).mean() > 0.9
    est = pipe[-1]
    assert est.means_.shape == (2, K, K) and list(est.classes_) == [0, 1]
    assert SPDAffineInvariant(K).dist(est.means_, reference[-1].covmeans_).max() < 0.1


def test_private_mdm_distances_and_probabilities_are_pyriemanns_at_the_same_means():
    covs = Covariances().fit_transform(labelled_signals()[0])
    y = labelled_signals()[1]
    est = PrivateMDM(SPDAffineInvariant(K), center=np.eye(K), radius=1.5, epsilon=1.0, random_state=0).fit(covs, y)
    reference = MDM().fit(covs, y)
    est.means_ = reference.covmeans_  # same means: the rule must be pyRiemann's (Riemannian distance, softmax −d²)
    assert np.allclose(est.transform(covs), reference.transform(covs), rtol=1e-8)
    assert np.allclose(est.predict_proba(covs), reference.predict_proba(covs), rtol=1e-8)
    assert np.array_equal(est.predict(covs), reference.predict(covs))


def test_private_mdm_charges_one_release_per_fit_and_states_its_privacy_model():
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(60, 2))
    y = np.repeat(["a", "b", "c"], 20)
    acc = PrivacyAccountant(epsilon=1.0)
    est = PrivateMDM("euclidean", center="origin", radius=1.0, epsilon=0.5, accountant=acc,
                     random_state=np.random.default_rng(1)).fit(X, y)
    assert len(acc.events) == 1 and acc.spent()[0] == pytest.approx(0.5)  # parallel composition: three classes, one ε
    cert = est.certificate_
    assert isinstance(cert, MDMCertificate) and cert.classes == ("a", "b", "c")
    assert (cert.epsilon, cert.delta) == (0.5, 0.0)
    assert [c.n for c in cert.class_certificates] == [20, 20, 20]  # the counts are public and published
    assert "parallel composition" in cert.composition and "keep its label" in cert.privacy_model
    assert "2·epsilon" in cert.private_labels and "counts" in cert.private_labels
    assert json.loads(cert.to_json())["class_certificates"][0]["statistic"] == "frechet_mean"
    est.fit(X, y)
    with pytest.raises(BudgetExceededError):
        est.fit(X, y)
    assert len(acc.events) == 2
    with pytest.raises(NotFittedError):
        est.predict(X)
    with pytest.raises(ValueError, match="fixed seed"):
        PrivateMDM("euclidean", center="origin", radius=1.0, epsilon=0.5, accountant=PrivacyAccountant(5.0),
                   random_state=0).fit(X, y)


def test_private_mdm_charges_the_gaussian_event_once_for_unequal_classes():
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(50, 2))
    y = np.array([0] * 10 + [1] * 40)
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    PrivateMDM("euclidean", center="origin", radius=1.0, epsilon=1.0, delta=1e-5, mechanism="tangent_gaussian",
               accountant=acc, random_state=np.random.default_rng(0)).fit(X, y)
    assert len(acc.events) == 1 and acc.spent()[0] == pytest.approx(1.0, rel=1e-6)
    with pytest.raises(ValueError, match="radius='auto' is not supported"):
        PrivateMDM("euclidean", center="origin", radius="auto", epsilon=1.0).fit(X, y)


def test_private_tangent_pca_in_a_pipeline_with_its_certificate():
    X, y = labelled_signals(40)
    pca = PrivateTangentPCA(SPDAffineInvariant(K), center=np.eye(K), radius=1.5, epsilon=5.0, delta=1e-5,
                            n_components=3, random_state=0)
    pipe = make_pipeline(Covariances(), pca, LogisticRegression()).fit(X, y)
    est = pipe[-2]
    assert est.components_.shape == (3, K, K) and est.explained_variance_.shape == (3,)
    assert est.certificate_.n_components == 3 and est.certificate_.epsilon == pytest.approx(5.0)
    Z = make_pipeline(Covariances(), clone(pca)).fit_transform(X)
    assert Z.shape == (len(X), 3)
    assert list(est.get_feature_names_out()) == ["privatetangentpca0", "privatetangentpca1", "privatetangentpca2"]
    assert (pipe.predict(X) == y).mean() > 0.9
    # transform: tangent coordinates at the private mean, projected on the private basis
    covs = Covariances().fit_transform(X)
    M = SPDAffineInvariant(K)
    coords = M.to_tangent_coordinates(est.mean_, M.log(est.mean_, covs))
    assert np.allclose(est.transform(covs), coords @ est.release_.component_coordinates.T)


def test_private_tangent_pca_accountant_and_seed_rules():
    X = vectors()
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    est = PrivateTangentPCA(Euclidean(3), center=np.zeros(3), radius=2.0, epsilon=0.5, delta=1e-5, n_components=2,
                            accountant=acc)
    clone(est).fit(X)
    est.fit(X)
    assert len(acc.events) == 4 and acc.spent()[0] <= 1.0 + 1e-9
    with pytest.raises(BudgetExceededError):
        est.fit(X)
    with pytest.raises(NotFittedError):
        est.transform(X)
    with pytest.raises(ValueError, match="fixed seed"):
        PrivateTangentPCA(Euclidean(3), center=np.zeros(3), radius=2.0, epsilon=0.5, delta=1e-5, accountant=acc,
                          random_state=0).fit(X)
    with pytest.raises(ValueError, match="n_components must be between 1"):
        PrivateTangentPCA(Euclidean(3), center=np.zeros(3), radius=2.0, epsilon=0.5, delta=1e-5, n_components=4).fit(X)


def test_estimators_are_exported_lazily_from_the_package():
    import manifold_dp

    assert manifold_dp.PrivateMDM is PrivateMDM and manifold_dp.PrivateTangentPCA is PrivateTangentPCA
    with pytest.raises(AttributeError):
        manifold_dp.PrivateNothing


def test_an_estimator_holding_an_accountant_refuses_to_be_pickled_and_says_why():
    import pickle

    from sklearn.model_selection import GridSearchCV

    S = Sphere(2)
    est = PrivateFrechetMean(S, center=S.origin, radius=0.4, epsilon=0.1, accountant=PrivacyAccountant(10.0))
    with pytest.raises(TypeError, match=r"PrivacyAccountant cannot be pickled.*n_jobs"):
        pickle.dumps(est)
    # joblib wraps the TypeError; the traceback it chains still names the reason
    X = S.random_point(S.origin, 0.3, size=60, rng=0)
    search = GridSearchCV(est, {"radius": [0.3, 0.4]}, n_jobs=2, cv=2, scoring=lambda *args: 0.0)
    with pytest.raises(Exception) as info:
        search.fit(X)
    chain, err = [], info.value
    while err is not None:
        chain.append(str(err))
        err = err.__cause__ or err.__context__
    assert any("PrivacyAccountant cannot be pickled" in text for text in chain)


def test_the_import_error_names_an_extra_that_exists():
    import pathlib
    import re
    import tomllib

    source = pathlib.Path(estimators_module.__file__).read_text()
    extras = tomllib.loads((pathlib.Path(__file__).parents[1] / "pyproject.toml").read_text())
    named = re.findall(r"manifold_dp\[(\w+)\]", source)
    assert named and set(named) <= set(extras["project"]["optional-dependencies"])
