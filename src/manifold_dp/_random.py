"""Where randomness comes from: OS entropy unless a seed is given on purpose."""

import secrets
from typing import Any, TypeAlias

import numpy as np

RngLike: TypeAlias = int | np.integer[Any] | np.random.SeedSequence | np.random.Generator | None  # what ``rng=`` accepts


def as_generator(rng: RngLike = None) -> np.random.Generator:
    """Return a ``numpy.random.Generator``.

    ``None`` seeds a fresh PCG64DXSM stream with 256 bits from the operating system's
    cryptographic entropy source (``secrets``), so no two calls share a stream and nothing is
    reproducible. An ``int`` or ``SeedSequence`` gives a reproducible stream, for tests and
    experiments only. A ``Generator`` is used as it is.

    PCG64DXSM is not a cryptographic generator: an adversary who sees many raw outputs of one
    stream could in principle predict later ones. Each release uses a fresh stream and exposes
    only a noisy point, which is the model the privacy proofs assume (see docs/security.md).
    """
    if rng is None:
        return np.random.Generator(np.random.PCG64DXSM(secrets.randbits(256)))
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (bool, np.bool_)):
        raise TypeError("rng must be None, an int seed, a SeedSequence or a numpy Generator, got a bool")
    if isinstance(rng, (int, np.integer)):
        if rng < 0:
            raise ValueError(f"rng seed must be a non-negative integer, got {int(rng)}")
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    raise TypeError(f"rng must be None, an int seed, a SeedSequence or a numpy Generator, got {type(rng).__name__}")
