package launch

import (
	"github.com/kevolve/kevolve-mcp/search/engine"
)

// DraftUnset is a request's draft phase when its caller gave none: the
// policy's default applies (ApplyDefaults).
const DraftUnset = -1

// evolveDraftFloor is the evolve policy's draft phase with fewer islands
// asked: at least one independent child per default island.
const evolveDraftFloor = 4

// Suite stopping rules a suite and optimize apply per problem unless asked
// otherwise: stop within (1+SuiteEpsilon)·t_SOL or after SuitePlateau
// evaluations without a new best, so the shared budget moves on.
const (
	SuiteEpsilon = 0.1
	SuitePlateau = 8
)

// ApplyDefaults fills what a start request left to the policy: the draft
// phase is none, except under evolve one child per island (at least 4).
func ApplyDefaults(o *engine.StartOptions) {
	o.Config.Policy.Draft = Draft(o.Policy, o.Config.Policy.Draft, o.Config.Policy.Islands)
}

// Draft is the draft phase for policy given the asked one (negative =
// unset) and the asked islands.
func Draft(policy string, asked, islands int) int {
	if asked >= 0 {
		return asked
	}
	if policy == "evolve" {
		return max(islands, evolveDraftFloor)
	}
	return 0
}
