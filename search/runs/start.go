package runs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/engine"
	"github.com/kevolve/kevolve-mcp/search/launch"
)

// StartRequest describes a new run.
type StartRequest struct {
	// Problem is a corpus name or a KernelBench-format file; ProblemSource
	// the same file's contents inline (one of the two).
	Problem       string
	ProblemSource string
	// Start is the root candidate's file, StartSource its code inline;
	// neither = the corpus start kernel for the target.
	Start       string
	StartSource string
	// Target is cpu, nvidia or auto; Language the corpus start kernel's
	// kind; Shapes the corpus shape set.
	Target, Language, Shapes string
	Policy                   string
	Baseline                 string
	// Operator is mcp (the client proposes) or a server-side operator.
	Operator string
	Budget   search.Budget
	// Draft is the number of independent children of the start kernel
	// before the policy proper (-1 = the policy's default).
	Draft  int
	Seed   int64
	Memory search.MemoryMode
	// Parallel is how many evaluations a server-side operator's run keeps
	// in flight (0 = the server's default: 1, or the fleet's capacity).
	Parallel int
}

// Start creates a run and starts driving it; it returns as soon as the run
// and its root node are written (the start kernel is evaluated first).
func (m *Manager) Start(ctx context.Context, req StartRequest) (*search.Run, error) {
	if req.Operator == "" {
		req.Operator = OperatorName
	}
	if req.Operator != OperatorName && m.o.Launch == nil {
		return nil, fmt.Errorf("operator %q is not available in this server: use evolve_start to propose kernels yourself", req.Operator)
	}
	if m.o.Resolve == nil && (m.o.Launch == nil || m.o.Launch.Resolve == nil) {
		return nil, errors.New("this server cannot resolve problems")
	}
	spec, err := m.spec(ctx, req)
	if err != nil {
		return nil, err
	}
	p, err := m.launcher().Prepare(ctx, m.request(req, spec))
	if err != nil {
		return nil, err
	}
	op := m.clientOperator(p.Operator)
	p.Operator = op
	run, err := p.Create(ctx, p.Engine(&watchedStore{Store: m.o.Store, changed: m.changed}, 1, nil))
	if err != nil {
		return nil, err
	}
	d, err := m.launch(run.ID, op, p.Eval, false, nil, m.parallel(req.Parallel, p.Start.Problem.Target))
	if err != nil {
		return nil, err
	}
	if err := m.awaitStart(ctx, d); err != nil {
		return nil, err
	}
	return m.o.Store.Run(ctx, run.ID)
}

// request is a start request as search/launch takes it (the target in
// spec already resolved).
func (m *Manager) request(req StartRequest, spec engine.ProblemSpec) launch.Request {
	o := engine.StartOptions{Policy: req.Policy, Baseline: req.Baseline, Budget: req.Budget, Seed: req.Seed}
	o.Config.Memory, o.Config.Policy.Draft = req.Memory, req.Draft
	return launch.Request{Spec: spec, Start: o, Operator: req.Operator, Op: m.o.Op}
}

// clientOperator is op, or for mcp runs (op nil) a fresh agent operator
// the client plays.
func (m *Manager) clientOperator(op search.Operator) search.Operator {
	if op == nil {
		return newAgentOperator(m.changed)
	}
	return op
}

func (m *Manager) evaluator(ctx context.Context) (search.Evaluator, error) {
	if m.o.Evaluator == nil {
		return nil, errors.New("no evaluation service: this server found no Python with torch (see device_info)")
	}
	ev, err := m.o.Evaluator(ctx)
	if err != nil {
		return nil, fmt.Errorf("evaluation service unavailable: %w", err)
	}
	return ev, nil
}

// spec turns a request into the engine's problem spec, writing inline
// sources to files (the harness and the report read files).
func (m *Manager) spec(ctx context.Context, req StartRequest) (engine.ProblemSpec, error) {
	s := engine.ProblemSpec{Name: req.Problem, Language: req.Language, StartFile: req.Start, ShapeSet: req.Shapes}
	// The same limits as every other source and name (harness/problem).
	for arg, src := range map[string]string{"problem_source": req.ProblemSource, "start_source": req.StartSource} {
		if len(src) > problem.MaxSourceBytes {
			return s, fmt.Errorf("%s is %d bytes, over the %d MiB limit for a source", arg, len(src), problem.MaxSourceBytes>>20)
		}
	}
	for arg, name := range map[string]string{"problem": req.Problem, "start": req.Start} {
		if len(name) > problem.MaxPathBytes {
			return s, fmt.Errorf("%s %q is too long: at most %d bytes", arg, problem.Clip(name), problem.MaxPathBytes)
		}
	}
	switch {
	case req.Problem != "" && req.ProblemSource != "":
		return s, errors.New("give problem or problem_source, not both")
	case req.ProblemSource != "":
		p, err := m.inline(req.ProblemSource, "reference")
		if err != nil {
			return s, err
		}
		s.Name = p
	}
	switch {
	case req.Start != "" && req.StartSource != "":
		return s, errors.New("give start or start_source, not both")
	case req.StartSource != "":
		if !strings.Contains(req.StartSource, "ModelNew") {
			return s, errors.New("start_source defines no ModelNew: a start kernel is a Python module with class ModelNew")
		}
		p, err := m.inline(req.StartSource, "start")
		if err != nil {
			return s, err
		}
		s.StartFile = p
	}
	t, err := m.resolveTarget(ctx, req.Target)
	if err != nil {
		return s, err
	}
	s.Target = t
	switch req.Shapes {
	case "", "small", "large":
	default:
		return s, fmt.Errorf("shapes %q: use small or large", req.Shapes)
	}
	return s, nil
}

// inline writes source to WorkDir/inline/KIND-HASH.py (content-addressed,
// so the same source is one file) and returns the path.
func (m *Manager) inline(src, kind string) (string, error) {
	if m.o.WorkDir == "" {
		return "", fmt.Errorf("inline %s source is not supported by this server: give a file path", kind)
	}
	dir := filepath.Join(m.o.WorkDir, "inline")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("inline %s: %w", kind, err)
	}
	sum := sha256.Sum256([]byte(src))
	path := filepath.Join(dir, kind+"-"+hex.EncodeToString(sum[:8])+".py")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := search.WriteFileAtomic(path, []byte(src), 0o644); err != nil {
		return "", fmt.Errorf("inline %s: %w", kind, err)
	}
	return path, nil
}

// resolveTarget is Options.ResolveTarget, or the target table's parse with
// auto taken as the cpu.
func (m *Manager) resolveTarget(ctx context.Context, s string) (string, error) {
	if m.o.ResolveTarget != nil {
		return m.o.ResolveTarget(ctx, s)
	}
	if m.o.Launch != nil && m.o.Launch.ResolveTarget != nil {
		return m.o.Launch.ResolveTarget(ctx, s)
	}
	n, err := target.Parse(s)
	if err != nil {
		return "", err
	}
	if n == target.Auto {
		return string(target.CPU), nil
	}
	return string(n), nil
}
