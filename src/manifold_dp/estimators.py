"""scikit-learn estimators for private statistics on manifolds, for pyRiemann pipelines.

- ``PrivateFrechetMean``: ``fit`` is one call of ``private_frechet_mean`` (the only way a mean
  enters the estimator); ``transform`` maps records to the tangent space at the released mean,
  like pyRiemann's ``TangentSpace``.
- ``PrivateTangentPCA``: ``fit`` is one call of ``privacy.tangent_pca.private_tangent_pca``;
  ``transform`` gives the records' coordinates in the private principal basis.
- ``PrivateMDM``: a minimum-distance-to-mean classifier with one private Fréchet mean per class
  (parallel composition; labels and class counts are public — docs/pipelines.md).

This is the only module of the package that imports scikit-learn; the core runs without it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

import numpy as np
from scipy import sparse

try:
    from sklearn.base import BaseEstimator, ClassifierMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_consistent_length, check_is_fitted, column_or_1d, validate_data
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("manifold_dp.estimators needs scikit-learn >= 1.6: pip install 'manifold_dp[estimators]'") from error

from ._random import RngLike, as_generator
from ._typing import Array, FloatArray
from .manifolds import REGISTRY
from .manifolds.base import Manifold
from .privacy import private_frechet_mean
from .privacy.accounting import PrivacyAccountant
from .privacy.certificate import JsonRecord
from .privacy.release import ReleaseWarning, record_count
from .privacy.tangent_pca import private_tangent_pca
from .records import is_dask

__all__ = ["PrivateFrechetMean", "PrivateTangentPCA", "PrivateMDM", "MDMCertificate", "EXPECTED_FAILED_CHECKS",
           "MDM_EXPECTED_FAILED_CHECKS"]

FITTED = ("mean_", "certificate_", "release_", "manifold_")

# scikit-learn's estimator checks this estimator fails on purpose, each with its reason (also in the
# class docstring, Notes). Pass it as ``expected_failed_checks`` to ``check_estimator`` or
# ``parametrize_with_checks``.
EXPECTED_FAILED_CHECKS = {
    "check_dtype_object": (
        "object arrays are refused from their dtype, a public property of the container; converting them "
        "cell by cell, as the check wants, would make whether a release fails depend on the values"),
}
MDM_EXPECTED_FAILED_CHECKS = dict(EXPECTED_FAILED_CHECKS)  # PrivateMDM's, with the same reasons


class _PrivateEstimator:
    """What the private estimators share: the records' layouts and the manifold sized from them,
    the noise source, and clones and pickles that never duplicate a budget or a noise stream."""

    if TYPE_CHECKING:  # the parameters and fitted attributes of every private estimator
        manifold: Manifold | str
        center: Any
        accountant: PrivacyAccountant | None
        random_state: RngLike
        manifold_: Manifold

    def _fit_records(self, X: Any) -> tuple[Manifold, Any, Any, RngLike]:
        """The records of ``fit`` in the manifold's layout: ``(manifold, records, center, rng)``.
        Shapes, dtypes and parameters only: public."""
        _refuse_sparse(X, type(self).__name__)
        records = _as_array(X)
        manifold = self._sized_manifold(records)
        records = _in_point_layout(manifold, records)
        center = manifold.origin if _is_origin(self.center) else self.center
        rng = _noise_source(self.random_state)
        _check_seed(self.random_state, self.accountant)
        return manifold, records, center, rng

    def _points(self, X: Any) -> Array:
        """``X`` at ``transform``/``predict`` time as points of ``manifold_`` (not private: the
        records themselves)."""
        _refuse_sparse(X, type(self).__name__)
        records = _as_array(X)
        if len(np.shape(records)) < 2:
            raise ValueError(f"X must be a 2-D (or 3-D) array of records, got shape {np.shape(records)}. "
                             "Reshape your data, e.g. X.reshape(1, -1) for a single record")
        validate_data(self, X, reset=False, skip_check_array=True)
        manifold = self.manifold_
        records = _in_point_layout(manifold, records)
        record_count(manifold, records)  # the library's container and layout check
        return manifold.as_points(np.asarray(records))

    def _sized_manifold(self, records: Any) -> Manifold:
        """``manifold`` itself, or the registered manifold its name sizes from ``records.shape``."""
        if not isinstance(self.manifold, str):
            return self.manifold  # the library checks that it is a manifold
        if self.manifold not in REGISTRY:
            raise ValueError(f"manifold must be a manifold_dp manifold or one of {tuple(REGISTRY)}, got {self.manifold!r}")
        if getattr(records, "dtype", None) is None:
            raise TypeError(f"X must be a numeric array of records, got {type(records).__name__}")
        shape = tuple(records.shape)
        if len(shape) < 2:
            raise ValueError(f"manifold={self.manifold!r} is sized from the records: X must have shape (n, width), "
                             f"got {shape}")
        width = math.prod(shape[1:]) * (2 if np.iscomplexobj(records) else 1)
        if width == 0:
            raise ValueError(f"X has 0 feature(s) (shape={shape}) while a minimum of 1 is required "
                             f"to size manifold={self.manifold!r}")
        return REGISTRY[self.manifold].from_width(width)

    def __getstate__(self) -> Any:
        # a pickled Generator is a copy of its state: every joblib worker (n_jobs > 1) would draw the
        # same noise, which differencing across folds removes (found by an adversarial review)
        if isinstance(self.__dict__.get("random_state"), np.random.Generator):
            raise TypeError("an estimator whose random_state is a numpy Generator cannot be pickled (e.g. sent to "
                            "joblib workers): every copy would draw the same noise; use random_state=None")
        return super().__getstate__()

    def __sklearn_clone__(self) -> Any:
        # sklearn's clone deep-copies parameters: a copied accountant would let every clone spend the
        # budget afresh, and a copied Generator would give every clone (every cross-validation
        # fold) the same noise, which differencing removes. The clone shares both instead.
        without_shared = object.__new__(type(self))  # not copy.copy: that pickles (see __getstate__)
        without_shared.__dict__.update(self.__dict__)
        without_shared.accountant = None
        shared_rng = isinstance(self.random_state, np.random.Generator)
        if shared_rng:
            without_shared.random_state = None
        twin = super(_PrivateEstimator, without_shared).__sklearn_clone__()  # type: ignore[misc]  # BaseEstimator's (a mixin)
        twin.accountant = self.accountant
        if shared_rng:
            twin.random_state = self.random_state
        return twin

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()  # type: ignore[misc]  # BaseEstimator's (a mixin)
        tags.input_tags.allow_nan = True  # replaced by the centre, never refused (no error channel)
        tags.input_tags.three_d_array = True  # (n, k, k) covariance matrices, (n, k, 2) landmarks
        return tags


class PrivateFrechetMean(_PrivateEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Differentially private Fréchet mean of records on a Riemannian manifold.

    ``fit`` releases the mean through ``manifold_dp.private_frechet_mean``, with its guarantee,
    stages and certificate; ``transform`` maps records to tangent vectors at the released mean.

    Parameters
    ----------
    manifold : Manifold or str
        The space of the records (``Sphere(2)``, ``SPDAffineInvariant(k)``, ...), or a name of
        ``manifold_dp.manifolds.REGISTRY`` (``"euclidean"``, ``"sphere"``, ``"spd-ai"``, ...)
        whose size is read off the shape of ``X`` at ``fit`` (the shape is public).
    center : array-like or "origin"
        Public centre of the ball the records are clipped into, chosen without looking at the
        data. ``"origin"`` is the manifold's origin (north pole, identity, ``e0``, zero).
    radius : float
        Public radius of that ball, in the manifold's geodesic distance (radians on the unit
        sphere, ``‖Logm(C^-1/2 X C^-1/2)‖_F`` on affine-invariant SPD, ``‖Logm X − Logm C‖_F``
        on log-Euclidean SPD, Euclidean length on ``R^d``); below ``r*`` of the manifold.
        ``"auto"`` is passed on to ``private_frechet_mean``, which then spends part of ε on a
        private radius (shown in ``certificate_``).
    epsilon : float
        Privacy parameter ε > 0 spent by every ``fit``.
    delta : float or None, default=None
        δ for the Gaussian mechanisms (required there); pure ε-DP mechanisms report δ = 0.
    mechanism : str, default="laplace"
        ``"laplace"``, ``"kng"``, ``"tangent_gaussian"``, ``"ambient_laplace"``,
        ``"coordinate_laplace"`` or ``"ambient_gaussian"`` (see ``private_frechet_mean``).
    bound : {"tight", "rauch", "paper"}, default="tight"
        Which sensitivity bound: the smallest proven constant (the Rauch constant, on the sphere
        the proven spread constant where smaller), the Rauch constant, or the papers' ``2 − h``.
    calibration : {"analytic", "classical"}, default="analytic"
        Gaussian calibration of the (ε, δ) mechanisms.
    restrict : bool, default=False
        Restrict the Laplace law to the ball (σ = 2Δ/ε).
    round_to : "auto", float or None, default="auto"
        Public output grid (float-safe post-processing); ``None`` opts out with a warning.
    accountant : PrivacyAccountant or None, default=None
        Charged before the data are read, at every ``fit``. ``clone`` (and so ``GridSearchCV``,
        ``cross_validate``) shares it with the copies instead of copying the budget. An
        accountant cannot be pickled, so an estimator holding one runs with ``n_jobs=1`` only
        (a worker process would spend a copy of the budget); the ``TypeError`` says so.
    random_state : None, int, SeedSequence or numpy Generator, default=None
        Source of the noise: scikit-learn's name for the ``rng=`` argument of the functions
        (``private_frechet_mean(..., rng=...)``), with the same meaning. ``None``: fresh OS entropy at every fit
        (secure; use it for real releases). An int or ``SeedSequence``: reproducible, every fit draws the same noise, so
        releases that share it can be differenced to remove it — for tests and experiments only:
        a ``ReleaseWarning`` says so at every fit, and it is refused together with an
        ``accountant``. A ``Generator`` is used as it is, so refits continue its stream; clones
        (cross-validation folds) share it rather than copy it. A legacy ``RandomState`` is refused.

    Attributes
    ----------
    mean_ : ndarray
        The released private mean, a point of ``manifold_`` in its array layout (Kendall
        shapes: the complex pre-shape rotated against the public centre).
    certificate_ : Certificate
        What was released and under which guarantee (mechanism, theorem, ε, δ, sensitivity,
        scale, ...).
    release_ : PrivateRelease
        The release itself (``release_.point is mean_``).
    manifold_ : Manifold
        The manifold the release was made on (``manifold``, or the one its name sized).
    n_features_in_ : int
        ``X.shape[1]`` at fit (``k`` for ``(n, k, k)`` covariance matrices).
    feature_names_in_ : ndarray of str
        Column names, when ``X`` was a DataFrame with string column names.

    Notes
    -----
    **Privacy.** Each ``fit`` is one release: it spends ``(epsilon, delta)`` of the dataset's
    budget, and refitting, on the same or overlapping data, spends it again (with an
    ``accountant`` every fit is charged, and a fit the budget cannot carry raises
    ``BudgetExceededError`` before the data are read). Neighbouring datasets replace one
    record; ``n`` and the shape of ``X`` are public. Whether ``fit`` succeeds, which error it
    raises and what it warns depend on the public parameters and the shape and dtype of ``X``
    only: NaN, infinite or off-manifold records are replaced by the centre (they never make
    ``fit`` fail), records outside the ball are clipped into it. ``mean_`` and
    ``certificate_`` may be published.

    ``transform`` is post-processing on the data holder's side and its output is **not
    private**: it is the records themselves, as tangent vectors ``manifold.log(mean_, x)``
    flattened to real coordinates (``(n, k*k)`` for SPD matrices; real and imaginary parts
    interleaved for Kendall pre-shapes). Do not publish it, nor anything fitted on it.

    **Layouts.** ``X`` is ``(n, *point_shape)`` (``(n, k, k)`` covariance matrices as
    pyRiemann's ``Covariances`` makes them), a layout the manifold accepts from users (Kendall
    landmarks ``(n, k, 2)``), or those rows flattened (``(n, k*k)``, ``(n, 2k)``). Dask arrays
    go to the library as they are. ``transform`` expects the layout ``fit`` saw
    (``n_features_in_`` is ``X.shape[1]``, as in scikit-learn).

    **scikit-learn's estimator checks** pass (for ``manifold="euclidean", center="origin"``)
    except those in ``EXPECTED_FAILED_CHECKS``:

    - ``check_dtype_object``: object arrays are refused from their dtype, a public property;
      converting them cell by cell would make whether a release fails depend on the values.

    ``check_array_api_input`` skips itself unless ``SCIPY_ARRAY_API=1`` is set before SciPy is
    imported; with it set, it passes (tests/test_estimators.py runs it so, in a subprocess).
    The tag ``allow_nan`` is set because non-finite records are replaced, never refused (an
    error on NaN would be an error channel), so ``check_estimators_nan_inf`` does not run.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import SPDAffineInvariant
    >>> from manifold_dp.estimators import PrivateFrechetMean
    >>> covs = np.stack([np.eye(3) * s for s in np.linspace(0.8, 1.2, 50)])
    >>> est = PrivateFrechetMean(SPDAffineInvariant(3), center=np.eye(3), radius=1.0, epsilon=1.0,
    ...                          random_state=0).fit(covs)
    >>> est.mean_.shape, est.certificate_.mechanism
    ((3, 3), 'laplace')
    >>> est.transform(covs).shape
    (50, 9)
    """

    def __init__(self, manifold: Manifold | str, *, center: Any, radius: Any, epsilon: float, delta: float | None = None,
                 mechanism: str = "laplace", bound: str = "tight", calibration: str = "analytic", restrict: bool = False,
                 round_to: float | str | None = "auto", accountant: PrivacyAccountant | None = None,
                 random_state: RngLike = None) -> None:
        self.manifold = manifold
        self.center = center
        self.radius = radius
        self.epsilon = epsilon
        self.delta = delta
        self.mechanism = mechanism
        self.bound = bound
        self.calibration = calibration
        self.restrict = restrict
        self.round_to = round_to
        self.accountant = accountant
        self.random_state = random_state

    def fit(self, X: Any, y: Any = None) -> Self:
        """Release the private Fréchet mean of ``X`` (one release: spends ε; ``y`` is ignored)."""
        for name in FITTED:  # a failed refit must not leave the previous release looking like this one's
            self.__dict__.pop(name, None)
        _refuse_sparse(X, type(self).__name__)
        validate_data(self, X, skip_check_array=True)  # n_features_in_, feature names: the container only
        manifold, records, center, rng = self._fit_records(X)
        release = private_frechet_mean(
            records, manifold, center=center, radius=self.radius, epsilon=self.epsilon, delta=self.delta,
            mechanism=self.mechanism, bound=self.bound, calibration=self.calibration, restrict=self.restrict,
            round_to=self.round_to, accountant=self.accountant, rng=rng)
        self.manifold_ = manifold
        self.release_ = release
        self.certificate_ = release.certificate
        self.mean_ = release.point
        return self

    def transform(self, X: Any) -> FloatArray:
        """Tangent vectors ``log_{mean_}(x)`` of the records, flattened to ``(n, m)`` real coordinates.

        NOT private: the output is the records themselves (post-processing of the private mean
        on the data holder's side). Non-finite records give non-finite rows.
        """
        check_is_fitted(self, "mean_")
        points = self._points(X)
        tangent = np.asarray(self.manifold_.log(self.mean_, points))
        tangent = tangent.reshape(len(points), -1)
        if np.iscomplexobj(tangent):
            tangent = np.stack([tangent.real, tangent.imag], axis=-1).reshape(len(points), -1)
        return tangent.astype(float, copy=False)

    @property
    def _n_features_out(self) -> int:
        """Real coordinates of one tangent vector (names for ``get_feature_names_out``)."""
        shape = self.manifold_.point_shape
        complex_points = np.issubdtype(np.dtype(self.manifold_.dtype), np.complexfloating)
        return math.prod(shape) * (2 if complex_points else 1)


class PrivateTangentPCA(_PrivateEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Differentially private tangent PCA of records on a Riemannian manifold.

    ``fit`` is one call of ``manifold_dp.privacy.tangent_pca.private_tangent_pca``: a private
    Fréchet mean with ``mean_share`` of the budget, then the principal directions of the records'
    tangent vectors there by the Analyze-Gauss mechanism, in one ``(epsilon, delta)`` certificate
    (docs/pipelines.md). ``transform`` gives the records' coordinates in the private basis.

    Parameters
    ----------
    manifold : Manifold or str
        The space of the records, or a name of ``manifold_dp.manifolds.REGISTRY`` sized from
        ``X`` at ``fit`` (as for ``PrivateFrechetMean``).
    center : array-like or "origin"
        Public centre of the ball the records are clipped into.
    radius : float
        Public radius of that ball (a number; ``"auto"`` is not supported).
    epsilon, delta : float
        The total guarantee of every ``fit`` (``δ > 0``: the second moment is Gaussian).
    n_components : int or None, default=None
        Number of principal directions; ``None``: the manifold's dimension.
    mean_mechanism : str, default="auto"
        The mean's mechanism (``private_frechet_mean``'s ``mechanism``; ``"auto"``: chosen from
        public values).
    mean_share : float, default=0.5
        Share of ε (and of δ, if the mean's mechanism uses δ) spent on the mean.
    calibration : {"analytic", "classical"}, default="analytic"
        Gaussian calibration.
    accountant : PrivacyAccountant or None, default=None
        Charged for both parts before the data are read, at every ``fit``; shared by clones.
    random_state : None, int, SeedSequence or numpy Generator, default=None
        Source of the noise, as for ``PrivateFrechetMean`` (``None``: OS entropy; a fixed seed is
        for tests only, warned, and refused with an ``accountant``).

    Attributes
    ----------
    mean_ : ndarray
        The released private mean (a point of ``manifold_``).
    components_ : ndarray, shape ``(n_components_, *point_shape)``
        Orthonormal tangent vectors at ``mean_``, by decreasing explained variance.
    explained_variance_ : ndarray, shape ``(n_components_,)``
        The released eigenvalues of the tangent second moment (clipped at 0).
    certificate_ : TangentPCACertificate
        Both parts of the release, their budgets and their composition.
    release_ : TangentPCARelease
        The release itself.
    manifold_ : Manifold
    n_components_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str

    Notes
    -----
    **Privacy.** Every ``fit`` is one release of ``(epsilon, delta)``; neighbouring datasets
    replace one record; ``n`` and the shape of ``X`` are public; records are replaced and
    clipped as by ``private_frechet_mean``. ``mean_``, ``components_``,
    ``explained_variance_`` and ``certificate_`` may be published. ``transform`` is **not
    private**: it is the records themselves, in the private basis.

    **scikit-learn's estimator checks** pass (``manifold="euclidean", center="origin"``) except
    those in ``EXPECTED_FAILED_CHECKS``:

    - ``check_dtype_object``: as for ``PrivateFrechetMean``.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp.estimators import PrivateTangentPCA
    >>> X = np.random.default_rng(0).normal(size=(3000, 3)) * [1.0, 0.3, 0.1]
    >>> pca = PrivateTangentPCA("euclidean", center="origin", radius=4.0, epsilon=2.0, delta=1e-6, n_components=2,
    ...                         random_state=0).fit(X)
    >>> pca.components_.shape, pca.transform(X).shape
    ((2, 3), (3000, 2))
    """

    FITTED = ("mean_", "components_", "explained_variance_", "certificate_", "release_", "manifold_",
              "n_components_")

    def __init__(self, manifold: Manifold | str, *, center: Any, radius: float, epsilon: float, delta: float,
                 n_components: int | None = None, mean_mechanism: str = "auto", mean_share: float = 0.5,
                 calibration: str = "analytic", accountant: PrivacyAccountant | None = None,
                 random_state: RngLike = None) -> None:
        self.manifold = manifold
        self.center = center
        self.radius = radius
        self.epsilon = epsilon
        self.delta = delta
        self.n_components = n_components
        self.mean_mechanism = mean_mechanism
        self.mean_share = mean_share
        self.calibration = calibration
        self.accountant = accountant
        self.random_state = random_state

    def fit(self, X: Any, y: Any = None) -> Self:
        """Release the private mean and principal directions of ``X`` (one release; ``y`` is ignored)."""
        for name in self.FITTED:
            self.__dict__.pop(name, None)
        _refuse_sparse(X, type(self).__name__)
        validate_data(self, X, skip_check_array=True)
        manifold, records, center, rng = self._fit_records(X)
        k = manifold.dim if self.n_components is None else self.n_components
        release = private_tangent_pca(
            records, manifold, center=center, radius=self.radius, epsilon=self.epsilon, delta=self.delta,
            n_components=k, mean_mechanism=self.mean_mechanism, mean_share=self.mean_share,
            calibration=self.calibration, accountant=self.accountant, rng=rng)
        self.manifold_ = manifold
        self.release_ = release
        self.certificate_ = release.certificate
        self.mean_ = release.mean
        self.components_ = release.components
        self.explained_variance_ = release.explained_variance
        self.n_components_ = len(release.explained_variance)
        return self

    def transform(self, X: Any) -> FloatArray:
        """The records' coordinates in the private principal basis, ``(n, n_components_)``: the
        orthonormal tangent coordinates of ``log_{mean_}(x)`` projected on ``components_``.

        NOT private: the output is the records themselves (post-processing of the release on the
        data holder's side). Non-finite records give non-finite rows."""
        check_is_fitted(self, "components_")
        points = self._points(X)
        manifold = self.manifold_
        with np.errstate(all="ignore"):
            coordinates = manifold.to_tangent_coordinates(self.mean_, manifold.log(self.mean_, points))
        return np.asarray(coordinates, dtype=float) @ self.release_.component_coordinates.T

    @property
    def _n_features_out(self) -> int:
        return self.n_components_


@dataclass(frozen=True)
class MDMCertificate(JsonRecord):
    """What a ``PrivateMDM`` fit guarantees: ``(epsilon, delta)`` for the whole fit under the
    privacy model ``privacy_model`` (labels and class counts public), by parallel composition of
    the per-class releases in ``class_certificates`` (one ``Certificate`` per class, in the order
    of ``classes``); ``private_labels`` says what holds if the labels are private."""

    statistic: str
    classes: tuple
    epsilon: float
    delta: float
    composition: str
    privacy_model: str
    private_labels: str
    class_certificates: tuple

    def summary(self) -> str:
        lines = [f"private MDM: ({self.epsilon:g}, {self.delta:g})-DP class means of {len(self.classes)} classes",
                 f"  privacy model: {self.privacy_model}", f"  composition: {self.composition}",
                 f"  private labels: {self.private_labels}"]
        for label, cert in zip(self.classes, self.class_certificates):
            lines.append(f"  class {label}: n = {cert.n}, {cert.mechanism}, scale {cert.scale:.6g}")
        return "\n".join(lines)


MDM_PRIVACY_MODEL = ("neighbouring datasets replace one record's features and keep its label: the labels, the classes "
                     "and the class counts are public (each class's n is in its certificate)")
MDM_COMPOSITION = ("parallel composition: each record is in exactly one class and each class mean reads only its "
                   "class's records, so a neighbour changes one class mean; the fit is as private as one class release")
MDM_PRIVATE_LABELS = ("not covered: if a record's label may change too, two class means change (2·epsilon, 2·delta "
                      "by basic composition), and the class counts, which set each class's noise scale and are "
                      "published in the certificates, are not protected at all; make the labels public or release "
                      "the counts privately first")


class PrivateMDM(_PrivateEstimator, ClassNamePrefixFeaturesOutMixin, ClassifierMixin, TransformerMixin, BaseEstimator):
    """Minimum distance to mean classifier with differentially private class means.

    ``fit`` releases one private Fréchet mean per class (``private_frechet_mean``, each with the
    full ``(epsilon, delta)``: the classes are disjoint, so parallel composition makes the whole fit
    ``(epsilon, delta)``-DP); ``predict`` is the class of the nearest mean in the manifold's
    Riemannian distance, ``transform`` the distances to the class means, ``predict_proba`` the
    softmax of minus the squared distances (as pyRiemann's ``MDM``).

    Parameters
    ----------
    manifold, center, radius, epsilon, delta, mechanism, bound, calibration, restrict, round_to
        As for ``PrivateFrechetMean``, except that the ball is public and shared by every class:
        ``center`` a point (not ``"auto"``) and ``radius`` a number. For raw covariances (EEG) a
        public reference matrix — the Riemannian mean of public trials or of another session —
        makes a good centre; the identity or a multiple of it seldom does.
    accountant : PrivacyAccountant or None, default=None
        Charged once per ``fit`` (one class release's event: parallel composition), before the
        data are read; shared by clones.
    random_state : None, int, SeedSequence or numpy Generator, default=None
        As for ``PrivateFrechetMean``.

    Attributes
    ----------
    classes_ : ndarray
        The class labels (public).
    means_ : ndarray, shape ``(n_classes, *point_shape)``
        The released private class means.
    certificate_ : MDMCertificate
        The fit's guarantee, its privacy model and the per-class certificates.
    releases_ : tuple of PrivateRelease
    manifold_ : Manifold
    n_features_in_ : int

    Notes
    -----
    **Privacy model.** Neighbouring datasets replace one record's *features* and keep its label:
    labels, classes and per-class counts are public (each class's ``n`` is in its certificate
    and sets its noise). Each record is in one class and each mean reads only its class, so a
    neighbour changes one class mean: the fit is ``(epsilon, delta)``-DP (parallel composition),
    and the accountant is charged once per fit. **Private labels are not covered**: a record
    whose label may change moves between two classes (two means change: ``2·epsilon``,
    ``2·delta``), and the class counts are published exactly. ``means_`` and ``certificate_``
    may be published; ``predict``, ``predict_proba`` and ``transform`` are computed on the
    records given to them and are not private outputs about those records.

    **scikit-learn's estimator checks** pass (``manifold="euclidean", center="origin"``) except
    those in ``MDM_EXPECTED_FAILED_CHECKS``:

    - ``check_dtype_object``: as for ``PrivateFrechetMean``.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dp import SPDAffineInvariant
    >>> from manifold_dp.estimators import PrivateMDM
    >>> rng = np.random.default_rng(0)
    >>> X = np.stack([np.diag(rng.uniform(0.8, 1.2, 2)) * s for s in [1.0] * 50 + [3.0] * 50])
    >>> y = np.repeat([0, 1], 50)
    >>> mdm = PrivateMDM(SPDAffineInvariant(2), center=np.eye(2) * 1.7, radius=1.5, epsilon=1.0,
    ...                  random_state=0).fit(X, y)
    >>> mdm.means_.shape, float((mdm.predict(X) == y).mean())
    ((2, 2, 2), 1.0)
    """

    FITTED = ("means_", "classes_", "certificate_", "releases_", "manifold_")

    __init__ = PrivateFrechetMean.__init__  # the same parameters (sklearn reads this signature)

    def fit(self, X: Any, y: Any) -> Self:
        """Release one private mean per class (one release of ``(epsilon, delta)``; labels public)."""
        for name in self.FITTED:
            self.__dict__.pop(name, None)
        _refuse_sparse(X, type(self).__name__)
        validate_data(self, X, y, skip_check_array=True)
        manifold, records, center, rng = self._fit_records(X)
        if is_dask(records):
            raise ValueError("PrivateMDM splits the records by class in memory: Dask arrays are not supported")
        record_count(manifold, records)  # the library's container and layout check, before the labels
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        check_consistent_length(records, y)
        classes = np.unique(y)
        parts = [records[y == label] for label in classes]
        options = dict(center=center, radius=self.radius, epsilon=self.epsilon, delta=self.delta,
                       mechanism=self.mechanism, bound=self.bound, calibration=self.calibration,
                       restrict=self.restrict, round_to=self.round_to)
        _charge_parallel(self.accountant, manifold, parts, options)
        releases = tuple(private_frechet_mean(part, manifold, **options, rng=rng) for part in parts)
        first = releases[0].certificate
        self.manifold_ = manifold
        self.classes_ = classes
        self.releases_ = releases
        self.means_ = np.stack([r.point for r in releases])
        self.certificate_ = MDMCertificate(
            statistic="class_frechet_means", classes=tuple(str(c) for c in classes), epsilon=first.epsilon,
            delta=first.delta, composition=MDM_COMPOSITION, privacy_model=MDM_PRIVACY_MODEL,
            private_labels=MDM_PRIVATE_LABELS, class_certificates=tuple(r.certificate for r in releases))
        return self

    def transform(self, X: Any) -> FloatArray:
        """Riemannian distances from each record to each class mean, ``(n, n_classes)``; a
        non-finite record gets non-finite distances (and ``predict`` gives it ``classes_[0]``)."""
        check_is_fitted(self, "means_")
        points = self._points(X)
        manifold = self.manifold_
        leading = (slice(None), None) + (slice(None),) * len(manifold.point_shape)
        with np.errstate(all="ignore"):
            return np.asarray(manifold.dist(self.means_[None], points[leading]), dtype=float)

    def predict(self, X: Any) -> Array:
        """The class of the nearest private mean."""
        distances = self.transform(X)
        return self.classes_[np.argmin(distances, axis=1)]

    def predict_proba(self, X: Any) -> FloatArray:
        """``softmax(−d²)`` over the classes (pyRiemann's ``MDM``)."""
        scores = -self.transform(X) ** 2
        scores -= scores.max(axis=1, keepdims=True)
        weights = np.exp(scores)
        return weights / weights.sum(axis=1, keepdims=True)

    @property
    def _n_features_out(self) -> int:
        return len(self.classes_)


def _charge_parallel(accountant: PrivacyAccountant | None, manifold: Manifold, parts: Any, options: dict[str, Any]) -> None:
    """Charge one class release's event for the whole fit (parallel composition), before any
    record is read: every class's stage 1–2 (public: its count, the parameters) runs first, and
    the event that charges most is charged (all classes share ε and δ, so they are equal up to
    float rounding)."""
    from .privacy.frechet_mean import FRECHET_MEAN
    from .privacy.public import check_public

    if not _is_real_number(options["radius"]):
        raise ValueError(f"radius must be a number for PrivateMDM (radius='auto' is not supported), got {options['radius']!r}")
    events = []
    for part in parts:
        p = check_public(part, manifold, accountant=accountant, **{k: v for k, v in options.items() if k != "round_to"})
        events.append(FRECHET_MEAN.stages(manifold, p, p.given_radius, p.epsilon, options["round_to"])[0].measurement.event)
    if accountant is not None:
        accountant.charge(min(events, key=lambda e: getattr(e, "noise_multiplier", None) or e.noise_parameter))


def _is_real_number(value: object) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _is_origin(center: object) -> bool:
    return isinstance(center, str) and center == "origin"


def _refuse_sparse(X: Any, name: str = "PrivateFrechetMean") -> None:
    if sparse.issparse(X):
        raise TypeError(f"{name} does not accept sparse X: pass a dense array of records")


def _as_array(X: Any) -> Any:
    """``X`` as an array when numpy can read it (Dask arrays stay lazy, masked arrays stay masked
    for the library to refuse); otherwise ``X`` itself, for the library to refuse with its own error."""
    if is_dask(X):
        return X
    try:
        return np.asanyarray(X)
    except (ValueError, TypeError, OverflowError):
        return X


def _in_point_layout(manifold: Manifold, records: Any) -> Any:
    """Flattened rows reshaped into a layout of one point; complex records refused on a real
    manifold (scikit-learn's ValueError). Shapes and dtypes only: public."""
    dtype = getattr(records, "dtype", None)
    if dtype is None:
        return records
    kind = np.dtype(dtype).kind
    if kind == "c" and not np.issubdtype(np.dtype(manifold.dtype), np.complexfloating):
        raise ValueError(f"Complex data not supported: records of {manifold!r} are real")
    if len(records.shape) == 2 and kind in "biuf":
        for shape in (tuple(manifold.point_shape),) + tuple(manifold.user_point_shapes):
            if len(shape) > 1 and math.prod(shape) == records.shape[1]:
                return records.reshape((records.shape[0],) + shape)
    return records


def _check_seed(random_state: RngLike, accountant: PrivacyAccountant | None) -> None:
    """A fixed seed (an int or ``SeedSequence``) makes every fit draw the same noise: releases that
    share it are not independent, so their privacy does not compose — differences of two such
    releases on overlapping data (cross-validation folds, refits) are free of noise. Refused with
    an accountant, whose composition assumes independent noise; warned otherwise (public: the
    parameters only)."""
    if random_state is None or isinstance(random_state, np.random.Generator):
        return
    if accountant is not None:
        raise ValueError("random_state is a fixed seed: every fit would draw the same noise, so the accountant's "
                         "composition would not hold; use random_state=None (OS entropy) or a numpy Generator")
    warnings.warn("random_state is a fixed seed: every fit with it draws the same noise, so releases made with it "
                  "(refits, cross-validation folds) can be differenced to remove the noise; it is for tests and "
                  "experiments only — use random_state=None for releases anyone else will see", ReleaseWarning,
                  stacklevel=4)  # the caller of fit


def _noise_source(random_state: Any) -> RngLike:
    """``random_state`` → the library's ``rng``: ``None`` stays OS entropy; seeds and Generators
    pass; a legacy ``RandomState`` (sklearn's ``check_random_state``) is refused."""
    accepted = (int, np.integer, np.random.SeedSequence, np.random.Generator)
    if isinstance(random_state, (bool, np.bool_)) or not (random_state is None or isinstance(random_state, accepted)):
        raise TypeError("random_state must be None (OS entropy), an int seed, a SeedSequence or a numpy Generator, "
                        f"got {type(random_state).__name__}")
    if isinstance(random_state, (int, np.integer)) and random_state < 0:
        raise ValueError(f"random_state must be a non-negative int seed, got {int(random_state)}")
    return as_generator(random_state)
