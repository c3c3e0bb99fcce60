package profile

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNCUGPU profiles the three recorded-case candidates with Nsight
// Compute on the GPU box (KEVOLVE_GPU=1) and checks the diagnosis and the
// 30 s budget. KEVOLVE_RECORD_DIR keeps the raw CSV and the report.
func TestNCUGPU(t *testing.T) {
	if os.Getenv("KEVOLVE_GPU") != "1" {
		t.Skip("needs KEVOLVE_GPU=1 (GPU box with ncu)")
	}
	gpu := filepath.Join("testdata", "gpu")
	cases := []struct {
		name, ref, cand string
		want, wantNot   []string
		limiter         string
	}{
		{"uncoalesced", "ref_transpose.py", "cand_transpose_naive.py", []string{Uncoalesced, MemoryBound}, nil, ""},
		{"coalesced", "ref_copy.py", "cand_copy.py", []string{MemoryBound}, []string{Uncoalesced}, ""},
		{"regheavy", "ref_poly.py", "cand_regheavy.py", []string{OccupancyLimited, RegisterPressure}, nil, "registers"},
	}
	pydir := harnessPyDir(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opt := Options{Backend: "ncu", Timeout: 3 * time.Minute, PyDir: pydir}
			if d := os.Getenv("KEVOLVE_RECORD_DIR"); d != "" {
				opt.RecordDir = filepath.Join(d, c.name)
			}
			t0 := time.Now()
			rep, err := Profile(context.Background(), filepath.Join(gpu, c.ref), filepath.Join(gpu, c.cand), opt)
			wall := time.Since(t0)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.MarshalIndent(rep, "", "  ")
			if opt.RecordDir != "" {
				os.WriteFile(filepath.Join(opt.RecordDir, "report.json"), b, 0o644)
			}
			t.Logf("%s: %.1f s wall, %d kernels, findings: %s", c.name, wall.Seconds(), len(rep.Kernels), bottlenecks(rep.Findings))
			if wall > 30*time.Second {
				t.Errorf("profiling took %s, budget 30 s", wall)
			}
			if len(rep.Kernels) != 1 {
				t.Errorf("kernels = %d, want exactly the candidate's one", len(rep.Kernels))
			}
			got := bottlenecks(rep.Findings)
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("diagnosis %q lacks %s\n%s", got, w, b)
				}
			}
			for _, w := range c.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("diagnosis %q wrongly has %s", got, w)
				}
			}
			if c.limiter != "" && (len(rep.Kernels) == 0 || !strings.Contains(rep.Kernels[0].OccupancyLimiter, c.limiter)) {
				t.Errorf("occupancy limiter not %s:\n%s", c.limiter, b)
			}
		})
	}
}

func bottlenecks(fs []Finding) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.Bottleneck)
	}
	return strings.Join(s, ",")
}

// TestProfileModelGPU: on the GPU, model mode ranks operators by the device
// time of the kernels each launched, with those kernels nested under it:
// no kernel is ranked beside its op, and shares add to at most 1.
func TestProfileModelGPU(t *testing.T) {
	if os.Getenv("KEVOLVE_GPU") != "1" {
		t.Skip("needs KEVOLVE_GPU=1 (GPU box)")
	}
	pydir := harnessPyDir(t)
	rep, err := ProfileModel(context.Background(), filepath.Join("testdata", "cpu", "ref_mlp.py"), Options{Timeout: 3 * time.Minute, PyDir: pydir})
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Model
	if m == nil || m.Device != "cuda" || len(m.Ops) == 0 {
		t.Fatalf("model profile: %+v", rep)
	}
	for _, n := range rep.Notes {
		if strings.Contains(n, "jail") {
			t.Errorf("the jail was not whole: %s", n)
		}
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	kernels := map[string]bool{}
	for _, o := range m.Ops {
		for _, k := range o.Kernels {
			kernels[k.Name] = true
		}
	}
	sum := 0.0
	for _, o := range m.Ops {
		sum += o.Share
		if len(o.Kernels) == 0 {
			t.Errorf("op %s has device time but no kernels:\n%s", o.Op, b)
		}
		if kernels[o.Op] {
			t.Errorf("kernel %s ranked as an operator:\n%s", o.Op, b)
		}
	}
	if sum > 1+1e-6 {
		t.Errorf("shares add to %v:\n%s", sum, b)
	}
	if !strings.Contains(m.Ops[0].Op, "addmm") && !strings.Contains(m.Ops[0].Op, "mm") {
		t.Errorf("top op %s, want the matmul:\n%s", m.Ops[0].Op, b)
	}
	t.Logf("%s", b)
}
