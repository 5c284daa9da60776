"""The context handed to every rule: a file's facts (devlint.facts) plus the shared analyses
(devlint.analysis), built on first use. It sits above the analyses, which never import it: an analysis
reaches another through that one's accessor (`kinds_of(facts)`), memoised in the facts."""

from __future__ import annotations

from functools import cached_property

from devlint.device_options import FixOptions  # noqa: F401  (re-exported: rules import it from here)
from devlint.facts import FileFacts, target_names  # noqa: F401  (target_names re-exported for the rules)
# The analyses that answer those below them through devlint.facts.answer: loaded with the context.
from devlint.analysis import host_attributes, listed_files, origin_files, placement  # noqa: F401


class FileContext(FileFacts):
    """One file's facts, and the analyses a rule asks (each the same object the analyses share)."""

    @cached_property
    def guards(self):
        """Does this code only run with CUDA? devlint.analysis.guards."""
        from devlint.analysis.guards import guards_of

        return guards_of(self)

    @cached_property
    def kinds(self):
        """Tensor, module or unknown: devlint.analysis.kinds."""
        from devlint.analysis.kinds import kinds_of

        return kinds_of(self)

    @cached_property
    def possible_kinds(self):
        """A scope-free over-approximation of `kinds`: it says TENSOR whenever `kinds` could."""
        from devlint.analysis.kinds import possible_kinds_of

        return possible_kinds_of(self)

    @cached_property
    def flags(self):
        """Which conditions are constants devlint can prove: devlint.analysis.flags."""
        from devlint.analysis.flags import flags_of

        return flags_of(self)

    @property
    def placement(self):
        """Where values live (CPU, the run's device, unknown): devlint.analysis.placement."""
        from devlint.analysis.placement import placement_of

        return placement_of(self)
