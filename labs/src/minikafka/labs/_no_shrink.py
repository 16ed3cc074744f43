"""A pytest plugin for a mutant's run of the checks: Hypothesis stops at the first
failing example instead of shrinking it.

A mutant is caught when one of its checks fails; the smallest failing example is what
a person debugging wants, and shrinking one can take a minute of a property test's
time. Loaded with ``-p`` so the profile is the default before any test module builds
its ``@settings`` (which take every value they do not name from the default).
"""

from __future__ import annotations

from hypothesis import Phase, settings

settings.register_profile(
    "mutant",
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target],
    database=None,
)
settings.load_profile("mutant")
