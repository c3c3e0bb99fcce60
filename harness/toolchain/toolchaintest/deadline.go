package toolchaintest

import (
	"context"
	"testing"
	"time"
)

// reportMargin is left between a test's context and the test binary's
// deadline, so that the test fails with its own message (what it waited
// for) before go test's timeout panics with every goroutine's stack.
const reportMargin = 30 * time.Second

// Context is the context of a test's work whose time is the machine's:
// Python workers, compilers, evaluations, agents. It ends shortly before
// the test binary's deadline (go test -timeout), never at a fixed limit:
// TestPythonLoaders was killed at its own 300 s on a 2-core host where
// another make test ran beside it, work that takes a minute on an idle
// one. A hang still fails the run, at the binary's deadline.
func Context(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	if d, ok := t.Deadline(); ok {
		cancel()
		ctx, cancel = context.WithDeadline(context.Background(), d.Add(-reportMargin))
	}
	t.Cleanup(cancel)
	return ctx
}
