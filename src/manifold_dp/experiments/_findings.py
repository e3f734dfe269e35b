"""New results: experiments that test a claim of ours, not a paper's figure.

Their verdict is the claim itself, with the numbers this run measured ("new result: …"), not one
of the reproduction verdicts; the paper's number goes in ``paper_value`` where a paper states one.
"""

from dataclasses import dataclass

from ._common import PALETTE, ExperimentResult

PREFIX = "new result: "
# colours of the mechanisms the reproductions do not use, distinct from every colour of ``_common.PALETTE``; an entry
# added there later takes precedence (``colour``)
NEW_MECHANISM_COLOURS = {"riemannian_gaussian": "#882255", "wrapped_laplace": "#44AA99", "wrapped_gaussian": "#999933",
                         "tangent_pca": "#332288"}


def colour(mechanism: str) -> str:
    """The mechanism's colour: ``_common.PALETTE``'s, else its own new one."""
    return PALETTE.get(mechanism) or NEW_MECHANISM_COLOURS[mechanism]


@dataclass
class Finding(ExperimentResult):
    """An ``ExperimentResult`` whose verdict is a claim measured by the run (``PREFIX`` + text)."""

    def __post_init__(self) -> None:
        if not (isinstance(self.verdict, str) and self.verdict.startswith(PREFIX) and self.verdict[len(PREFIX):].strip()):
            raise ValueError(f"a new result's verdict must start with {PREFIX!r} and state the claim, got {self.verdict!r}")
        if not self.summary("verdict").startswith(PREFIX):
            raise ValueError(f"a new result's short verdict must start with {PREFIX!r}, got {self.short['verdict']!r}")
        self._check_short()


def is_finding(result: object) -> bool:
    return isinstance(result, Finding)
