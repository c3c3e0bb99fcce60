package sol

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/device"
)

// Where nothing can be calibrated the answer says what to do, at once:
// no database, or a FirstUse not made by its constructor (no hang on its
// nil semaphore).
func TestFirstUseCannotCalibrate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for name, f := range map[string]*FirstUse{"no database": NewFirstUse(nil, ""), "zero value": {}} {
		_, err := f.Ceilings(ctx, device.Report{}, "")
		if !errors.Is(err, ErrCPUUncalibrated) || !strings.Contains(err.Error(), "--db") {
			t.Errorf("%s: %v", name, err)
		}
		if _, err := f.CPU(ctx); !errors.Is(err, ErrCPUUncalibrated) {
			t.Errorf("%s: CPU: %v", name, err)
		}
	}
}
