package tools

import (
	"slices"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/harness/device"
)

// DeviceInfoOutput is device_info's answer: the discovery report and the
// bundled problems a search can start on here, so an agent that asked what
// this machine runs also learns what it can optimize (the instructions send
// it here first).
type DeviceInfoOutput struct {
	device.Report
	// Problems are the corpus names evolve_start and run_kernel take that
	// have a start kernel in a language of one of the targets found.
	Problems []string `json:"problems"`
}

// problemsHere lists the bundled problems with a start kernel some target
// of the report compiles, in corpus order.
func problemsHere(r device.Report) []string {
	var langs []string
	for _, t := range r.TargetTable {
		if slices.Contains(r.Targets, string(t.Name)) {
			langs = append(langs, t.Languages...)
		}
	}
	names := []string{}
	for _, p := range corpus.List() {
		for lang := range p.Starts {
			if slices.Contains(langs, lang) {
				names = append(names, p.Name)
				break
			}
		}
	}
	return names
}
