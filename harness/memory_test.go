package harness

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memCapBytes (unused until calibrated) is the extra address space the child of
// TestHonestCandidateUnderMemoryCap may use: room for the inputs and both
// outputs of ref_relu_big.py (3 x 128 MiB) and the chunked comparison's
// temporaries, as KernelBench holds them, but not for the full copies the
// harness used to make (a copy of the inputs for the reference, copies to
// detect input writes, every trial's outputs, two more input sets and four
// outputs in the memoization check): that path ran out of memory here.
const memCapBytes = 1400 << 20

var _ = memCapBytes

// An honest candidate on a problem whose tensors are large next to the
// memory the child may use gets a real verdict (pass), not out_of_memory:
// every stage holds at most about inputs + two outputs + constants.
func TestHonestCandidateUnderMemoryCap(t *testing.T) {
	if gpuMode() {
		t.Skip("the cap is the CPU child's address-space limit")
	}
	// Not calibrated yet: on the shared CPU box glibc keeps freed
	// temporaries below its mmap threshold in the heap, so the address
	// space grows past what is live; run by hand with KEVOLVE_TEST_MEMCAP
	// (MiB) until the cap is fixed.
	s := os.Getenv("KEVOLVE_TEST_MEMCAP")
	if s == "" {
		t.Skip("set KEVOLVE_TEST_MEMCAP (MiB) to run; the default cap is not calibrated yet")
	}
	py := testPython(t)
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	limit := v << 20
	ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: t.TempDir(), CPUMemLimit: limit,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: readTestdata(t, "ref_relu_big.py")},
		Candidate: Source{Code: readTestdata(t, "relu_big_honest.py")}, Target: "cpu", Timeout: 300 * time.Second}, nil)
	if err != nil {
		t.Fatalf("Evaluate: %v", err)
	}
	if res.Memory != nil {
		t.Logf("peak RSS %d MiB; per stage (MiB): %v", res.Memory.ProcessPeakRSS>>20, mib(res.Memory.StagePeakRSS))
	}
	if res.Verdict != VerdictPass {
		t.Fatalf("verdict %s, want pass under a %d MiB cap\n%s", res.Verdict, limit>>20, dump(res))
	}
	if res.Memory == nil || len(res.Memory.StagePeakRSS) == 0 || res.Memory.StagePeakRSS["correctness"] <= 0 {
		t.Errorf("no per-stage memory figures: %+v", res.Memory)
	}
	if _, ok := res.StageS["timing"]; !ok {
		t.Errorf("timing did not run: %v", res.StageS)
	}
}

func mib(m map[string]int64) map[string]int64 {
	r := map[string]int64{}
	for k, v := range m {
		r[k] = v >> 20
	}
	return r
}

// TestHostMemoryLimit: a program that fills host memory (itself, or a
// process it started) is killed at EvalConfig.HostMemLimit and gets a
// runtime_error naming it, within seconds, on every target; GPU jobs have
// no other host limit. A deadline's kill also says which program ran.
func TestHostMemoryLimit(t *testing.T) {
	py := testPython(t)
	const limit = 2 << 30
	ev, err := NewEvaluator(EvalConfig{Python: py, CacheDir: t.TempDir(), HostMemLimit: limit,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	ref := readTestdata(t, "ref_normalize.py")
	honest := readTestdata(t, "persistent_buffer.py")
	inForward := func(src, lines string) string {
		return strings.Replace(src, "def forward(self, x):\n", "def forward(self, x):\n"+lines, 1)
	}
	// 256 MiB at a time, each touched, up to 12 GiB: under the CPU child's
	// 16 GiB address-space limit, over the 2 GiB resident one.
	hog := "        import time\n        hog = [bytearray(1 << 28) for _ in range(48)]\n        time.sleep(60)\n"
	hogChild := "        import subprocess, sys, time\n        subprocess.Popen([sys.executable, '-c', 'import time; x = [bytearray(1 << 28) for _ in range(48)]; time.sleep(60)'])\n        time.sleep(60)\n"
	cases := []struct {
		name, ref, cand, check, detail string
		timeout                        time.Duration
	}{
		{"candidate_fills_host_memory", ref, inForward(honest, hog), "out_of_memory", "the candidate ran out of memory", 40 * time.Second},
		{"candidate_child_fills_host_memory", ref, inForward(honest, hogChild), "out_of_memory", "the candidate ran out of memory", 40 * time.Second},
		{"reference_fills_host_memory", inForward(ref, hog), honest, "out_of_memory", "the reference ran out of memory", 40 * time.Second},
		{"candidate_hangs", ref, inForward(honest, "        import time\n        time.sleep(3600)\n"), "deadline", "while the candidate ran", 8 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			res, err := ev.EvaluateRequest(context.Background(), EvalRequest{Reference: Source{Code: tc.ref}, Candidate: Source{Code: tc.cand},
				Target: testTarget(), Timeout: tc.timeout, SkipTiming: true}, nil)
			if err != nil {
				t.Fatalf("Evaluate: %v", err)
			}
			d, ok := failedCheck(res, tc.check)
			if !ok || !strings.Contains(d, tc.detail) {
				t.Fatalf("verdict %s: no failed %s check saying %q\n%s", res.Verdict, tc.check, tc.detail, dump(res))
			}
			if tc.check == "out_of_memory" {
				if res.Verdict != VerdictRuntimeError || res.Memory == nil || res.Memory.ProcessPeakRSS <= limit {
					t.Errorf("verdict %s memory %+v, want runtime_error over %d", res.Verdict, res.Memory, limit)
				}
				if wall := time.Since(t0); wall > 30*time.Second {
					t.Errorf("the limit took %s to act", wall)
				}
			}
			t.Logf("%s (%s): %s", res.Verdict, time.Since(t0).Round(time.Millisecond), d)
		})
	}
}
