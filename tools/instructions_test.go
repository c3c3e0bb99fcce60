package tools

import (
	"strings"
	"testing"
)

// clientInstructionLimit is what Claude Code keeps of a server's
// instructions ("Server instructions truncated from N to 2048 chars").
const clientInstructionLimit = 2048

// The first 2,048 characters stand alone: every tool by name, the evolve
// loop in order, and the integrity rules, so an agent that sees only them
// can work and knows what is checked.
func TestInstructionsHeadSelfContained(t *testing.T) {
	if len(instructions) <= clientInstructionLimit {
		t.Skip("the instructions fit whole")
	}
	head := instructions[:clientInstructionLimit]
	for _, st := range All(Deps{}) {
		if !strings.Contains(head, st.Tool.Name) {
			t.Errorf("tool %s is not named in the first %d characters", st.Tool.Name, clientInstructionLimit)
		}
	}
	// The loop, in its order.
	loop := []string{"Loop:", "evolve_start(", "evolve_next ->", "evolve_submit(", "Repeat", "evolve_best returns"}
	at := 0
	for _, step := range loop {
		i := strings.Index(head[at:], step)
		if i < 0 {
			t.Errorf("the loop step %q is missing from the head, or out of order", step)
			continue
		}
		at += i + len(step)
	}
	// The rules, whole: the block ends (with its last sentence) inside the head.
	rules := []string{"Integrity rules", "integrity_violation", "reference's own torch op", "cache or replay outputs",
		"mutate inputs", "current stream and thread", "patch timers", "contiguous tensors", "below SOL"}
	for _, r := range rules {
		if !strings.Contains(head, r) {
			t.Errorf("integrity rule %q is not in the first %d characters", r, clientInstructionLimit)
		}
	}
	if i := strings.Index(instructions, "--- Details ---"); i < 0 || i > clientInstructionLimit {
		t.Errorf("the details start at %d: the self-contained part must end by %d", i, clientInstructionLimit)
	}
}
