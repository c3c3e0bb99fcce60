package harness

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/sol"
	"github.com/kevolve/kevolve-mcp/harness/spec"
	"github.com/kevolve/kevolve-mcp/harness/target"
)

// The own-work judgement on given measurements (the GPU tests below measure
// them with Nsight Compute): a median consistent with the candidate's own
// work passes with the algorithmic_shortcut note, one below it does not,
// and an unmeasurable candidate leaves the traced bound to decide.
func TestJudgeShortcut(t *testing.T) {
	row, ok := spec.Get("h100-sxm")
	if !ok {
		t.Fatal("no h100-sxm row")
	}
	c := sol.Ceilings{MemBandwidth: 3.0e12, PeakFLOPS: map[string]float64{spec.FP32: 60e12}}
	// A row scaling of 4096x4096 fp32: reads B, writes the output (128 MiB).
	work := OwnWork{DRAMBytes: 2 * 4096 * 4096 * 4, FLOPs: 4096 * 4096, Kernels: 1, Profiler: "ncu"}
	bound := ownBound(target.NVIDIA, work, c, &row)
	if bound <= 0 {
		t.Fatalf("bound %g", bound)
	}
	measured := func(context.Context) (OwnWork, error) { return work, nil }
	cases := []struct {
		name   string
		own    ownWorkFunc
		med    float64
		fast   bool
		detail string
		note   bool
	}{
		{"consistent_with_own_work", measured, 1.5 * bound, false, "algorithmic_shortcut", true},
		{"at_the_margin", measured, 0.95 * bound, false, "algorithmic_shortcut", true},
		{"impossible_for_own_work", measured, bound / 100, true, "below that too", false},
		{"not_measurable", func(context.Context) (OwnWork, error) { return OwnWork{}, errors.New("ncu not found") }, bound, true, "could not be measured", false},
		{"no_profiler_on_target", nil, bound, true, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := &EvalResult{SOL: &SOL{}}
			fast, detail := judgeShortcut(context.Background(), tc.own, target.NVIDIA, tc.med, c, &row, res)
			if fast != tc.fast || !strings.Contains(detail, tc.detail) {
				t.Fatalf("fast %v detail %q", fast, detail)
			}
			hasNote := strings.Contains(strings.Join(res.Notes, "\n"), "algorithmic_shortcut:")
			if hasNote != tc.note {
				t.Fatalf("notes %q", res.Notes)
			}
			if tc.own != nil && tc.detail != "could not be measured" && (res.SOL.OwnWork == nil || res.SOL.OwnWork.BoundS != bound) {
				t.Fatalf("own work not recorded: %+v", res.SOL.OwnWork)
			}
		})
	}
}

// The table `eval` prints carries the notes and the kernelbench-v0 verdict.
func TestWriteTableNotes(t *testing.T) {
	var b strings.Builder
	r := &EvalResult{Verdict: VerdictIncorrect, VerdictKernelBenchV0: VerdictPass, Checks: []Check{},
		Notes: []string{"algorithmic_shortcut: median 40 us beats the reference algorithm's speed of light"}}
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"verdict (kernelbench-v0)  PASS", "note", "algorithmic_shortcut: median 40 us"} {
		if !strings.Contains(b.String(), want) {
			t.Fatalf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// The own-work profile takes the device's gate only for its kernels
// (profile.runHolding, TestRunHoldingHoldsOnlyForTheKernels): a profile
// that never reaches them (here, without Nsight Compute or a GPU) answers
// its error without ever holding the device, whether the gate could be had
// or not.
func TestOwnWorkHoldsTheDevicePhase(t *testing.T) {
	ev := evaluator(t)
	ref := Source{Code: "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x * 2\n" +
		"def get_inputs():\n    return [torch.randn(4)]\ndef get_init_inputs():\n    return []\n"}
	for _, gateErr := range []error{nil, errors.New("no device phase to be had")} {
		taken := 0
		gate := func(context.Context) (func(), error) {
			taken++
			return func() {}, gateErr
		}
		own := ev.ownWorkFor(target.NVIDIA, ref, ref, "", nil, gate)
		if _, err := own(context.Background()); err == nil {
			t.Fatal("a profile without Nsight Compute measured something")
		}
		if taken != 0 {
			t.Fatalf("the gate was taken %d times by a profile that ran no kernel (gate error %v)", taken, gateErr)
		}
	}
}
