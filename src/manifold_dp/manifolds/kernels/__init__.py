"""The fast record passes of the manifolds, apart from the geometry a reader meets first:
``passes`` (the hooks and their generic defaults, ``NewtonConstants``), ``sphere_passes`` and
``spd_passes`` (the overrides of the sphere and of SPD, mixed into their classes), ``euclidean_passes``
(the line's fused preparation), ``arrays``
(branch-free selects), ``sphere_kernels`` (compiled loops of the 2-sphere, where numba is installed),
``angle_series`` (the sphere's Newton terms by power series), ``matrix_log`` (SPD logarithms by
matrix products). Nothing is imported here: numba loads only when a large release asks for it.
"""
