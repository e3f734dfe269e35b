"""The papers' calibrations as ``measurements.paper_variant`` copies: the same law with its scale
multiplied, labelled, and never releasable when the scale falls below the proven one."""

import numpy as np
import pytest

from manifold_dp.experiments.s22_f1 import realised_kng_loss
from manifold_dp.manifolds import SPDLogEuclidean, Sphere
from manifold_dp.privacy import measurements

S2 = Sphere(2)


def test_a_smaller_scale_is_not_certified_and_has_no_privacy_event():
    kng = measurements.kng(S2, 0.05, 1.0, center=S2.origin, radius=np.pi / 8)
    paper = measurements.paper_variant(kng, 0.5, "same multiplier as the Laplace")
    assert kng.certified and not paper.certified
    assert paper.scale == pytest.approx(0.5 * kng.scale) and paper.law.sigma == pytest.approx(paper.scale)
    assert "NOT certified" in paper.title and "NOT certified" in paper.scale_rule and "same multiplier" in paper.scale_rule
    assert (paper.epsilon, paper.sensitivity, paper.mechanism) == (kng.epsilon, kng.sensitivity, kng.mechanism)
    with pytest.raises(ValueError, match="not certified"):
        paper.event
    # more noise never restores a guarantee that was lost
    assert not measurements.paper_variant(paper, 4.0, "noisier again").certified


def test_a_larger_scale_stays_certified_and_is_drawn_wider():
    m = SPDLogEuclidean(3)
    lap = measurements.laplace(m, 0.01, 0.5)
    paper = measurements.paper_variant(lap, 2.0, "the general rate 2Δ/ε")
    assert paper.certified and "certified, noisier" in paper.title
    assert paper.event == lap.event  # still charged as an ε-DP release
    rng = np.random.default_rng(1)
    x = m.origin
    ratio = np.mean(m.dist(x, paper.sample(x, size=4000, rng=rng))) / np.mean(m.dist(x, lap.sample(x, size=4000, rng=rng)))
    assert ratio == pytest.approx(2.0, rel=0.05)  # E ρ = dσ exactly; 4000 draws: relative SE ≈ 0.6%
    gauss = measurements.tangent_gaussian(m, 0.01, 0.5, 1e-6)
    wider = measurements.paper_variant(gauss, 2.0, "noisier")
    assert wider.certified and wider.event != gauss.event  # the Gaussian event follows its multiplier


def test_paper_variant_checks_its_arguments():
    lap = measurements.laplace(S2, 0.05, 1.0)
    with pytest.raises(ValueError, match="reason"):
        measurements.paper_variant(lap, 0.5, "")
    with pytest.raises(ValueError, match="factor"):
        measurements.paper_variant(lap, 0.0, "zero")


def test_a_larger_scale_is_checked_again_from_public_values():
    # the affine-invariant Laplace is integrable only below 1/c_k: doubling past it raises
    from manifold_dp.manifolds import SPDAffineInvariant

    spd = SPDAffineInvariant(2)
    lap = measurements.laplace(spd, 0.6, 1.0)
    with pytest.raises(ValueError, match="not integrable"):
        measurements.paper_variant(lap, 3.0, "too noisy to be a law")


def test_kng_at_the_papers_multiplier_loses_more_than_epsilon_on_adversarial_pairs():
    """S22-F1's finding: KNG on S² at σ = Δ_KNG/ε is not ε-DP (a realised loss above ε = 1 on
    an explicit neighbouring pair), while the certified 2Δ_KNG/ε stays within ε on the same pairs."""
    coarse = (30, 90)
    assert realised_kng_loss(10, coarse, multiplier=1.0) > 1.2
    assert realised_kng_loss(10, coarse, multiplier=2.0) < 1.0


def test_the_release_pipeline_refuses_an_uncertified_measurement_before_the_data_are_read():
    from manifold_dp import Sphere
    from manifold_dp.privacy import measurements, release

    s = Sphere(2)
    certified = measurements.laplace(s, 0.01, 1.0)
    weak = measurements.paper_variant(certified, 0.5, "a test: half the proven scale")
    release.charge(None, certified)  # no accountant: nothing to charge, no error
    with pytest.raises(ValueError, match="not certified"):
        release.charge(None, weak)
