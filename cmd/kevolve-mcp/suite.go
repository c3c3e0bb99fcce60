package main

import (
	"github.com/spf13/pflag"
)

// suiteFlags are evolve's suite settings (search/runs runs the suite).
type suiteFlags struct {
	spec  string
	id    string
	chunk int
}

func registerSuiteFlags(fs *pflag.FlagSet, f *suiteFlags) {
	fs.StringVar(&f.spec, "suite", "", "run one search per problem under one budget: corpus[:tag] or kernelbench:DIR[:levels]")
	fs.StringVar(&f.id, "suite-id", "", "the suite's id; give an earlier one to resume it (default: a new one)")
	fs.IntVar(&f.chunk, "suite-chunk", 4, "evaluations a problem gets per turn in a suite")
}
