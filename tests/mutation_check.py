"""Named mutations of the privacy layer and the volume densities: each one weakens a guarantee, and
the test suite must kill every one.

    python tests/mutation_check.py            # all mutations, a table and the kill rate
    python tests/mutation_check.py --list     # their names
    python tests/mutation_check.py NAME ...   # some of them
    python tests/mutation_check.py NAME ... --tests FILE ...   # against some test files only (names first)
    python tests/mutation_check.py NAME ... --no-baseline       # skip the unmutated run (a suite known green)

Each mutation is applied to a copy of the repository (the working tree is never touched), the
privacy-relevant tests run there with ``-x`` (stop at the first failure): first the fast tests of
the files that name the mutated module, then all the fast ones, then, if they all pass, the slow
ones (``-m slow``: audits and power checks); the mutation counts as killed when any fails (the
baseline run shows the unmutated suite green, so the order changes the time, not the verdict). Exit status 1 if any survives.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = "src/manifold_dp/"
TESTS = ["tests/test_riemannian_gaussian.py", "tests/test_wrapped.py", "tests/test_contract_mechanisms.py", "tests/test_contract_manifolds.py", "tests/test_structure.py", "tests/test_accounting.py", "tests/test_samplers.py",
         "tests/test_radial_any_dimension.py", "tests/test_privacy.py", "tests/test_release_outcome_classes.py",
         "tests/test_record_preparation.py", "tests/test_input_validation.py", "tests/test_float_edge_cases.py",
         "tests/test_audit.py", "tests/test_paper_calibrations.py", "tests/test_auto_radius.py", "tests/test_estimators.py",
         "tests/test_ball_sampler.py", "tests/test_newton_certified.py", "tests/test_newton_spd.py", "tests/test_single_draw.py",
         "tests/test_sphere_series.py", "tests/test_sphere_kernels.py", "tests/test_private_ball.py",
         "tests/test_spread_constant.py", "tests/test_so3.py", "tests/test_median.py", "tests/test_minimal_space.py",
         "tests/test_hyperbolic_newton.py", "tests/test_profile_blocks.py",
         "tests/test_spd_matrix_free.py", "tests/test_dask.py", "tests/test_disk_cache.py",
         "tests/test_kendall_embedding.py", "tests/test_passes_match_reference.py", "tests/test_contract_statistics.py"]

# name: (file, text, replacement, what the mutation breaks[, how many occurrences it replaces])
MUTATIONS = {
    "gaussian-stages-full-mu": ("privacy/calibration.py",
                                "    stages = [_epsilon_for_multiplier(z / math.sqrt(w) * (1.0 + SHARED_MARGIN), stage_delta) for w in weights]",
                                "    stages = [_epsilon_for_multiplier(z * (1.0 + SHARED_MARGIN), stage_delta) for w in weights]",
                                "center='auto' under (ε, δ): each Gaussian stage gets the whole Gaussian budget"),
    "gaussian-round-full-epsilon": ("privacy/private_ball.py",
                                    "round_multipliers = tuple(gaussian_scale(1.0, s * eps, round_delta)",
                                    "round_multipliers = tuple(gaussian_scale(1.0, eps, round_delta)",
                                    "center='auto' under (ε, δ): each Gaussian re-centring round calibrated at the whole ε"),
    "ball-radius-search-not-charged": ("privacy/private_ball.py",
                                       "        events += ([gaussian_dp_event(z * (1.0 - 2.0**-50)) for z in radius_multipliers]",
                                       "        events += [] and ([gaussian_dp_event(z * (1.0 - 2.0**-50)) for z in radius_multipliers]",
                                       "center='auto' under (ε, δ): the noisy binary searches left out of the charge"),
    "radius-search-noise-halved": ("privacy/radius_selection.py", "+ sigma * float(rng.standard_normal())",
                                   "+ 0.5 * sigma * float(rng.standard_normal())",
                                   "the noisy binary search draws half the count noise its certificate states"),
    "radius-search-steps-uncounted": ("privacy/private_ball.py",
                                      "tuple(math.sqrt(steps) * z for z in radius_multipliers)",
                                      "tuple(z for z in radius_multipliers)",
                                      "the noisy binary search's K count queries calibrated as if they were one"),
    "radius-search-full-epsilon": ("privacy/private_ball.py",
                                   "z = gaussian_scale(1.0, composed[1][0] * epsilon, gaussian_stage_delta(",
                                   "z = gaussian_scale(1.0, epsilon, gaussian_stage_delta(",
                                   "center='auto' under (ε, δ): each noisy binary search calibrated at the whole ε"),
    "ball-auto-mechanism-counts-finite-records": ("privacy/private_ball.py",
                                                  "choice = choose_ball_mechanism(manifold, n=p.n,",
                                                  "choice = choose_ball_mechanism(manifold, n=int(np.all(np.isfinite("
                                                  "np.asarray(X, float).reshape(p.n, -1)), axis=1).sum()),",
                                                  "center='auto' with mechanism='auto': the choice reads how many "
                                                  "records are finite"),
    "radius-auto-mechanism-counts-finite-records": ("privacy/public.py",
                                                    "mechanism, selection = _auto_mechanism(manifold, n=n,",
                                                    "mechanism, selection = _auto_mechanism(manifold, n=int(np.all("
                                                    "np.isfinite(np.asarray(X, float).reshape(n, -1)), axis=1).sum()),",
                                                    "radius='auto' with mechanism='auto': the choice reads how many "
                                                    "records are finite"),
    "mean-sensitivity-flat-on-curved": ("privacy/sensitivity.py", "return 2.0 * radius * L / (n * h)",
                                        "return 2.0 * radius / n",
                                        "the Laplace mean's sensitivity without its curvature factor L/h (the flat 2r/n "
                                        "on a sphere)"),
    "sphere-injectivity-radius-doubled": ("manifolds/sphere.py",
                                          "    injectivity_radius = property(lambda self: np.pi * self.radius)",
                                          "    injectivity_radius = property(lambda self: 2 * np.pi * self.radius)",
                                          "the sphere declares twice its injectivity radius: r* and every curvature-"
                                          "dependent sensitivity bound built on it are wrong"),
    "spd-distances-read-the-block": ("manifolds/kernels/spd_passes.py",
                                     "            return cast(FloatArray, np.minimum(self._frame_distance(frame, u, log_w), cap))",
                                     "            ok = decomposed[1]\n"
                                     "            return cast(FloatArray, np.minimum(self._frame_distance(frame, u, log_w)\n"
                                     "                                               * (1.0 + float(np.mean(~ok))), cap))",
                                     "radius='auto' on SPD: a record's distance depends on the other records of its block "
                                     "(the quantile count's sensitivity exceeds 1)"),
    "delta-warning-counts-finite-records": ("privacy/release.py", "        n = record_count(manifold, X)",
                                            "        n = int(np.all(np.isfinite(np.asarray(X, float).reshape(len(X), -1)), "
                                            "axis=1).sum())",
                                            "the public warning on a delta of at least 1/n reads how many records are "
                                            "finite"),
    "delta-curve-float-raise-dropped": ("privacy/calibration.py", "DELTA_FLOAT_ERROR = 1e-7", "DELTA_FLOAT_ERROR = 0.0",
                                        "the Gaussian δ curve as float64 computes it, up to 1e-8 below the exact one"),
    "gaussian-round-noise-halved": ("privacy/ball_refine.py", "rng.normal(0.0, sigma, statistic.size)",
                                    "rng.normal(0.0, 0.5 * sigma, statistic.size)",
                                    "a Gaussian re-centring round draws half the noise its certificate states"),
    "first-stage-rounding-dropped": ("privacy/ball_first_stage.py",
                                     "    sens = exact * (1.0 + 2.0**-40) + 2.0 * mean_rounding(n, stage.dimension(manifold), n * exact * (1.0 + 2.0**-40))",
                                     "    sens = exact",
                                     "the private ball's first stage without its computed mean's rounding"),
    "ambient-rounding-unbounded": ("privacy/sensitivity.py",
                                   "    return 2.0 * r_e / check_n(n) + 2.0 * ambient_float_error(manifold, n=n, radius=radius, center=c)",
                                   "    return 2.0 * manifold.ambient_radius(c, radius) / check_n(n)",
                                   "the ambient sensitivity without the clip's and the mean's rounding (tiny radii: ε unbounded)"),
    "release-float-errors-raise": ("privacy/public.py", "        with np.errstate(all=\"ignore\"):\n            return function(*args, **kwargs)",
                                   "        return function(*args, **kwargs)",
                                   "a caller's np.seterr turns one record's underflow into an exception or a warning"),
    "kendall-preshape-unscaled": ("manifolds/kendall.py", "            w: Array = np.ldexp(z.real, -exponent) + 1j * np.ldexp(z.imag, -exponent)\n",
                                  "            w: Array = z\n", "landmarks near float64's end lose their shape (replaced as invalid)"),
    "kendall-chord-halved": ("manifolds/kendall.py",
                             "return float(math.sqrt(2.0) * math.sin(min(float(radius), math.pi / 2.0)))",
                             "return float(0.5 * math.sqrt(2.0) * math.sin(min(float(radius), math.pi / 2.0)))",
                             "the ambient mechanisms' sensitivity on Kendall shapes halved (the chord of the embedding)"),
    "gdp-tail-unchecked": ("privacy/gdp.py", "    if not delta[-1] < GDP_TAIL:  # beyond the grid's end",
                           "    if False:  # beyond the grid's end",
                           "μ-GDP certified though the profile at the grid's end is above GDP_TAIL (uncharged δ beyond it)"),
    "disk-cache-trusts-any-file": ("_disk_cache.py",
                                   "    return (stat.S_IFMT(info.st_mode) == kind and info.st_uid == os.getuid()\n"
                                   "            and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))",
                                   "    return True",
                                   "set-up values that bound privacy read from a file or directory others may write"),
    "disk-cache-follows-links": ("_disk_cache.py", "fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=leaf)",
                                 "fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK, dir_fd=leaf)",
                                 "a cached value read through a symbolic link to a file the cache does not own"),
    "disk-cache-any-argument": ("_disk_cache.py", "    return _exact(value)\n", "    return _exact(value) or repr(value)\n",
                                "any argument (records, unregistered spaces, numpy scalars) used as a key of the disk cache"),
    "disk-cache-not-keyed-by-code": ("_disk_cache.py", "        return base / _code_digest()", "        return base",
                                     "values of another version of the code read back from the disk cache"),
    "gradient-step-bound-halved": ("stats/frechet.py",
                                   "        lo, hi = (lo, mid) if mid >= bound(mid) * (1.0 + 1e-12) else (mid, hi)\n    return hi",
                                   "        lo, hi = (lo, mid) if mid >= bound(mid) * (1.0 + 1e-12) else (mid, hi)\n    return 0.5 * hi",
                                   "the gradient steps' Hessian bound below its own step's reach (descent lemma fails)"),
    "euclidean-overflow-unclipped": ("manifolds/kernels/euclidean_passes.py",
                                     "            far = ~finite_rows(v, 1) | ~(np.asarray(scale) > 0.0)",
                                     "            far = np.zeros(len(v), bool)",
                                     "a Euclidean record beyond float64 from the centre: NaN log (raise after the charge) or the centre"),
    "hyperbolic-row-norm-unscaled": ("manifolds/kernels/hyperbolic_passes.py",
                                     "            s = _row_norms(Y)  # a valid record far from the centre",
                                     "            s = np.sqrt(np.einsum('ij,ij->i', Y, Y))  # a valid record far from the centre",
                                     "hyperbolic preparation squares a far record's coordinates (overflow: NaN log mean, raise after the charge)"),
    "hyperbolic-lipschitz-halved": ("manifolds/kernels/hyperbolic_passes.py",
                                    "return (coth - D / math.sinh(D) ** 2) + (coth - 1.0 / D) * a",
                                    "return 0.5 * ((coth - D / math.sinh(D) ** 2) + (coth - 1.0 / D) * a)",
                                    "the Lipschitz bound of the Hessian on hyperbolic space halved (Newton schedule)"),
    "hyperbolic-centroid-bound-halved": ("manifolds/kernels/hyperbolic_passes.py",
                                         "return min(best * (1.0 + 1e-6), (sinh_d - D) / 2.0)",
                                         "return 0.5 * min(best * (1.0 + 1e-6), (sinh_d - D) / 2.0)",
                                         "the Lorentzian centroid's distance bound halved (Newton start on hyperbolic space)"),
    "hyperbolic-exp-not-stretching": ("manifolds/kernels/hyperbolic_passes.py", "expansion=1.0,", "expansion=0.0,",
                                      "hyperbolic exp taken 1-Lipschitz in the Newton recursion"),
    "laplace-halve-sigma": ("privacy/measurements.py", "(1.0 if footpoint_free else 2.0) * sensitivity / epsilon",
                            "0.5 * (1.0 if footpoint_free else 2.0) * sensitivity / epsilon", "every pure-ε scale halved"),
    "drop-factor-2": ("privacy/measurements.py", "(1.0 if footpoint_free else 2.0) * sensitivity", "1.0 * sensitivity",
                      "σ = Δ/ε where the normalising constant depends on the footpoint or the data"),
    "restricted-as-homogeneous": ("privacy/measurements.py", "footpoint_free=manifold.homogeneous and not restricted",
                                  "footpoint_free=manifold.homogeneous", "restricted Laplace at Δ/ε"),
    "kng-as-homogeneous": ("privacy/measurements.py", "sigma = pure_scale(sensitivity, epsilon, footpoint_free=False)\n    flat",
                           "sigma = pure_scale(sensitivity, epsilon, footpoint_free=True)\n    flat", "KNG at Δ/ε"),
    "gaussian-halve-sigma": ("privacy/measurements.py", "classical_gaussian_sigma)(\n        epsilon, delta, sensitivity), epsilon)",
                             "classical_gaussian_sigma)(\n        epsilon, delta, sensitivity) / 2, epsilon)", "tangent/ambient Gaussian σ halved"),
    "coordinate-laplace-drop-sqrt-d": ("privacy/measurements.py", "np.sqrt(D) * pure_scale", "1.0 * pure_scale",
                                       "coordinate Laplace without the ℓ1 ≤ √D ℓ2 factor"),
    "ambient-l2-halve": ("privacy/measurements.py", 'delta, sigma, rule = 0.0, pure_scale(sensitivity, epsilon, footpoint_free=True), "σ = Δ_E/ε"',
                         'delta, sigma, rule = 0.0, pure_scale(sensitivity, epsilon, footpoint_free=True) / 2, "σ = Δ_E/ε"',
                         "ambient ℓ2 Laplace σ halved"),
    "sensitivity-laplace-halve": ("privacy/sensitivity.py", "return 2.0 * radius * L / (n * h)", "return radius * L / (n * h)",
                                  "Fréchet mean sensitivity 2rL/(nh) halved"),
    "sensitivity-kng-halve": ("privacy/sensitivity.py", "return 2.0 * radius * L / n\n", "return radius * L / n\n",
                              "KNG gradient sensitivity halved"),
    "lipschitz-one": ("privacy/sensitivity.py", "return float(a / np.sin(a))", "return 1.0", "log taken 1-Lipschitz on a curved ball"),
    "spread-radius-below-r": ("privacy/sensitivity.py", "if r_j * (1.0 - SPREAD_PAD) >= rho * (1.0 + SPREAD_PAD)]",
                              "if r_j * 1.1 >= rho * (1.0 + SPREAD_PAD)]",
                              "the spread constant of a tabulated radius up to 10% below r used for the ball of radius r"),
    "spread-table-shrunk": ("experiments/sphere_spread_table.json", '"proven_upper_bound": "1.026500"',
                            '"proven_upper_bound": "1.016500"', "the stored spread constant at π/8 lowered by 0.01"),
    "spread-drop-sqrt-kappa": ("privacy/sensitivity.py", "rows = _spread_rows((radius + slack) * root)",
                               "rows = _spread_rows(radius + slack)",
                               "the table read at r instead of r√κ: a sphere of radius R < 1 takes a smaller ball's constant"),
    "strong-convexity-one": ("stats/frechet.py", "    return float(a / np.tan(a))", "    return 1.0",
                             "h = 1 on a positively curved ball"),
    "ambient-chord-halve": ("manifolds/sphere.py", "return float(2.0 * self.radius * np.sin(radius / (2.0 * self.radius)))",
                            "return float(self.radius * np.sin(radius / (2.0 * self.radius)))", "sphere's ambient radius halved"),
    "ambient-spd-drop-lambda-max": ("manifolds/spd.py", "return float(np.linalg.eigvalsh(np.asarray(center, float))[-1]) * float(np.expm1(radius))",
                                    "return float(np.expm1(radius))", "SPD ambient radius without λmax(center)"),
    "optimisation-slack-dropped": ("privacy/frechet_mean.py", "return float(base if kind == \"kng\" and not flat else base + 2.0 * accuracy), accuracy",
                                   "return float(base), accuracy", "the computed mean's error left out of Δ"),
    "variance-sensitivity-halve": ("privacy/frechet_variance.py", "return 4.0 * radius**2 / n +", "return 2.0 * radius**2 / n +",
                                   "Fréchet variance sensitivity halved"),
    "kendall-volume-exponent": ("manifolds/kendall.py", "return (2 * self.k_landmarks - 5) * np.log(np.maximum(np.sin(rho), 0.0))",
                                "return (2 * self.k_landmarks - 6) * np.log(np.maximum(np.sin(rho), 0.0))",
                                "Kendall volume sin^(2m−2) instead of sin^(2m−1)"),
    "kendall-volume-exponent-consistent": ("manifolds/kendall.py", "2 * self.k_landmarks - 5", "2 * self.k_landmarks - 6",
                                           "Kendall volume sin^(2m−2), log J and its slope changed together", 2),
    "kendall-volume-slope": ("manifolds/kendall.py", "return (2 * self.k_landmarks - 5) / np.tan(rho) - np.tan(rho)",
                             "return (2 * self.k_landmarks - 6) / np.tan(rho) - np.tan(rho)", "Kendall volume slope off by one"),
    "so3-curvature-ninth": ("manifolds/so3.py", "curvature_bounds = (0.25, 0.25)", "curvature_bounds = (1.0 / 9.0, 1.0 / 9.0)",
                            "SO(3) as S³(3)/±1: a flatter ball's L/h in the sensitivity, its volume density sin²(ρ/3)"),
    "so3-sign-from-the-computation": ("manifolds/so3.py", "    return q * (1.0 - 2.0 * negative)\n", "    return q\n",
                                      "SO(3) releases keep the sign of q the computation ended with, not the canonical one"),
    "median-reach-unchecked": ("privacy/median.py", "        if not reach <= MEDIAN_MAX_REACH:", "        if False:",
                               "a median ball whose squared distances overflow for some data releases or raises by the data"),
    "homogeneous-by-default": ("manifolds/capabilities.py", "    homogeneous: bool = False", "    homogeneous: bool = True",
                               "a new space that claims nothing gets the footpoint-free σ = Δ/ε"),
    "so3-matrix-entries-unbounded": ("manifolds/so3.py", "bounded = finite & (np.max(np.abs(R), axis=(-2, -1)) <= 2.0)",
                                     "bounded = finite", "a finite matrix record of 1e308 reaches eigh, which fails for that record alone"),
    "so3-ambient-chord-halve": ("manifolds/so3.py", "return float(2.0 * np.sqrt(2.0) * np.sin(min(radius, np.pi) / 2.0))",
                                "return float(np.sqrt(2.0) * np.sin(min(radius, np.pi) / 2.0))", "SO(3)'s ambient radius halved"),
    "ball-first-stage-so3-drop-sqrt2": ("privacy/ball_first_stage.py", "return math.sqrt(2.0) / n  # as Kendall's",
                                        "return 1.0 / n  # as Kendall's",
                                        "center='auto': the SO(3) matrix mean's sensitivity 1/n instead of √2/n"),
    "space-form-volume-exponent": ("manifolds/geometry.py", "return (lambda r: (d - 1) * np.log(np.maximum(R * np.sin(r / R), 0.0)))",
                                   "return (lambda r: (d - 2) * np.log(np.maximum(R * np.sin(r / R), 0.0)))",
                                   "sphere volume sin^(d−2)"),
    "hyperbolic-integrability": ("manifolds/hyperbolic.py", "volume_growth_rate = property(lambda self: float(self.dim - 1))",
                                 "volume_growth_rate = property(lambda self: float(self.dim - 1) / 2)",
                                 "hyperbolic Laplace taken integrable up to σ < 2/(d−1)"),
    "spd-ai-integrability": ("manifolds/spd.py", "return 0.5 * np.sqrt(k * (k * k - 1) / 3.0)", "return 0.25 * np.sqrt(k * (k * k - 1) / 3.0)",
                             "affine-invariant Laplace taken integrable beyond 1/c_k"),
    "kendall-phase-not-canonical": ("manifolds/kendall.py", "        return self.align(center, points)\n\n    def as_points",
                                    "        return points\n\n    def as_points", "Kendall release keeps the data's rotation"),
    "clip-skipped": ("privacy/release.py",
                     "X, moved, log_sum = manifold.clip_and_log_sum(inside, center, radius, np.full(len(ok), weight))",
                     "X, moved, log_sum = inside, np.zeros(len(ok), bool), manifold.weighted_log_sum(center, inside, np.full(len(ok), weight))",
                     "records outside the ball are not clipped"),
    "charge-after-failure-only": ("privacy/release.py", "    charge(p.accountant, cal.measurement)\n    records = prepared",
                                  "    records = prepared", "the mean's release is never charged"),
    "output-grid-off": ("privacy/release.py", "    g = max(move * GRID_BELOW_SCALE, scale * GRID_ABOVE_ULP)",
                        "    g = 1e-300", "no float-safe output grid by default"),
    "pure-event-half-epsilon": ("privacy/accounting.py", "    tail = math.exp(-epsilon)  # 2e",
                                "    epsilon = epsilon / 2\n    tail = math.exp(-epsilon)  # 2e", "a pure release charged ε/2"),
    "gaussian-event-double-multiplier": ("privacy/accounting.py", "return dp_event.GaussianDpEvent(noise_multiplier=2.0 * noise_multiplier)",
                                         "return dp_event.GaussianDpEvent(noise_multiplier=4.0 * noise_multiplier)",
                                         "a Gaussian release charged as if twice as noisy"),
    "basic-composition-halved": ("privacy/accounting.py", "        pure = math.fsum(self.pure)\n", "        pure = math.fsum(self.pure) / 2\n",
                                 "pure releases composed at half their sum"),
    "accountant-admits-everything": ("privacy/accounting.py", "return composition if composition.fits(limit) else None",
                                     "return composition", "the budget is never enforced"),
    "accountant-representation-slack-wide": ("privacy/accounting.py",
                                             "limit = self._epsilon * (1 + 1e-12) + math.fsum(composition.pure_slack)",
                                             "limit = self._epsilon * (1 + 1e-12) + 1e6 * math.fsum(composition.pure_slack)",
                                             "the pure events' representation slack a million times too wide"),
    "gaussian-delta-cancelling-at-small-mu": ("privacy/calibration.py", "SMALL_MU = 1e-3  #", "SMALL_MU = 0.0  #",
                                              "the Gaussian δ curve by its cancelling closed form at every μ"),
    "accountant-pure-slack-uncapped": ("privacy/accounting.py", "PURE_SLACK = 1e-9  #", "PURE_SLACK = 1.0  #",
                                       "a pure event's representation slack not capped by its ε: tiny events add up"),
    "accountant-gaussian-delta-slack-wide": ("privacy/accounting.py", "GAUSSIAN_DELTA_SLACK = 1e-9  #",
                                             "GAUSSIAN_DELTA_SLACK = 1e-3  #",
                                             "the Gaussian part admitted at a δ 0.1 % over the budget"),
    "measurement-event-epsilon-halved": ("privacy/measurements.py", "return pure_dp_event(self.epsilon)", "return pure_dp_event(self.epsilon / 2)",
                                         "a release charges half its ε"),
    "radius-selection-sharpened": ("privacy/radius_selection.py", "0.5 * epsilon * u + np.asarray(log_base", "1.0 * epsilon * u + np.asarray(log_base",
                                   "the private radius's exponential mechanism at 2ε₁"),
    "radius-selection-uncharged": ("privacy/auto_radius.py", "p.accountant.charge(dp_event.ComposedDpEvent([",
                                   '(lambda event: None)(dp_event.ComposedDpEvent([', "radius='auto' never charged"),
    "radius-base-measure-data-dependent": ("privacy/auto_radius.py",
                                           "safe = _selection.safe_radius(manifold, kept, given, inflation)",
                                           "safe = float(np.max(record_distances(manifold, X, center)))",
                                           "the private radius's base measure peaked at the largest record distance"),
    "radius-utility-sensitivity-doubled": ("privacy/radius_selection.py", "return -np.abs(quantile_counts(distances, grid) - quantile * n)",
                                           "return -2.0 * np.abs(quantile_counts(distances, grid) - quantile * n)",
                                           "the quantile utility at sensitivity 2, drawn as if it were 1"),
    "radius-charge-strongest-candidate": ("privacy/auto_radius.py", "elif key(leaf) > key(column[position]):",
                                          "elif key(leaf) < key(column[position]):",
                                          "radius='auto' charges the least private candidate's leaves, not the most"),
    "cap-fraction-ignored": ("privacy/mechanisms.py", "sample_radius_concave_volume(m, grid, G, sigma, n, rng, log_cap=log_cap)",
                             "sample_radius_concave_volume(m, grid, G, sigma, n, rng, log_cap=None)",
                             "the cap sampler's radius drawn without the cap fraction"),
    "kng-law-of-sines-overtight": ("privacy/mechanisms.py", "f = np.maximum(f, 1.0 - s2 * _k_upper(u))",
                                   "f = np.maximum(f, 1.0 - 0.5 * s2 * _k_upper(u))",
                                   "KNG's radial envelope above ‖∇F‖ (not a lower bound)"),
    "kng-pooled-levels-shrunk": ("privacy/mechanisms.py", "return grid, np.bincount(index, minlength=levels).astype(float)",
                                 "return 0.9 * grid, np.bincount(index, minlength=levels).astype(float)",
                                 "KNG's pooled envelope at levels below the records' distances (not a lower bound)"),
    "kng-pooled-level-below-record": ("privacy/mechanisms.py", "index = np.where(grid[index] >= a, index, levels - 1)",
                                      "index = np.maximum(index - 1, 0)",
                                      "KNG's pooled envelope sends each record to the level below it"),
    "paper-variant-stays-certified": ("privacy/measurements.py", "certified = measurement.certified and factor >= 1.0",
                                      "certified = measurement.certified", "a paper calibration below the proven scale kept certified"),
    "uncertified-released": ("privacy/release.py", "    if not measurement.certified:\n        raise",
                             "    if False:\n        raise", "the pipeline releases an uncertified measurement"),
    "estimator-copies-generator": ("estimators.py", "shared_rng = isinstance(self.random_state, np.random.Generator)",
                                   "shared_rng = False", "cross-validation folds share their noise"),
    "estimator-seed-with-accountant": ("estimators.py", "    if accountant is not None:\n        raise ValueError(\"random_state is a fixed seed",
                                       "    if False:\n        raise ValueError(\"random_state is a fixed seed",
                                       "a fixed seed composed by the accountant"),
    "riemannian-gaussian-halve-sigma": ("privacy/measurements.py", "sigma = _profile_sigma(manifold, sensitivity, epsilon, delta)",
                                        "sigma = _profile_sigma(manifold, sensitivity, epsilon, delta) / 2",
                                        "Riemannian Gaussian σ halved on curved spaces"),
    "riemannian-gaussian-flat-halve-sigma": ("privacy/measurements.py",
                                             'sigma = gaussian_scale(sensitivity, epsilon, delta, "analytic")\n        mu, reach',
                                             'sigma = gaussian_scale(sensitivity, epsilon, delta, "analytic") / 2\n        mu, reach',
                                             "Riemannian Gaussian σ halved on flat spaces"),
    "riemannian-gaussian-radius-law": ("privacy/samplers.py", "return (lambda r: log_j(r) - 0.5 * inv * r * r)",
                                       "return (lambda r: log_j(r) - 0.25 * inv * r * r)", "Gaussian radius drawn at √2 σ"),
    "gdp-event-half-mu": ("privacy/measurements.py", "gaussian_dp_event(math.nextafter(1.0 / self.gdp_mu, 0.0))",
                          "gaussian_dp_event(math.nextafter(2.0 / self.gdp_mu, 0.0))", "a μ-GDP release charged as μ/2"),
    "wrapped-half-sensitivity": ("privacy/mechanism_specs.py", 'measurements.wrapped(manifold, kind, sensitivity, epsilon',
                                 'measurements.wrapped(manifold, kind, sensitivity / 2, epsilon',
                                 "wrapped mechanisms calibrated to Δ/2"),
    "wrapped-on-positive-curvature": ("privacy/mechanisms.py",
                                      "return bool(manifold.curvature_bounds[1] <= 0 and np.isinf(manifold.injectivity_radius))",
                                      "return True", "wrapped noise allowed where log_b is not 1-Lipschitz"),
    "kendall-comparison-kappa-max": ("privacy/gdp.py", "d, kappa = manifold.dim, float(manifold.curvature_bounds[0])",
                                     "d, kappa = manifold.dim, float(manifold.curvature_bounds[1])",
                                     "Kendall's loss bounded with the law of cosines of κmax (Toponogov needs κmin)"),
    "gdp-diameter-cap-removed": ("privacy/gdp.py", "t = np.array([min(sensitivity, float(manifold.injectivity_radius))])",
                                 "t = np.array([sensitivity])", "the law of cosines evaluated past the diameter (periodic)"),
    "gdp-sphere-tail-dropped": ("privacy/gdp.py", "exact = fine + np.abs(fine - coarse) + TRUNCATION + _sphere_tail(manifold, t, sigma, eps, start)",
                                "exact = fine + np.abs(fine - coarse) + TRUNCATION",
                                "the sphere's profile without the radii past a quarter circle"),
    "gdp-sphere-tail-inner-radius": ("privacy/gdp.py", "(S[:-1] - x[:-1]) * (S[1:] + x[1:])", "(S[:-1] - x[:-1]) * (S[:-1] + x[:-1])",
                                     "the sphere's tail cells take the loss at their inner radius (not an upper bound)"),
    "gdp-spd-comparison-no-volume-factor": ("privacy/gdp.py", "law = (log_num, lo, hi, float(logsumexp(log_den(r) + np.log(w))))",
                                            "law = (log_den, lo, hi, float(logsumexp(log_den(r) + np.log(w))))",
                                            "SPD-AI's comparison bound over the flat radius law (the volume factor G ≥ 1 dropped)"),
    "newton-sphere-halve-L": ("manifolds/kernels/sphere_passes.py", "L=float(L / self.radius)", "L=float(0.5 * L / self.radius)",
                              "the sphere's Hessian Lipschitz bound halved (too few Newton steps)"),
    "newton-spd-halve-L": ("manifolds/kernels/spd_passes.py", "L=float(D / 3.0 * f(b))", "L=float(D / 6.0 * f(b))",
                           "the SPD Hessian Lipschitz bound halved"),
    "newton-spd-truncation-halved": ("manifolds/kernels/spd_passes.py", "6: float(D**8 / 75600.0)}", "6: float(D**8 / 151200.0)}",
                                     "the truncated SPD Hessian's error bound halved"),
    "newton-spd-no-expansion": ("manifolds/kernels/spd_passes.py", "expansion=0.5,", "expansion=0.0,",
                                "exp taken 1-Lipschitz on negatively curved SPD"),
    "newton-prepared-norm-ignored": ("manifolds/kernels/sphere_passes.py", "inv = 1.0 / R if unit else", "inv = 1.0 if unit else",
                                     "prepared records of norm R read as unit vectors in the Newton pass"),
    "single-draw-sigma-doubled": ("privacy/radial_sampler.py", "return laplace_radius_single_sampler(manifold, float(sigma))",
                                  "return laplace_radius_single_sampler(manifold, 2.0 * float(sigma))",
                                  "single draws of the radial Laplace at 2σ"),
    "spd-clip-copies-only-when-clipping": ("manifolds/spd.py", "            out = select(outside[..., None, None], sym(s @ eig_apply(u, np.exp(log_w * scale[..., None])) @ s), x)\n",
                                           "            rebuilt = sym(s @ eig_apply(u, np.exp(log_w * scale[..., None])) @ s)\n"
                                           "            out = x.copy() if np.any(outside) else x\n            out[outside] = rebuilt[outside]\n",
                                           "SPD-AI preparation copies the records only when one is clipped (timing)"),
    "sphere-subnormals-kept": ("manifolds/kernels/sphere_passes.py", "W >= R * TINY", "W >= 0.0",
                               "subnormal coordinates reach the passes (a slow float path: timing)"),
    "one-point-check-skips-norm": ("manifolds/kernels/sphere_passes.py",
                                   "        if not abs(nrm - self.radius) <= POINT_ATOL * self.radius:  # False for NaN and inf too\n",
                                   "        if not nrm == nrm:\n", "the one-point sphere check accepts any finite norm"),
    "one-point-check-skips-definiteness": ("manifolds/kernels/spd_passes.py",
                                           "        if not head > 0.0 or not (d - shift) - m * m / head > 0.0:\n",
                                           "        if not head > 0.0:\n", "the one-point SPD(2) check skips the Cholesky's second pivot"),
    "spd-ball-condition-unchecked": ("privacy/float64_reach.py", "    if problem is not None:\n",
                                     "    if False:\n", "an SPD ball where the footpoint check could take either path is not refused"),
    "spd-ball-condition-loose": ("manifolds/spd.py", "        return 1.0 / (128.0 * self.k**2.5 * EPS)\n",
                                 "        return 100.0 / (128.0 * self.k**2.5 * EPS)\n", "the SPD ball condition limit 100× too loose"),
    "spd-ball-scale-unchecked": ("manifolds/spd.py", "        if not (SCALE_RANGE[0] <= low and high <= SCALE_RANGE[1]):\n",
                                 "        if False:\n", "an SPD ball at scales where squared entries overflow is not refused"),
    "newton-spd-sixth-order-dropped": ("manifolds/kernels/spd_passes.py", "(1.0 / 12.0, -1.0 / 720.0, 1.0 / 30240.0)", "(1.0 / 12.0, -1.0 / 720.0, 0.0)",
                                       "the SPD Newton Hessian loses its sixth-order term (e not covering it)"),
    "spd-log-band-term-claimed": ("manifolds/kernels/matrix_log.py", "(delta + qh ** (2 * J + 1) / (2 * J + 1))",
                                  "(delta + qh ** (2 * J + 3) / (2 * J + 3))",
                                  "the log by matrix products one series term short of its claimed bound"),
    "spd-log-band-g-dropped": ("manifolds/kernels/spd_passes.py", "return plan, float(np.sqrt(k) * plan.bound)", "return plan, 0.0",
                               "the certified Newton steps ignore the error of the logs by matrix products"),
    "spd-prep-unscaled-eigh": ("manifolds/kernels/spd_passes.py", "            y += flush  # no entry turns subnormal on the way\n            y -= flush\n            y *= np.ldexp(1.0, -exponent)[:, None, None]\n",
                               "            exponent = 0 * exponent\n",
                               "SPD preparation hands eigh the records' images as they are (one hostile record fails the release)"),
    "spd-coarse-log-g-of-full": ("manifolds/kernels/spd_passes.py", "truncation[order] + rounding + lift * g_tol, costs[order] - saved, g_tol))",
                                 "truncation[order] + rounding + lift * g, costs[order] - saved, g))",
                                 "the SPD Newton passes with coarser logs claim the full series' error"),
    "spd-log-band-half-width": ("manifolds/kernels/spd_passes.py", "t = 2.0 * radius + 2.0**-10", "t = radius + 2.0**-10",
                                "the logs by matrix products planned for half the distances a ball holds"),
    "logm-band-no-flush": ("manifolds/kernels/matrix_log.py", "    a += FLUSH\n    a -= FLUSH\n", "",
                           "the products of the band logs reach subnormal numbers on hostile records (timing)"),
    "spd-matrix-free-threshold-halved": ("manifolds/kernels/spd_passes.py", "MATRIX_FREE_MIN_K = 16", "MATRIX_FREE_MIN_K = 8",
                                         "the SPD Newton passes without the dense Hessian from half the public k"),
    "spd-chebyshev-error-halved": ("manifolds/kernels/spd_hessian.py", "return min(1.0, (1.0 + 2.0**-40) / math.cosh(",
                                   "return min(1.0, 0.5 * (1.0 + 2.0**-40) / math.cosh(",
                                   "the Chebyshev steps' error bound halved (SPD Newton schedule at large k)"),
    "spd-chebyshev-rounding-margin-halved": ("manifolds/kernels/spd_hessian.py", "(1.0 + 2.0**-40) / math.cosh(",
                                             "(1.0 + 2.0**-41) / math.cosh(",
                                             "the Chebyshev error bound's rounding margin halved"),
    "spd-hessian-interval-log-margin-halved": ("manifolds/kernels/spd_passes.py", "- 2.0 * radius + 2.0**-16)",
                                               "- 2.0 * radius + 2.0**-17)",
                                               "the SPD Hessian interval's allowance for the logs' errors halved"),
    "spd-hessian-interval-weight-margin-halved": ("manifolds/kernels/spd_passes.py", "(1.0 + 2.0**-20) / (1.0 - 2.0**-20)",
                                                  "(1.0 + 2.0**-21) / (1.0 - 2.0**-21)",
                                                  "the SPD Hessian interval's allowance for the rounding of Σw halved"),
    "spd-hessian-interval-t-halved": ("manifolds/kernels/spd_passes.py", "T2 = float(spread) ** 2 / 2.0",
                                      "T2 = float(spread) ** 2 / 4.0",
                                      "the SPD Hessian's spectral interval from half the eigenvalue gaps"),
    "newton-solve-error-dropped": ("stats/frechet.py", "delta += float(solve) * (d + delta)", "delta += 0.0 * (d + delta)",
                                   "the Newton recursion ignores the linear solve's error"),
    "spd-free-gradient-products-halved": ("manifolds/kernels/spd_passes.py", "FREE_GRADIENT_PRODUCTS = 30.0",
                                          "FREE_GRADIENT_PRODUCTS = 15.0", "the matrix-free cost model's gradient pass halved"),
    "spd-free-pass-products-halved": ("manifolds/kernels/spd_passes.py", "FREE_PASS_PRODUCTS = 4.0", "FREE_PASS_PRODUCTS = 2.0",
                                      "the matrix-free cost model's per-pass overhead halved"),
    "spd-free-log-block-halved": ("manifolds/kernels/spd_passes.py", "LOG_BAND_BYTES = 1 << 18", "LOG_BAND_BYTES = 1 << 17",
                                  "the matrix-free pass's log blocks halved"),
    "spd-prepare-block-halved": ("manifolds/kernels/spd_passes.py", "PREPARE_BYTES = 1 << 20", "PREPARE_BYTES = 1 << 19",
                                 "SPD-AI record preparation's blocks halved at large k"),
    "spd-apply-block-halved": ("manifolds/kernels/spd_hessian.py", "APPLY_BLOCK_BYTES = 1 << 19", "APPLY_BLOCK_BYTES = 1 << 18",
                               "the truncated Hessian's application blocks halved"),
    "spd-apply-no-flush": ("manifolds/kernels/spd_hessian.py", "    flush_tiny(C)\n", "",
                           "the matrix-free Hessian's products reach subnormal numbers on hostile records (timing)"),
    "newton-spd-cheaper-truncations-halved": ("manifolds/kernels/spd_passes.py", "{2: float(D**4 / 180.0)",
                                              "{2: float(D**4 / 360.0)",
                                              "the second-order SPD Hessian's error bound halved"),
    "newton-spd-fourth-order-halved": ("manifolds/kernels/spd_passes.py", "4: float(D**6 / 3780.0)",
                                       "4: float(D**6 / 7560.0)", "the fourth-order SPD Hessian's error bound halved"),
    "spd-snap-relative-floor-dropped": ("manifolds/spd.py", "np.maximum(grid, floor * w[..., -1:])", "grid",
                                       "SPD snapping floors eigenvalues at the grid only (ill-conditioned draws fail the release)"),
    "sqrtm-one-unscaled": ("manifolds/matrix.py", "            e = math.frexp(max(p, r, abs(q)))[1] // 2\n",
                           "            e = 0\n", "the closed-form 2×2 square root without its power-of-two scaling"),
    "raw-release-not-repaired": ("privacy/release.py", "    if grid is None and not manifold.check_point(points)[0]:",
                                 "    if False:", "a raw (round_to=None) SPD draw of huge condition fails instead of being floored"),
    "sphere-series-tail-halved": ("manifolds/kernels/angle_series.py", "t_f = float(a[degree + 1]) * zk / (1.0 - z)",
                                  "t_f = 0.5 * float(a[degree + 1]) * zk / (1.0 - z)",
                                  "the sphere's series passes claim half their truncation error"),
    "sphere-series-g-dropped": ("manifolds/kernels/sphere_passes.py", "float(self.radius * t_f * np.sin(D))", "0.0",
                                "the certified Newton steps ignore the gradient error of the sphere's series passes"),
    "sphere-series-half-range": ("manifolds/kernels/sphere_passes.py", "z_max = float(np.sin(half) ** 2", "z_max = float(np.sin(half / 2) ** 2",
                                 "the sphere's series bounded on half the distances a ball holds"),
    "sphere-kernel-no-clip": ("manifolds/kernels/sphere_kernels.py", "    of = 1.0 if mv else 0.0\n", "    of = 0.0\n",
                              "the compiled S² preparation leaves records outside the ball"),
    "sphere-kernel-series-short": ("manifolds/kernels/sphere_kernels.py", "for j in range(top - 1, -1, -1):",
                                   "for j in range(top - 2, -1, -1):",
                                   "the compiled S² Newton pass evaluates its series one term short"),
    "gdp-slack-not-charged": ("privacy/measurements.py", "            if self.gdp_slack > 0:\n",
                              "            if False:\n", "the μ-GDP tail slack not charged to the accountant"),
    "ball-first-stage-halve-scale": ("privacy/ball_first_stage.py", "pure_scale(sens, epsilon, footpoint_free=True))",
                                     "pure_scale(sens, epsilon, footpoint_free=True) / 2)",
                                     "center='auto': the first stage's K-norm noise scale halved"),
    "ball-first-stage-sphere-drop-2": ("privacy/ball_first_stage.py", "        return 2.0 * m.radius / n\n",
                                       "        return m.radius / n\n",
                                       "center='auto': the extrinsic mean's sensitivity R/n instead of 2R/n"),
    "ball-first-stage-spd-drop-2": ("privacy/ball_first_stage.py", "        return 2.0 * bound * math.sqrt(m.k) / n\n",
                                    "        return bound * math.sqrt(m.k) / n\n",
                                    "center='auto': the clipped log mean's sensitivity B/n instead of 2B/n"),
    "ball-first-stage-kendall-drop-sqrt2": ("privacy/ball_first_stage.py", "        return math.sqrt(2.0) / n\n",
                                           "        return 1.0 / n\n",
                                           "center='auto': the Kendall matrix mean's sensitivity 1/n instead of √2/n"),
    "ball-charge-dropped": ("privacy/private_ball.py", "        p.accountant.charge(dp_event.ComposedDpEvent(events))",
                            "        (lambda event: None)(dp_event.ComposedDpEvent(events))", "center='auto' never charged"),
    "ball-round-halve-scale": ("privacy/ball_refine.py", "    return pure_scale(round_sensitivity(n, radius), epsilon, footpoint_free=True)",
                               "    return pure_scale(round_sensitivity(n, radius), epsilon, footpoint_free=True) / 2",
                               "center='auto': a re-centring round's K-norm scale halved"),
    "ball-round-drop-2": ("privacy/ball_refine.py", "    return 2.0 * float(radius) / int(n) + 2.0 * mean_rounding(",
                          "    return float(radius) / int(n) + 2.0 * mean_rounding(", "center='auto': a round's sensitivity R/n instead of 2R/n"),
    "spd-membership-unscaled": ("manifolds/spd.py", "        x = _unit_scaled(x)  # exact",
                                "        x = np.asarray(x)  # exact",
                                "SPD membership decomposes records unscaled (−1e308·I makes eigvalsh raise for one neighbour)"),
    "ball-round-not-charged": ("privacy/private_ball.py",
                               "        events += ([gaussian_dp_event(z * (1.0 - 2.0**-50)) for z in round_multipliers]",
                               "        events += [] and ([gaussian_dp_event(z * (1.0 - 2.0**-50)) for z in round_multipliers]",
                               "center='auto': the re-centring rounds (K-norm or Gaussian) left out of the charge"),
    "median-sensitivity-one-over-n": ("privacy/median.py", "return 2.0 / n + (n + 16) * 2.0**-50",
                                      "return 1.0 / n + (n + 16) * 2.0**-50",
                                      "the median's gradient sensitivity 1/n instead of 2/n"),
    "median-sigma-delta-over-epsilon": ("privacy/median.py", "sigma = measurements.pure_scale(sens, epsilon, footpoint_free=False)",
                                        "sigma = measurements.pure_scale(sens, epsilon, footpoint_free=True)",
                                        "the median's KNG at σ = Δ/ε (its normalising constant depends on the data)"),
    "median-envelope-trace": ("privacy/median.py", "h = np.maximum(eig.sum(axis=1) - eig[:, -1], 0.0)",
                              "h = np.maximum(eig.sum(axis=1), 0.0)",
                              "the median's envelope from tr M instead of tr M − λmax (above ‖∇F‖)"),
    "median-volume-density-dropped": ("privacy/median.py", "return cast(FloatArray, np.sum(_log_sinhc(a), axis=-1))",
                                      "return cast(FloatArray, np.sum(0.0 * _log_sinhc(a), axis=-1))",
                                      "the median's polar proposal on SPD-AI without the volume density sinh(a)/a"),
    "gdp-narrow-angular-rows-skipped": ("privacy/gdp.py", "active = lo < hi  # elsewhere", "active = lo < hi - 0.05  # elsewhere",
                                        "the profile quadrature skips rows whose angular window is narrow but not empty"),
    "line-non-finite-not-corrected": ("manifolds/kernels/euclidean_passes.py", "total -= r * ((m - finite) - 2 * below)",
                                      "total -= 0.0 * r * ((m - finite) - 2 * below)",
                                      "Euclidean(1): non-finite records enter the log sum as ±r instead of the centre"),
    "line-minus-inf-as-nan": ("manifolds/kernels/euclidean_passes.py", "total -= r * ((m - finite) - 2 * below)",
                              "total -= r * (m - finite)", "Euclidean(1): a −inf record corrected as if it had been clipped to +r"),
    "line-finite-counts-minus-inf": ("manifolds/kernels/euclidean_passes.py", "        finite -= below\n", "",
                                     "Euclidean(1): −inf records counted as finite"),
    "sphere-small-release-loads-numba": ("manifolds/kernels/sphere_passes.py", "sphere_kernels.kernels(n >= COMPILED_LOAD_RECORDS)",
                                         "sphere_kernels.kernels(True)", "a release below COMPILED_LOAD_RECORDS imports numba"),
    "jit-off-still-imports-numba": ("manifolds/kernels/sphere_kernels.py", "            _loaded = (None,)  # disabled: numba is not even imported\n            return None\n",
                                    "            pass\n", "MANIFOLD_DP_JIT=0 ignored: numba imported and the compiled passes used"),
    "dask-blocks-weighted-alone": ("privacy/release.py", "    total = n if total is None else int(total)\n", "    total = n\n",
                                   "a Dask block's sums weighted by its own 1/len instead of the array's 1/n"),
    "dask-kept-blocks-unclipped": ("privacy/dask_records.py", "return (np.asarray(records) if keep else None), sums",
                                   "return (np.asarray(block) if keep else None), sums",
                                   "on a cluster the later passes read the records as given, not the clipped ones"),
}


def _naming(file, tests):
    """The test files whose text names the mutated module (its file name without the suffix)."""
    stem = Path(file).stem
    return [t for t in tests if stem in (ROOT / t).read_text(encoding="utf-8")]


def run(name, keep_going=False, tests=None):
    file, old, new, _, *count = MUTATIONS.get(name, ("__init__.py", "", "", ""))
    count = count[0] if count else 1  # how many places the mutation changes
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(ROOT / "src", copy / "src")
        shutil.copytree(ROOT / "tests", copy / "tests")
        shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
        target = copy / PKG / file
        text = target.read_text()
        if name != "baseline":
            if text.count(old) != count:
                return "stale", 0.0  # the mutation no longer matches the code: update it
            target.write_text(text.replace(old, new))
        env = {"PYTHONPATH": str(copy / "src"), "PATH": "/usr/bin:/bin", "HOME": tmp}
        env = {**os.environ, **env}
        start = time.time()
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"] + (["-x"] if not keep_going else [])
        first = _naming(file, tests or TESTS) if name != "baseline" else []
        if first:  # the files that name the mutated module first: a failure there is the suite's verdict too
            res = subprocess.run(base + first + ["-m", "not slow"], cwd=copy, env=env, capture_output=True, text=True)
            if res.returncode not in (0, 5):
                return "killed", time.time() - start
        args = base + list(tests or TESTS)
        # the fast tests first; the slow ones (audits, power checks) only for a mutation the fast ones let through
        for marks, passed in (("not slow", (0,)), ("slow", (0, 5))):  # 5: no slow test in these files
            res = subprocess.run(args + ["-m", marks], cwd=copy, env=env, capture_output=True, text=True)
            if res.returncode not in passed:
                return "killed", time.time() - start
        return "SURVIVED", time.time() - start


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="mutations to run (default: all)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--tests", nargs="+", metavar="FILE", help="run these test files instead of the default list")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip the unmutated run (only when the suite is known to be green: a kill means nothing on a "
                         "red one)")
    args = ap.parse_args(argv)
    if args.list:
        for k, v in MUTATIONS.items():
            print(f"{k:32s} {v[3]}")
        return 0
    names = args.names or list(MUTATIONS)
    unknown = [n for n in names if n not in MUTATIONS]
    if unknown:
        ap.error(f"unknown mutations: {unknown}")
    if not args.no_baseline:
        baseline, seconds = run("baseline", tests=args.tests)
        if baseline != "SURVIVED":
            print(f"the unmutated tests fail ({seconds:.0f} s): fix them first; a kill rate means nothing on a red suite")
            return 2
        print(f"baseline: the unmutated tests pass ({seconds:.0f} s)")
    results = {}
    for i, name in enumerate(names, 1):
        outcome, seconds = run(name, tests=args.tests)
        results[name] = outcome
        print(f"[{i}/{len(names)}] {name:32s} {outcome:9s} {seconds:6.1f} s   {MUTATIONS[name][3]}", flush=True)
    killed = sum(v == "killed" for v in results.values())
    print(f"\nkilled {killed} of {len(results)} guarantee-weakening mutations ({100 * killed / len(results):.0f} %)")
    return 0 if killed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
