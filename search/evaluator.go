package search

import "context"

// Evaluator is the evaluation service as the search uses it: one candidate
// against the problem's reference on the problem's target, returning the
// verdict, timings and speed-of-light figures (Fitness is filled in by the
// run loop from the run's baseline). An error means the service could not
// evaluate at all (no worker, cancelled); a bad kernel is a Result with its
// verdict, never an error. Implementations bound every evaluation with a
// deadline and kill what they start with its process group.
type Evaluator interface {
	Evaluate(ctx context.Context, p Problem, code string) (*Result, error)
}

// FreshEvaluator is an Evaluator that can be told to measure again rather
// than answer from a cache of earlier evaluations. A run's start node is
// evaluated this way: its timing is the run's baseline, so it is measured
// in the run, not remembered from an earlier `eval`.
type FreshEvaluator interface {
	Evaluator
	EvaluateFresh(ctx context.Context, p Problem, code string) (*Result, error)
}

// StartEvaluator is a FreshEvaluator that can leave to the run's later
// evaluations what only they need. Every other evaluation of a run waits
// for its start node's result, so what the start spends holds the whole
// run: on a GPU, timing torch.compile of the reference (11-12 s of CPU on
// the H200 host for llm/softmax, most of it Dynamo's and Inductor's
// import and code generation). withCompile says the start needs that
// timing itself: the run's fitness is over torch.compile, or no later
// evaluation would measure it.
type StartEvaluator interface {
	FreshEvaluator
	EvaluateStart(ctx context.Context, p Problem, code string, withCompile bool) (*Result, error)
}
