"""The test suite's hooks (Debug): not mount options, no user sets them, and `-o` stays what slfs(5)
documents. The test suite sets them as environment variables on the daemons it starts (and on the
in-process ones as a Debug record); the daemon's entry point (`slfs mount`, `slfs demo`) reads the
environment once into Debug (Debug.from_environ) and passes the record down to what it builds. No
code below the entry point reads the environment for them.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

# The test suite's hooks, by environment variable (Debug.from_environ).
FAULT_ENV = "SLFS_INJECT_FAULT"
JOB_FAULT_ENV = "SLFS_INJECT_JOB_FAULT"
CHECK_LISTINGS_ENV = "SLFS_CHECK_LISTINGS"


@attrs.frozen(kw_only=True)
class Debug:
    """Test hooks: off unless the test suite sets them."""

    # A name whose FUSE requests fail with an injected exception (fs/operations.py): the test that
    # proves a failing handler leaves the mount alive.
    fault: str = ""
    # The name of a background job (a function's __name__) to fail with an injected exception.
    job_fault: str = ""
    # Every attribute a listing replays and every open answered as warm is checked against the node
    # as it is, and a difference (a change the model did not report) fails the request with a traceback.
    check_listings: bool = False

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Debug:
        """The hooks the environment sets: read once, by the daemon's entry point."""
        return cls(fault=environ.get(FAULT_ENV, ""), job_fault=environ.get(JOB_FAULT_ENV, ""),
                   check_listings=bool(environ.get(CHECK_LISTINGS_ENV)))
