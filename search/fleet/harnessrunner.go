package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness"
	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/harnesseval"
)

// HarnessRunner runs jobs through the local evaluation service (the
// harness adapter the in-process search uses), so a fleet evaluation is the
// same evaluation: same sandboxed Python children, checks, timing and SOL.
//
// The reference travels in the job as source; it is written once per
// content hash under Dir so the harness reads it as a file, as it does
// locally.
type HarnessRunner struct {
	Adapter *harnesseval.Adapter
	Dir     string
}

// Run evaluates job on dev.
func (h *HarnessRunner) Run(ctx context.Context, job Job, dev Device) (*search.Result, error) {
	if !strings.EqualFold(job.Kind.Target, dev.Target) && job.Kind.Target != "" {
		return nil, fmt.Errorf("job %s wants %s but device %d is %s", job.ID, job.Kind, dev.Index, dev.Target)
	}
	path, err := h.reference(job.Reference)
	if err != nil {
		return nil, err
	}
	p := job.Problem
	p.ReferencePath = path
	if dev.Target != "" {
		p.Target = dev.Target
	}
	a := *h.Adapter // per job: the timeout is the job's
	if job.TimeoutS > 0 {
		a.Timeout = time.Duration(job.TimeoutS * float64(time.Second))
	}
	a.SkipTiming = a.SkipTiming || job.SkipTiming
	// A GPU job runs on the device it was claimed for, so the worker's
	// per-device job count is what the lease pool holds there and the
	// result names the GPU the coordinator assigned. CPU slots are labels
	// (fake indices) over the one CPU device: the pool places those.
	if dev.Target != "cpu" {
		a.Device = strconv.Itoa(dev.Index)
		if dev.UUID != "" {
			a.Device = dev.UUID
		}
	}
	res, err := a.Evaluate(ctx, p, job.Code)
	var bad *harness.InputError
	if a.Device != "" && errors.As(err, &bad) && bad.Arg == "device" {
		// The service's pool does not know the GPU discovery named (a
		// driver that renumbered): any device of the target will do.
		a.Device = ""
		res, err = a.Evaluate(ctx, p, job.Code)
	}
	if err != nil {
		return nil, err
	}
	if res.Device == "" {
		res.Device = dev.Name
	}
	return res, nil
}

func (h *HarnessRunner) reference(src string) (string, error) {
	if strings.TrimSpace(src) == "" {
		return "", fmt.Errorf("job carries no reference source")
	}
	sum := sha256.Sum256([]byte(src))
	path := filepath.Join(h.Dir, "refs", hex.EncodeToString(sum[:12])+".py")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", fmt.Errorf("reference cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ref-*")
	if err != nil {
		return "", fmt.Errorf("reference cache: %w", err)
	}
	tmp.WriteString(src)
	tmp.Close()
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("reference cache: %w", err)
	}
	return path, nil
}
