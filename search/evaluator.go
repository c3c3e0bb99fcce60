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
