package kernelbench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/kevolve/kevolve-mcp/harness"
)

// Record is one pair's result: a line of the JSONL file and a row of the
// kernelbench_results table.
type Record struct {
	Key            string `json:"key"` // hash of harness version, target, problem and candidate contents
	Level          int    `json:"level"`
	ProblemID      int    `json:"problem_id"`
	Problem        string `json:"problem"` // level1/12_Matmul_with_diagonal_matrices_
	ProblemPath    string `json:"problem_path"`
	Candidate      string `json:"candidate"` // a path, or "reference-as-candidate"
	HarnessVersion string `json:"harness_version"`
	Target         string `json:"target"` // as requested; Result.Target is what it resolved to
	// Verdict is empty when the harness failed on this pair (ToolError).
	Verdict string `json:"verdict,omitempty"`
	// VerdictKernelBenchV0 is the verdict under KernelBench v0's
	// tolerance, when the sweep asked for it and the harness gave it.
	VerdictKernelBenchV0 string   `json:"verdict_kernelbench_v0,omitempty"`
	Stage                string   `json:"stage,omitempty"`
	FailedChecks         []string `json:"failed_checks,omitempty"`
	SpeedupVsEager       *float64 `json:"speedup_vs_eager,omitempty"`
	SpeedupVsCompile     *float64 `json:"speedup_vs_compile,omitempty"`
	ToolError            string   `json:"tool_error,omitempty"`
	WallS                float64  `json:"wall_s"`
	// Resumed marks a result read back from the database instead of evaluated.
	Resumed bool                `json:"resumed,omitempty"`
	Result  *harness.EvalResult `json:"result,omitempty"`
}

// Correct is KernelBench's "correct": the harness judged it and it passed.
func (r Record) Correct() bool { return r.ToolError == "" && r.Verdict == harness.VerdictPass }

// pairKey names a pair's result: the same contents under the same harness
// and target are the same evaluation, wherever the files lie.
func pairKey(version, target string, problem, candidate []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(version), []byte(target), problem, candidate} {
		sum := sha256.Sum256(part)
		h.Write(sum[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fromResult fills a record's verdict fields from an evaluation.
func (r *Record) fromResult(res *harness.EvalResult) {
	r.Result = res
	r.Verdict, r.VerdictKernelBenchV0 = res.Verdict, res.VerdictKernelBenchV0
	r.Stage = res.Stage
	r.SpeedupVsEager, r.SpeedupVsCompile = res.SpeedupVsEager, res.SpeedupVsCompile
	r.FailedChecks = nil
	for _, c := range res.Checks {
		if !c.Passed {
			r.FailedChecks = append(r.FailedChecks, c.Name)
		}
	}
}

func (r Record) jsonLine() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
