package search

import "time"

// Progress is the run's state as termination rules and the progress line
// see it.
type Progress struct {
	Evals   int           // evaluations finished (duplicates answered from the store count)
	Elapsed time.Duration // wall time over every process that drove the run
	Tokens  int
	// SinceBest counts evaluations since the best fitness last improved.
	SinceBest   int
	BestFitness float64
	// BestTimeS and SOLSeconds are the best kernel's time and t_SOL (0 = unknown).
	BestTimeS  float64
	SOLSeconds float64
}

// Termination is τ: Stop says whether the run should end, and why.
type Termination interface {
	Stop(p Progress) (stop bool, reason string)
}
