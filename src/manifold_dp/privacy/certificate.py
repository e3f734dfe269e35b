"""The privacy certificate a release carries: typed, frozen, with a documented JSON form.

Every field is a function of public parameters (never of the data): what was released, under
which guarantee, by which mechanism at which scale, and how the output was post-processed. The
JSON schema is ``CERTIFICATE_SCHEMA`` (a JSON Schema document) and is described in
``docs/certificate.md``; ``Certificate.to_json`` is the only serialisation (the CLI uses it).
Schema 2 added ``radius_selection`` (``radius="auto"``: the radius is itself a private release).
"""

import json
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

__all__ = ["Certificate", "RadiusSelection"]

SCHEMA_ID = "manifold_dp.certificate/2"


class JsonRecord:
    """``to_dict``/``to_json`` of a frozen dataclass of public fields (the certificates)."""

    if TYPE_CHECKING:  # every subclass is a dataclass
        __dataclass_fields__: ClassVar[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)


@dataclass(frozen=True)
class RadiusSelection:
    """How a private radius was chosen (``radius="auto"``): the exponential mechanism over a
    public grid, its ε, and the radius it chose (itself a private output, released with the
    statistic). ``epsilon + release_epsilon`` is the certificate's ``epsilon`` (``composition``
    says by which theorem)."""

    mechanism: str
    theorem: str
    utility: str
    epsilon: float
    release_epsilon: float
    quantile: float
    grid: str
    candidates: int
    chosen_radius: float
    composition: str


@dataclass(frozen=True)
class Certificate(JsonRecord):
    """What a release guarantees. ``mechanism`` is the name passed in (``"laplace"``, ``"kng"``,
    ``"tangent_gaussian"``, ``"ambient_laplace"``, ``"ambient_gaussian"``,
    ``"coordinate_laplace"``) and round-trips; ``mechanism_title`` is for people. ``delta`` is 0
    for a pure ε-DP release, whatever ``delta`` the call was given. ``sampler_acceptance`` is
    ``None`` where it would depend on the data (then it is withheld). ``radius_selection`` is
    ``None`` unless the radius was chosen privately (``radius="auto"``): then ``epsilon`` and
    ``delta`` are the totals of the selection and the release, ``radius`` is the chosen radius,
    and ``sensitivity``, ``scale`` and ``scale_rule`` are those of the release at that radius."""

    statistic: str
    mechanism: str
    mechanism_title: str
    theorem: str
    epsilon: float
    delta: float
    manifold: str
    n: int
    radius: float
    sensitivity: float
    sensitivity_bound: str
    scale: float
    scale_rule: str
    restriction: str
    sampler: str
    sampler_acceptance: float | None
    optimisation: str
    output_grid: str
    output_grid_spacing: float | None
    library_version: str
    radius_selection: RadiusSelection | None = None
    schema: str = SCHEMA_ID

    def summary(self) -> str:
        lines = [f"{self.mechanism_title} ({self.mechanism}): ({self.epsilon:g}, {self.delta:g})-DP {self.statistic} — {self.theorem}"]
        for key in ("manifold", "n", "radius", "sensitivity", "sensitivity_bound", "scale", "scale_rule",
                    "restriction", "sampler", "sampler_acceptance", "optimisation", "output_grid"):
            lines.append(f"  {key}: {getattr(self, key)}")
        if self.radius_selection is not None:
            sel = self.radius_selection
            lines.append(f"  radius_selection: {sel.mechanism} ({sel.theorem}), epsilon {sel.epsilon:g} of {self.epsilon:g}, "
                         f"quantile {sel.quantile:g}, {sel.candidates} candidates ({sel.grid}); {sel.composition}")
        return "\n".join(lines)


_SIMPLE: dict[object, str] = {str: "string", int: "integer", float: "number"}


def _json_type(annotation: object) -> dict[str, Any]:
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    if annotation == (RadiusSelection | None):
        return {"type": ["object", "null"], "required": [f.name for f in fields(RadiusSelection)],
                "additionalProperties": False,
                "properties": {f.name: {"type": _SIMPLE[f.type]} for f in fields(RadiusSelection)}}
    return {"type": ["number", "null"]}  # float | None


CERTIFICATE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "manifold_dp privacy certificate",
    "type": "object",
    "required": [f.name for f in fields(Certificate)],
    "additionalProperties": False,
    "properties": {f.name: _json_type(f.type) for f in fields(Certificate)},
}
