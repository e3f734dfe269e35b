"""The Gaussian calibrations' root search (``calibration.bracketed_root``) against
``scipy.optimize.brentq``: the same float, so every analytic σ and Gaussian ε is unchanged."""

import numpy as np
import pytest
import scipy.optimize

from manifold_dp.privacy.accounting import gaussian_epsilon
from manifold_dp.privacy.calibration import analytic_gaussian_sigma, bracketed_root, gaussian_delta


def _bracket(f, lo=-10.0, hi=10.0):
    while f(lo) < 0:
        lo -= 10.0
    while f(hi) > 0:
        hi += 10.0
    return lo, hi


def test_analytic_sigma_roots_equal_brentq_on_a_grid():
    for epsilon in np.geomspace(1e-3, 30.0, 9):
        for delta in [*np.geomspace(1e-12, 0.3, 7), 1e-100, 1e-200, 1e-300]:  # tiny δ: f's product underflows
            for sens in (1e-4, 1e-3, 0.37, 1.0, 55.0):
                f = lambda log_s: gaussian_delta(np.exp(log_s) * sens, sens, epsilon) - delta
                lo, hi = _bracket(f)
                ours = bracketed_root(f, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=500)
                assert ours == scipy.optimize.brentq(f, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=500), (epsilon, delta, sens)


def test_gaussian_epsilon_roots_equal_brentq_on_a_grid():
    for z in np.geomspace(0.05, 100.0, 15):
        for delta in [*np.geomspace(1e-12, 0.3, 9), 1e-150, 1e-300]:
            f = lambda e: gaussian_delta(z, 1.0, e) - delta
            if f(0.0) <= 0:
                continue
            hi = 1.0
            while f(hi) > 0:
                hi *= 2.0
            assert bracketed_root(f, 0.0, hi, xtol=1e-13) == scipy.optimize.brentq(f, 0.0, hi, xtol=1e-13), (z, delta)


@pytest.mark.parametrize(("f", "a", "b"), [(np.cos, 0.0, 3.0), (lambda x: x**3 - 2 * x - 5, 2.0, 3.0),
                                           (lambda x: np.exp(x) - 10.0, -5.0, 20.0), (lambda x: np.tanh(50 * (x - 0.3)), -2.0, 5.0),
                                           (lambda x: x, -1.0, 1.0), (lambda x: x - 1.0, 1.0, 4.0)])
@pytest.mark.parametrize("xtol", [1e-14, 1e-8, 1e-3])
def test_the_steps_are_brentq_s_on_other_functions(f, a, b, xtol):
    assert bracketed_root(f, a, b, xtol=xtol) == scipy.optimize.brentq(f, a, b, xtol=xtol)


def test_a_bad_bracket_and_no_convergence_raise():
    with pytest.raises(ValueError, match="opposite signs"):
        bracketed_root(lambda x: x * x + 1.0, -1.0, 1.0, xtol=1e-12)
    with pytest.raises(RuntimeError, match="maxiter=2"):
        bracketed_root(lambda x: x**3 - 2 * x - 5, 2.0, 3.0, xtol=1e-14, maxiter=2)


def test_the_calibrations_no_longer_import_scipy_optimize():
    import subprocess
    import sys

    code = ("import sys; from manifold_dp.privacy.calibration import analytic_gaussian_sigma; "
            "from manifold_dp.privacy.accounting import gaussian_epsilon; "
            "analytic_gaussian_sigma(1.0, 1e-6, 0.01); gaussian_epsilon(3.0, 1e-6); "
            "print('scipy.optimize' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
    assert analytic_gaussian_sigma(1.0, 1e-6) > 0 and gaussian_epsilon(3.0, 1e-6) > 0


@pytest.mark.parametrize("delta", [1e-300, 5e-301, 1e-250])
def test_the_analytic_calibration_ends_for_a_delta_far_in_the_tail(delta):
    """δ = 1e-300 is computed to a few digits only: the rounding-up steps grow, so the calibration
    ends (it searched for ever before) and its σ still satisfies the constraint."""
    sigma = analytic_gaussian_sigma(0.9, delta)
    assert np.isfinite(sigma) and gaussian_delta(sigma, 1.0, 0.9) <= delta
