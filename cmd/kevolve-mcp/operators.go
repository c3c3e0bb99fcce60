package main

import (
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/kevolve/kevolve-mcp/retrieval"
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

// userKnowledgeDir is where the search writes what it learns (examples/
// documents): beside the database, never the embedded base. The knowledge
// index always includes it once it exists.
func userKnowledgeDir(g globalFlags) string { return filepath.Join(filepath.Dir(g.db), "knowledge") }

// memorySources adds the user's knowledge directory to the --kb sources
// when it exists and was not named already.
func memorySources(g globalFlags, sources []retrieval.Source) []retrieval.Source {
	dir := userKnowledgeDir(g)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return sources
	}
	for _, d := range g.kbDirs {
		if a, _ := filepath.Abs(d); a == dir {
			return sources
		}
	}
	return append(sources, retrieval.DirSource(dir))
}

// settings is the flags as search/launch takes them.
func (f *operatorFlags) settings() launch.OperatorSettings {
	return launch.OperatorSettings{ContextTokens: f.contextTokens, Novelty: f.novelty, Deadline: f.deadline,
		WorkDir: f.workDir, NoMemory: f.noMemory, NoWriteBack: f.noWriteBack}
}
