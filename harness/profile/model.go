package profile

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ModelProfile ranks a whole model's operators by time share, with the
// Amdahl headroom 1/(1-share): the most the whole model could speed up if
// that operator took no time at all. Write the top one first.
type ModelProfile struct {
	Device    string   `json:"device"`
	TimeBasis string   `json:"time_basis"`
	Ops       []OpTime `json:"ops"`
	TotalUs   float64  `json:"total_us"`
}

// ProfileModel profiles the reference Model of a KernelBench-format file on
// the GPU when torch sees one (device time), else on the CPU (CPU time).
func ProfileModel(ctx context.Context, modelFile string, opt Options) (Report, error) {
	opt = opt.withDefaults()
	if !exists(modelFile) {
		return Report{}, fmt.Errorf("profile model: %s does not exist", modelFile)
	}
	if r, ok := noPython(opt, "model"); !ok {
		return r, nil
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	t0 := time.Now()
	d, err := newDriverRun("kevolve-model-", modelFile, "")
	if err != nil {
		return Report{}, err
	}
	defer d.close()
	args := d.args("model", opt)
	env := shapesEnv(opt)
	if opt.Backend == "cpu" {
		args = append(args, "--device", "cpu")
		env = append(env, "CUDA_VISIBLE_DEVICES=")
	}
	res, runErr := run(ctx, env, opt.Python, args...)
	if errors.Is(runErr, context.DeadlineExceeded) {
		return Report{}, fmt.Errorf("profile model: %w", runErr)
	}
	var mp ModelProfile
	if err := driverJSON(res.stdout, &mp); err != nil {
		return Report{}, fmt.Errorf("profile model: %w (stderr: %s; exit: %v)", err, clip(res.stderr, 800), runErr)
	}
	rep := Report{Mode: "model", Profiler: "torch.profiler", Available: true, Model: &mp, WallS: time.Since(t0).Seconds(),
		Notes: jailNotes(opt, res.stdout)}
	if len(mp.Ops) > 0 {
		top := mp.Ops[0]
		rep.Notes = append(rep.Notes, fmt.Sprintf("write %s first: %.1f%% of %s, Amdahl headroom %.2fx", top.Op, 100*top.Share, mp.TimeBasis, deref(top.AmdahlHeadroom)))
	}
	return rep, nil
}
