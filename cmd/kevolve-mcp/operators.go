package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/kevolve/kevolve-mcp/search/launch"
)

// operatorFlags are the model and agent operators' settings on evolve.
type operatorFlags struct {
	contextTokens int
	novelty       float64
	deadline      time.Duration
	workDir       string
	noMemory      bool
	noWriteBack   bool
}

func registerOperatorFlags(fs *pflag.FlagSet, f *operatorFlags) {
	fs.IntVar(&f.contextTokens, "context-tokens", launch.DefaultContextTokens, "token budget of the context given to a model or agent operator")
	fs.Float64Var(&f.novelty, "novelty", 0, "reject proposals at least this similar to an existing kernel (0 = 0.98; 1.01 = off)")
	fs.DurationVar(&f.deadline, "op-deadline", 0, "limit per proposal of a model or agent operator (default: cmd 15m, openai 5m)")
	fs.StringVar(&f.workDir, "op-workdir", "", "where cmd: operators get their per-proposal directories (default: the temp dir)")
	fs.BoolVar(&f.noMemory, "no-memory", false, "do not seed the run with the best kernels of earlier runs on similar problems")
	fs.BoolVar(&f.noWriteBack, "no-writeback", false, "do not write the run's best kernel into the user's knowledge directory")
}

// settings is the flags as search/launch takes them.
func (f *operatorFlags) settings() launch.OperatorSettings {
	return launch.OperatorSettings{ContextTokens: f.contextTokens, Novelty: f.novelty, Deadline: f.deadline,
		WorkDir: f.workDir, NoMemory: f.noMemory, NoWriteBack: f.noWriteBack}
}
