package harness

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/problem"
	"github.com/kevolve/kevolve-mcp/harness/target"
)

// TestEvalJobJSON pins the arguments evaluate/main.py's main reads: a key
// renamed or dropped on the Go side, or one that starts to be sent when it
// was left out, fails here before the child reads a default instead.
func TestEvalJobJSON(t *testing.T) {
	no, yes := false, true
	cases := []struct {
		name     string
		run      evalRun
		judgeOff bool
		want     string
	}{{
		// A GPU evaluation of a file against a problem with declared work,
		// every optional key set.
		name: "nvidia, all keys",
		run: evalRun{tgt: target.NVIDIA, refPath: "/p/ref.py", refCode: "R", candCode: "C",
			knownCompile: &baseline{Stats: &Stats{MedianS: 1e-3}},
			req: EvalRequest{Trials: 5, Seed: 42, Timeout: 180 * time.Second, SOLSeconds: 2.5e-6,
				Tolerance: &problem.Tolerance{Atol: 1e-3, Rtol: 1e-2}, KernelPolicy: KernelPolicyStrict,
				ToleranceRule: ToleranceKernelBenchV0, Shapes: "large",
				Work: problem.Work{FLOPs: 2e9, Bytes: 4e6, Shapes: "large"}}},
		judgeOff: true,
		want: `{"budget_s":180,"candidate":{"code":"C"},"count_work":false,"judge":false,` +
			`"kernel_policy":"strict","reference":{"code":"R","path":"/p/ref.py"},"seed":42,"skip_timing":false,` +
			`"sol_seconds":0.0000025,"target":"nvidia","tolerance":{"atol":0.001,"rtol":0.01},` +
			`"tolerance_rule":"kernelbench-v0","trials":5}`,
	}, {
		// The defaults: the optional keys are left out, and the work is counted.
		name: "nvidia, defaults",
		run: evalRun{tgt: target.NVIDIA, refCode: "R", candPath: "/c.py", candCode: "C",
			req: EvalRequest{Trials: 5, Seed: 42, Timeout: 1500 * time.Millisecond, ToleranceRule: ToleranceDefault}},
		want: `{"budget_s":1.5,"candidate":{"code":"C","path":"/c.py"},"count_work":true,"reference":{"code":"R"},` +
			`"seed":42,"skip_timing":false,"sol_seconds":0,"target":"nvidia","trials":5}`,
	}, {
		// No timing: the work is not counted.
		name: "cpu, no timing",
		run: evalRun{tgt: target.CPU, refCode: "R", candCode: "C",
			req: EvalRequest{Trials: 1, Seed: 7, Timeout: time.Minute, SkipTiming: true}},
		want: `{"budget_s":60,"candidate":{"code":"C"},"count_work":false,"reference":{"code":"R"},` +
			`"seed":7,"skip_timing":true,"sol_seconds":0,"target":"cpu","trials":1}`,
	}, {
		// torch.compile of the reference is its own job's (compilejob.go),
		// asked for or not: the evaluation's arguments do not name it.
		name: "cpu, compile asked for",
		run: evalRun{tgt: target.CPU, refCode: "R", candCode: "C",
			req: EvalRequest{Trials: 1, Seed: 7, Timeout: time.Minute, CompileReference: &yes}},
		want: `{"budget_s":60,"candidate":{"code":"C"},"count_work":true,"reference":{"code":"R"},` +
			`"seed":7,"skip_timing":false,"sol_seconds":0,"target":"cpu","trials":1}`,
	}, {
		// AMD runs as "nvidia" (ROCm torch drives it through torch.cuda).
		name: "amd, compile off by the caller, work counted on request",
		run: evalRun{tgt: target.AMD, refCode: "R", candCode: "C",
			req: EvalRequest{Trials: 3, Seed: 42, Timeout: time.Minute, SkipTiming: true, CountWork: true, CompileReference: &no}},
		want: `{"budget_s":60,"candidate":{"code":"C"},"count_work":true,"reference":{"code":"R"},` +
			`"seed":42,"skip_timing":true,"sol_seconds":0,"target":"nvidia","trials":3}`,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			judge := ""
			if c.judgeOff {
				judge = "off"
			}
			t.Setenv("KEVOLVE_JUDGE", judge)
			got, err := json.Marshal(newEvalJob(&c.run))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("evaluate/main.py's arguments changed:\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestCompileJobJSON pins the arguments evaluate/baseline.py's main reads.
func TestCompileJobJSON(t *testing.T) {
	for _, c := range []struct {
		tgt  target.Name
		want string
	}{
		{target.NVIDIA, `{"compile_cap_s":90,"reference":{"code":"R","path":"/p/ref.py"},"seed":42,"target":"nvidia"}`},
		{target.AMD, `{"compile_cap_s":90,"reference":{"code":"R","path":"/p/ref.py"},"seed":42,"target":"nvidia"}`},
		{target.CPU, `{"compile_cap_s":240,"reference":{"code":"R","path":"/p/ref.py"},"seed":42,"target":"cpu"}`},
	} {
		got, err := json.Marshal(compileArgs(&evalRun{tgt: c.tgt, refCode: "R", refPath: "/p/ref.py", req: EvalRequest{Seed: 42}}))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%s: evaluate/baseline.py's arguments changed:\n got %s\nwant %s", c.tgt, got, c.want)
		}
	}
}
