"""The privacy certificate a release carries: typed, frozen, with a documented JSON form.

Every field is a function of public parameters (never of the data): what was released, under
which guarantee, by which mechanism at which scale, and how the output was post-processed. The
JSON schema is ``CERTIFICATE_SCHEMA`` (a JSON Schema document) and is described in
``docs/certificate.md``; ``Certificate.to_json`` is the only serialisation (the CLI uses it).
"""

import json
from dataclasses import asdict, dataclass, fields

__all__ = ["Certificate"]

SCHEMA_ID = "manifold_dp.certificate/1"


@dataclass(frozen=True)
class Certificate:
    """What a release guarantees. ``mechanism`` is the name passed in (``"laplace"``, ``"kng"``,
    ``"tangent_gaussian"``, ``"ambient_laplace"``, ``"ambient_gaussian"``,
    ``"coordinate_laplace"``) and round-trips; ``mechanism_title`` is for people. ``delta`` is 0
    for a pure ε-DP release, whatever ``delta`` the call was given. ``sampler_acceptance`` is
    ``None`` where it would depend on the data (then it is withheld)."""

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
    schema: str = SCHEMA_ID

    def to_dict(self):
        return asdict(self)

    def to_json(self, **kwargs):
        return json.dumps(self.to_dict(), **kwargs)

    def summary(self):
        lines = [f"{self.mechanism_title} ({self.mechanism}): ({self.epsilon:g}, {self.delta:g})-DP {self.statistic} — {self.theorem}"]
        for key in ("manifold", "n", "radius", "sensitivity", "sensitivity_bound", "scale", "scale_rule",
                    "restriction", "sampler", "sampler_acceptance", "optimisation", "output_grid"):
            lines.append(f"  {key}: {getattr(self, key)}")
        return "\n".join(lines)


def _json_type(annotation):
    simple = {str: "string", int: "integer", float: "number"}
    return {"type": simple[annotation]} if annotation in simple else {"type": ["number", "null"]}  # float | None


CERTIFICATE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": SCHEMA_ID,
    "title": "manifold_dp privacy certificate",
    "type": "object",
    "required": [f.name for f in fields(Certificate)],
    "additionalProperties": False,
    "properties": {f.name: _json_type(f.type) for f in fields(Certificate)},
}
