"""The order xdist hands out the suite's files in (tests/conftest.py pytest_collection_modifyitems)."""

# The files that take longest (their tests' summed time, measured on the 2-core CI machine,
# 2026-12-05), longest first. xdist hands out whole files (--dist loadfile) in collection order
# (`make test` passes --no-loadscope-reorder): started first, they no longer end the run on one
# worker while the others sit idle (test_faults.py, 14 tests of up to 21 s, came last by test count).
SLOWEST_FILES = (
    "e2e/test_live_sync.py", "e2e/test_control_cli.py", "e2e/test_recovery_resend.py", "e2e/test_history.py",
    "e2e/test_bulk_safety.py", "e2e/test_push_rollback.py", "e2e/test_overlay_identity.py",
    "e2e/test_mcp_tools.py", "e2e/test_write_tools.py", "e2e/test_read_daemon.py", "e2e/test_sources.py",
    "unit/test_sources_limits.py", "e2e/test_write_semantics.py", "e2e/test_faults.py",
    "e2e/test_viewer_generations.py", "e2e/test_push.py", "e2e/test_write_lifecycle.py",
    "e2e/test_saves_names_history.py", "e2e/test_write_editors.py", "e2e/test_control_sidecars.py",
)
