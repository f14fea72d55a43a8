"""Settings for the whole suite: hypothesis draws the same examples on every CI run (a failure
there is reproducible); locally it explores. scripts/fuzz.py and scripts/sanitize.sh fuzz longer."""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore")
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "explore")
)
