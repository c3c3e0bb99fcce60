package optimize

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kevolve/kevolve-mcp/search/report"
)

// WriteReport writes the model's page (operators, entries, predicted
// against measured) as dir/model.html and returns its path.
func WriteReport(dir string, s *Summary) (string, error) {
	p := report.ModelPage{Model: s.Model, Device: s.Device, Arch: s.Arch, TimeBasis: s.TimeBasis, ForwardUs: s.ForwardUs,
		Rejected: s.Rejected, Notes: s.Notes, WallS: s.WallS}
	for _, op := range s.Ops {
		p.Ops = append(p.Ops, report.ModelOp{Name: op.Name, ProblemID: op.ProblemID, Note: op.Note, Share: op.Share,
			Headroom: op.Headroom, Saving: op.Saving, Amdahl: op.Amdahl, Searched: op.Searched})
	}
	for _, e := range s.Deployed {
		p.Entries = append(p.Entries, report.ModelEntry{ID: e.ID, Op: e.Op, Shapes: fmt.Sprint(e.Shapes), Dtype: e.Dtype, Arch: e.Arch,
			Speedup: e.Speedup, Spread: e.Spread, PctOfSOL: e.PctOfSOL})
	}
	if e := s.EndToEnd; e != nil {
		p.Verified, p.Correct, p.Detail = true, e.Correct, e.Detail
		p.Measured, p.MeasuredCompile, p.Predicted, p.Gap = e.SpeedupVsEager, e.SpeedupVsCompile, e.PredictedSpeedup, e.Gap
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("model report: %w", err)
	}
	path := filepath.Join(dir, "model.html")
	f, err := os.Create(path)
	if err != nil {
		return "", fmt.Errorf("model report: %w", err)
	}
	if err := report.WriteModelHTML(f, p); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}
