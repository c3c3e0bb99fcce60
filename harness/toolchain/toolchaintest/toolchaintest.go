// Package toolchaintest gives tests their Python and their prerequisites
// with one rule: under KEVOLVE_TEST_STRICT=1 (make test sets it) a missing
// prerequisite fails the test, so CI cannot pass by skipping; otherwise the
// test skips.
package toolchaintest

import (
	"fmt"
	"os/exec"
	"sync"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// Strict reports whether missing prerequisites fail tests
// (toolchain.StrictTests: the Python tests read the variable the same way).
func Strict() bool { return toolchain.StrictTests() }

// Require fails (strict) or skips the test when err says a prerequisite is
// missing.
func Require(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if Strict() {
		t.Fatalf("KEVOLVE_TEST_STRICT=1 and a prerequisite is missing: %v", err)
	}
	t.Skipf("skipping: %v", err)
}

var torchOK sync.Map // interpreter path -> error (nil when torch imports)

// Python returns the interpreter with torch that the harness would use
// (toolchain.FindPython: KEVOLVE_PYTHON first); the torch import is checked
// once per process.
func Python(t testing.TB) string {
	t.Helper()
	p, err := toolchain.FindPython()
	Require(t, err)
	v, ok := torchOK.Load(p)
	if !ok {
		var ierr error
		if out, err := exec.Command(p, "-c", "import torch").CombinedOutput(); err != nil {
			ierr = fmt.Errorf("%s cannot import torch: %v: %s", p, err, out)
		}
		v, _ = torchOK.LoadOrStore(p, ierr)
	}
	if ierr, _ := v.(error); ierr != nil {
		Require(t, ierr)
	}
	return p
}
