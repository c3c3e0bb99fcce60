package harness

// The evaluation's checks as the worker's Python tree registers them
// (harness/worker/py/checks/: a module per check that runs in its stage,
// the table _declared.py of those decided inline): what run_kernel's
// description lists, and what an evaluator built over another tree runs.

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// CheckInfo is one registered check: its name in results, its stage, the
// verdict a failure gives and what passing means.
type CheckInfo = worker.CheckInfo

// EmbeddedChecks is the registry this binary carries (for a tool built
// without an evaluator).
func EmbeddedChecks() ([]CheckInfo, error) { return worker.EmbeddedChecks() }

// Checks is the registry of the Python tree this evaluator runs.
func (e *Evaluator) Checks() []CheckInfo { return e.w.Checks() }

// NewEvaluatorWithSource is NewEvaluator over another worker Python tree
// (worker.Overlay of the embedded one and a test's check module): the
// worker unpacks, verifies and runs that tree, and Checks lists its
// registry. It takes no DB: cached results are keyed by the embedded
// tree's hash (HarnessVersion), and another tree's would mix with them.
func NewEvaluatorWithSource(cfg EvalConfig, src fs.FS) (*Evaluator, error) {
	if cfg.DB != nil {
		return nil, errors.New("evaluator: another worker source with an evaluation cache: results would be keyed by the embedded source")
	}
	e, err := NewEvaluator(cfg)
	if err != nil {
		return nil, err
	}
	// NewEvaluator builds its worker from the embedded tree; nothing has
	// started yet (the parent starts on the first job), so the swap costs
	// one unpack.
	w, err := e.w.WithSource(src)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("evaluator: %w", err)
	}
	old := e.w
	e.w = w
	old.Close()
	return e, nil
}
