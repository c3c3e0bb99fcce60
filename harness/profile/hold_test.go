package profile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// holdScript follows driver.py's handshake, as mode ncu does, with the
// real hold_device and release_device; argv[2] says where it stops early.
// After "done" it waits for the test's release: the device must be given
// back before the process ends (ncu writes its report then).
const holdScript = `import os, sys, time
sys.path.insert(0, os.path.dirname(sys.argv[3]))
import kevolve_profile_driver as d
gate, how = sys.argv[1], sys.argv[2]
if how == "crash_in_setup":
    sys.exit(3)
d.hold_device(gate)
open(os.path.join(gate, "kernels"), "w").close()
if how == "crash_in_kernels":
    sys.exit(4)
d.release_device(gate)
deadline = time.time() + 120
while not os.path.exists(os.path.join(gate, "released")):
    if time.time() > deadline:
        sys.exit(5)
    time.sleep(0.005)
`

func TestRunHoldingHoldsOnlyForTheKernels(t *testing.T) {
	py := python(t)
	refused := errors.New("no device phase to be had")
	cases := []struct {
		how            string
		holdErr        error
		wantErr        bool
		taken, release int
	}{
		{how: "whole", taken: 1, release: 1},
		{how: "crash_in_setup", wantErr: true},
		{how: "crash_in_kernels", wantErr: true, taken: 1, release: 1},
		{how: "whole", holdErr: refused, wantErr: true},
	}
	for _, tc := range cases {
		name := tc.how
		if tc.holdErr != nil {
			name = "hold_refused"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			driver, err := writeDriver(dir)
			if err != nil {
				t.Fatal(err)
			}
			gate := filepath.Join(dir, "gate")
			if err := os.Mkdir(gate, 0o755); err != nil {
				t.Fatal(err)
			}
			marked := func(n string) bool { return exists(filepath.Join(gate, n)) }
			taken, released := 0, 0
			hold := func(context.Context) (func(), error) {
				if !marked(markReady) || marked("kernels") {
					t.Errorf("held with ready=%v kernels=%v: the hold must start after the set-up, before the kernels", marked(markReady), marked("kernels"))
				}
				if tc.holdErr != nil {
					return nil, tc.holdErr
				}
				taken++
				return func() {
					released++
					if !marked("kernels") {
						t.Errorf("given back before the kernels ran")
					}
					_ = os.WriteFile(filepath.Join(gate, "released"), nil, 0o644)
				}, nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := runHolding(ctx, gate, hold, nil, py, "-c", holdScript, gate, tc.how, driver)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want an error: %v", err, tc.wantErr)
			}
			if tc.holdErr != nil && !errors.Is(err, tc.holdErr) {
				t.Fatalf("err %v, want the hold's", err)
			}
			if ctx.Err() != nil {
				t.Fatal("the run outlived its deadline instead of ending with the hold's refusal")
			}
			if taken != tc.taken || released != tc.release {
				t.Fatalf("held %d times, given back %d times; want %d and %d", taken, released, tc.taken, tc.release)
			}
			if (res.held > 0) != (tc.taken > 0) {
				t.Fatalf("reported held for %s; held %d times", res.held, taken)
			}
		})
	}
}
