package harness

import "fmt"

// defaultHostMemLimit is EvalConfig.HostMemLimit's default: half the host's
// memory, at most 32 GiB (16 GiB where the size is unknown). Several
// evaluations run at once, so this is a bound on a runaway, not a share.
func defaultHostMemLimit(total int64) int64 {
	if total <= 0 {
		return 16 << 30
	}
	return min(total/2, 32<<30)
}

// HostMemLimitGiB turns a limit in GiB, as flags give it, into
// EvalConfig.HostMemLimit: 0 the default, negative none.
func HostMemLimitGiB(gib float64) int64 {
	switch {
	case gib < 0:
		return -1
	case gib == 0:
		return 0
	}
	return int64(gib * (1 << 30))
}

// runningSide names the program an evaluation child's status board says
// was running when it was killed: candidate, reference or harness ("" when
// the board says nothing).
func runningSide(board string) string {
	switch board {
	case "candidate", "reference", "harness":
		return board
	}
	return ""
}

// whileRunning is ", while the candidate ran" (or the reference, the
// harness) for a kill's detail; "" when the board says nothing.
func whileRunning(board string) string {
	if who := runningSide(board); who != "" {
		return ", while the " + who + " ran"
	}
	return ""
}

func gib(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }
