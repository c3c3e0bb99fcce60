package suite

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable prints the end table: one line per problem, then fast_p vs
// eager and vs torch.compile, the geomean, mean SOL score, tokens,
// GPU-seconds and what SOL-guided stopping saved.
func WriteTable(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "problem\tevals\tstopped\tcorrect\tvs eager\tvs compile\t% SOL\ttokens\teval s")
	for _, row := range r.Rows {
		why := row.Stopped
		if why == "" {
			why = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%v\t%s\t%s\t%.1f\t%d\t%.1f\n", row.Name, row.Used, why, row.Correct,
			speedup(row.SpeedupVsEager), speedup(row.SpeedupVsCompile), row.PctOfSOL, row.Tokens, row.EvalS)
	}
	tw.Flush()
	fmt.Fprintf(w, "\n\tfast_0\tfast_1\tfast_1.5\tfast_2\n")
	fmt.Fprintf(w, "vs eager\t%.2f\t%.2f\t%.2f\t%.2f\n", r.FastEager[0], r.FastEager[1], r.FastEager[2], r.FastEager[3])
	if compileMeasured(r) {
		fmt.Fprintf(w, "vs compile\t%.2f\t%.2f\t%.2f\t%.2f\n", r.FastCompile[0], r.FastCompile[1], r.FastCompile[2], r.FastCompile[3])
	} else {
		fmt.Fprintf(w, "vs compile\ttorch.compile not measured\n")
	}
	fmt.Fprintf(w, "geomean vs eager %.3fx, mean SOL score %.3f, %d tokens, %.1f GPU-seconds, %d of %d evaluations\n",
		r.Geomean, r.MeanSOLScore, r.Tokens, r.GPUSeconds, r.Used, r.Budget)
	_, err := fmt.Fprintf(w, "SOL-guided stopping saved %d evaluations against a fixed %d per problem (plateau: %d more); they went to the problems with the most headroom\n",
		r.SavedBySOL, r.FixedShare, r.SavedByPlateau)
	return err
}

// speedup prints a speedup, "-" where none was measured (0: not timed, or
// not correct).
func speedup(x float64) string {
	if x <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

// compileMeasured says whether any problem has a speedup over
// torch.compile: without one, fast_p over it would print zeros that were
// never measured.
func compileMeasured(r *Report) bool {
	for _, row := range r.Rows {
		if row.SpeedupVsCompile > 0 {
			return true
		}
	}
	return false
}
