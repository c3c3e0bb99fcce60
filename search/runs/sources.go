package runs

// The sources a task names rather than inlines: a node's kernel and the
// run's reference program, read on demand (the run:// resources), so an
// agent's every evolve_next need not carry them again.

import (
	"context"
	"errors"
	"fmt"

	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/search"
)

// NodeCode is the kernel of one node of a run.
func (m *Manager) NodeCode(ctx context.Context, runID string, nodeID int64) (string, error) {
	if _, err := m.run(ctx, runID); err != nil {
		return "", err
	}
	n, err := m.o.Store.Node(ctx, nodeID)
	if errors.Is(err, search.ErrNotFound) || (err == nil && n.RunID != runID) {
		return "", fmt.Errorf("run %s has no node %d (evolve_status lists its nodes' events)", runID, nodeID)
	}
	if err != nil {
		return "", fmt.Errorf("run %s node %d: %w", runID, nodeID, err)
	}
	return n.Code, nil
}

// ReferenceSource is the reference program of a run's problem.
func (m *Manager) ReferenceSource(ctx context.Context, runID string) (string, error) {
	run, err := m.run(ctx, runID)
	if err != nil {
		return "", err
	}
	b, err := problem.ReadFile("reference", run.Problem.ReferencePath)
	if err != nil {
		return "", fmt.Errorf("run %s reference: %w", runID, err)
	}
	return string(b), nil
}
