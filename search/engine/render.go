package engine

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kevolve/kevolve-mcp/search"
)

// ProgressLine is the one-line live status: evaluations, the best speedup
// over the start and the baseline, % of SOL and the time left.
func ProgressLine(s Status) string {
	sum := s.Summary
	b := &strings.Builder{}
	fmt.Fprintf(b, "[evolve %s] ", short(sum.RunID))
	if lim := s.Run.Budget.Evals; lim > 0 {
		fmt.Fprintf(b, "%d/%d evals", sum.Evaluations, lim)
	} else {
		fmt.Fprintf(b, "%d evals", sum.Evaluations)
	}
	if sum.Failed > 0 || sum.Unjudged > 0 {
		fmt.Fprintf(b, " (%d failed)", sum.Failed+sum.Unjudged)
	}
	if best := sum.Best; best != nil {
		fmt.Fprintf(b, " · best #%d", best.ID)
		if best.SpeedupOverStart > 0 { // a start that failed has no timing
			fmt.Fprintf(b, " %.2fx over start", best.SpeedupOverStart)
		}
		// Over eager whatever the run's baseline (its fitness is over that).
		if best.SpeedupVsEager > 0 {
			fmt.Fprintf(b, ", %.2fx over eager", best.SpeedupVsEager)
		}
		if best.PctOfSOL > 0 {
			fmt.Fprintf(b, ", %.0f%% of SOL", best.PctOfSOL)
		}
	} else {
		b.WriteString(" · no correct kernel yet")
	}
	if s.ETA > 0 {
		fmt.Fprintf(b, " · ETA %s", s.ETA.Round(time.Second))
	}
	if s.Last != nil && s.Last.Result != nil && s.Last.Result.Verdict != search.VerdictPass {
		fmt.Fprintf(b, " · last: %s", s.Last.Result.Verdict)
	}
	return b.String()
}

func short(id string) string {
	if len(id) > 6 {
		return id[len(id)-6:]
	}
	return id
}

// WriteSummary prints a run's summary as `evolve` ends and `evolve show`
// begins.
func WriteSummary(w io.Writer, s search.Summary) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(f string, a ...any) { fmt.Fprintf(tw, f+"\n", a...) }
	p("run\t%s", s.RunID)
	p("problem\t%s on %s (%s start)", s.Problem, s.Target, s.Language)
	p("search\tpolicy %s, operator %s, baseline %s", s.Policy, s.Operator, s.Baseline)
	st := string(s.Status)
	if s.StopReason != "" {
		st += ": " + s.StopReason
	}
	p("status\t%s", st)
	p("evaluations\t%d (%d passed, %d failed, %d answered from the store, %d not judged, %d in flight)", s.Evaluations, s.Passed, s.Failed, s.Duplicates, s.Unjudged, s.InFlight)
	if s.Start != nil {
		p("start kernel\t#%d %s%s", s.Start.ID, s.Start.Verdict, timing(s.Start, s.Baseline))
	}
	if b := s.Best; b != nil {
		p("best kernel\t#%d %s%s", b.ID, b.Verdict, timing(b, s.Baseline))
		p("  over start\t%s", ratio(b.SpeedupOverStart)) // a start that failed has no timing
		p("  over eager\t%s", ratio(b.SpeedupVsEager))
		p("  over torch.compile\t%s", ratio(b.SpeedupVsCompile))
		if b.PctOfSOL > 0 {
			p("  of speed of light\t%.1f%% (SOL score %.2f)", b.PctOfSOL, b.SOLScore)
		}
		if b.Notes != "" {
			p("  how\t%s", b.Notes)
		}
	} else {
		p("best kernel\tnone correct")
	}
	p("time\t%.1f s (evaluation %.1f s, operator %.2f s)", s.ElapsedS, s.EvalS, s.OperatorS)
	if s.Tokens > 0 || s.Rejected > 0 {
		p("tokens\t%d (%d of them in %d rejected proposals)", s.Tokens, s.RejectedTokens, s.Rejected)
	}
	return tw.Flush()
}

func timing(n *search.NodeSummary, baseline string) string {
	if n.TimeS <= 0 {
		return ""
	}
	return fmt.Sprintf(", %s, fitness %.3f (speedup over the %s baseline timed with it)", seconds(n.TimeS), n.Fitness, baseline)
}

func ratio(x float64) string {
	if x <= 0 {
		return "not measured"
	}
	return fmt.Sprintf("%.2fx", x)
}

func seconds(s float64) string {
	switch {
	case s < 1e-3:
		return fmt.Sprintf("%.2f us", s*1e6)
	case s < 1:
		return fmt.Sprintf("%.3f ms", s*1e3)
	}
	return fmt.Sprintf("%.3f s", s)
}

// WriteRuns lists runs, newest first.
func WriteRuns(w io.Writer, runs []*search.Run) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tPROBLEM\tTARGET\tPOLICY\tOPERATOR\tSTATUS\tBEST\tCREATED")
	for _, r := range runs {
		best := "-"
		if r.BestNode != 0 {
			best = fmt.Sprintf("#%d", r.BestNode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Problem.Name, r.Problem.Target, r.Policy, r.Operator, r.Status, best, r.CreatedAt.Local().Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

// WriteNodes lists a run's nodes, one line each.
func WriteNodes(w io.Writer, nodes []*search.Node) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPARENT\tSTATE\tVERDICT\tTIME\tFITNESS\t%SOL\tNOTES")
	for _, n := range nodes {
		parent, verdict, t, f, sol := "-", "-", "-", "-", "-"
		if len(n.Parents) > 0 {
			parent = fmt.Sprintf("#%d", n.Parents[0])
		}
		if r := n.Result; r != nil {
			verdict = r.Verdict
			if r.TimeS > 0 {
				t = seconds(r.TimeS)
			}
			f = fmt.Sprintf("%.3f", r.Fitness)
			if r.PctOfSOL > 0 {
				sol = fmt.Sprintf("%.0f%%", r.PctOfSOL)
			}
		}
		notes := n.Notes
		if n.DuplicateOf != 0 {
			notes = fmt.Sprintf("= #%d; %s", n.DuplicateOf, notes)
		}
		if n.Error != "" {
			notes = n.Error
		}
		if len(notes) > 70 {
			notes = notes[:67] + "..."
		}
		fmt.Fprintf(tw, "#%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.ID, parent, n.State, verdict, t, f, sol, notes)
	}
	return tw.Flush()
}
