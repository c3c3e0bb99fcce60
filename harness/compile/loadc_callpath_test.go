package compile

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
)

// TestLoadCCallPath runs kevolve/tests/bench_load_c.py: a load_c call, a
// direct ctypes call into the same library and the kernel's own time,
// side by side (issue 36: the call path must cost less than the kernel).
// Its figures are logged; the bounds are generous, for a loaded host: a
// load_c call within 3x a direct ctypes call (it was 10x: 14 µs against
// 1.3 µs), counted or not, and the harness's counter seeing the calls
// into a library load_c built.
func TestLoadCCallPath(t *testing.T) {
	py := needPython(t)
	root, err := filepath.Abs(filepath.Join("..", "worker", "py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(toolchaintest.Context(t))
	defer cancel()
	// Up to three measurements, the first within the bounds deciding: the
	// ratio of two sub-microsecond paths read 3.6x once beside another
	// test suite on 2 cores (load average near 8); the 10x it guards
	// against fails all three.
	var fails []string
	for try := 1; try <= 3; try++ {
		var counted int
		if fails, counted = loadCCallPathOnce(ctx, t, py, root); counted == 0 {
			t.Error("the launch counter saw no call (load_c's, nor a ctypes call into its library)")
		}
		if len(fails) == 0 {
			return
		}
		t.Logf("measurement %d: %v", try, fails)
	}
	for _, f := range fails {
		t.Error(f)
	}
}

// loadCCallPathOnce runs the benchmark once: what is over the bounds, and
// how many calls the launch counter saw.
func loadCCallPathOnce(ctx context.Context, t *testing.T, py, root string) ([]string, int) {
	cmd := exec.CommandContext(ctx, py, "-m", "kevolve.tests.bench_load_c", "--rounds", "7", "--calls", "3000")
	cmd.Dir = root
	cmd.Env = append(cmd.Environ(), "PYTHONPATH="+root, "KEVOLVE_CACHE_DIR="+t.TempDir(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bench_load_c: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	var got struct {
		US      map[string]float64 `json:"us_per_call"`
		Counted int                `json:"counted_calls"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("bench_load_c's output: %v", err)
	}
	var fails []string
	for _, pair := range [][2]string{{"load_c", "ctypes"}, {"load_c_counted", "ctypes_counted"}} {
		if a, b := got.US[pair[0]], got.US[pair[1]]; !(a > 0 && b > 0 && a <= 3*b) {
			fails = append(fails, fmt.Sprintf("%s: %.2f µs a call against %s's %.2f µs: want at most 3x", pair[0], a, pair[1], b))
		}
	}
	return fails, got.Counted
}
