"""The kevolve package's unit tests.

One rule for missing prerequisites, the same as the Go tests'
(harness/toolchain.StrictTests): under KEVOLVE_TEST_STRICT (make test and CI
set it) a missing prerequisite fails the test, so CI cannot pass by
skipping; otherwise the test skips."""

import os
import unittest


def strict():
    """Whether a missing prerequisite fails instead of skipping."""
    return os.environ.get("KEVOLVE_TEST_STRICT", "").strip().lower() not in ("", "0", "false", "no", "off")


def require(available, reason):
    """A decorator like unittest.skipUnless(available, reason), except that
    in strict mode the test fails with the reason instead of skipping."""
    if available:
        return lambda obj: obj
    if not strict():
        return unittest.skip(reason)

    def fail(obj):
        def test_prerequisite(self):
            self.fail("KEVOLVE_TEST_STRICT is set and a prerequisite is missing: " + reason)
        if isinstance(obj, type):
            return type(obj.__name__, (unittest.TestCase,), {"test_prerequisite": test_prerequisite, "__doc__": obj.__doc__})
        return test_prerequisite
    return fail
