package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/lease"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// deviceProbe is what torch in a forked child can use (probe.py).
type deviceProbe struct {
	CUDA        bool   `json:"cuda"`
	HIP         string `json:"hip"` // torch.version.hip: set on a ROCm build, where "cuda" devices are AMD GPUs
	DeviceCount int    `json:"device_count"`
	DeviceName  string `json:"device_name"`
	CPUName     string `json:"cpu_name"`
	Error       string `json:"error"`
}

// gpuTarget is the GPU target torch can drive here ("" = none): ROCm
// builds report AMD GPUs through torch.cuda too, so torch.version.hip
// decides the vendor, not cuda.is_available().
func (p *deviceProbe) gpuTarget() target.Name {
	switch {
	case !p.CUDA:
		return ""
	case p.HIP != "":
		return target.AMD
	}
	return target.NVIDIA
}

func (e *Evaluator) deviceProbe(ctx context.Context) (*deviceProbe, error) {
	e.probeMu.Lock()
	defer e.probeMu.Unlock()
	if e.probe != nil {
		return e.probe, nil
	}
	out, err := e.w.Run(ctx, worker.Job{Module: "probe", Func: "main", Timeout: 60 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("device probe: %w", err)
	}
	var p deviceProbe
	if out.Result == nil {
		return nil, fmt.Errorf("device probe died (signal %d, code %d): %s", out.Signal, out.Code, out.Log)
	}
	if err := json.Unmarshal(out.Result, &p); err != nil {
		return nil, fmt.Errorf("device probe result: %w", err)
	}
	e.probe = &p
	return &p, nil
}

// Device reports the target auto resolves to and its first device's name,
// probing once in a forked child (the parent never touches a GPU).
func (e *Evaluator) Device(ctx context.Context) (target, name string, err error) {
	t, err := e.resolveTarget(ctx, "")
	if err != nil {
		return "", "", err
	}
	p, err := e.pool(ctx, t)
	if err != nil {
		return "", "", err
	}
	devs := p.Devices()
	if len(devs) == 0 {
		return string(t), "", nil
	}
	return string(t), devs[0].Name, nil
}

// ResolveTarget says which target a word means on this host: a name or an
// alias, or auto (the GPU torch can drive, else the CPU). A named GPU
// target without a device here is a *lease.NoDeviceError whose message is
// the same for every command that asks (eval, evolve, suites, the fleet).
func (e *Evaluator) ResolveTarget(ctx context.Context, s string) (target.Name, error) {
	return e.resolveTarget(ctx, s)
}

// resolveTarget parses a target (auto: the GPU torch can use, else the
// CPU) and checks one is usable here. No device of a named GPU target is a
// *lease.NoDeviceError: nothing ran, so there is no verdict.
func (e *Evaluator) resolveTarget(ctx context.Context, s string) (target.Name, error) {
	t, err := target.Parse(s)
	if err != nil {
		return "", &InputError{Arg: "target", Msg: err.Error()}
	}
	if t == target.CPU {
		return t, nil
	}
	if _, faked := e.cfg.Devices[t]; faked {
		return t, nil
	}
	probe, err := e.deviceProbe(ctx)
	if err != nil {
		return "", err
	}
	gpu := probe.gpuTarget()
	switch {
	case t == target.Auto && gpu == "":
		return target.CPU, nil
	case t == target.Auto:
		return gpu, nil
	case t == gpu:
		return t, nil
	}
	why := probe.Error
	switch {
	case gpu != "":
		why = fmt.Sprintf("the worker's torch drives %s GPUs here (torch.version.hip=%q)", gpu, probe.HIP)
	case t == target.AMD && probe.HIP == "":
		why = "the worker's torch is not a ROCm build (torch.version.hip is None), and AMD GPUs need one"
	}
	return "", &lease.NoDeviceError{Target: t, Why: why}
}

// pool returns the lease pool of a target, built on first use: configured
// devices, else discovered GPUs of the target's vendor (or as many as torch
// counts where discovery found none), else the CPU.
func (e *Evaluator) pool(ctx context.Context, t target.Name) (*lease.Pool, error) {
	e.poolMu.Lock()
	defer e.poolMu.Unlock()
	if p := e.pools[t]; p != nil {
		return p, nil
	}
	devs, ok := e.cfg.Devices[t]
	if !ok {
		var err error
		if devs, err = e.discover(ctx, t); err != nil {
			return nil, err
		}
	}
	holders := e.cfg.MaxPerDevice
	if holders == 0 && t != target.CPU {
		holders = lease.HoldersPerGPU(len(devs), runtime.NumCPU())
	}
	p := lease.NewPool(t, devs, holders)
	e.pools[t] = p
	return p, nil
}

func (e *Evaluator) discover(ctx context.Context, t target.Name) ([]lease.Device, error) {
	if t == target.CPU {
		name := "cpu"
		if probe, err := e.deviceProbe(ctx); err == nil && probe.CPUName != "" {
			name = probe.CPUName
		}
		return []lease.Device{{Target: t, Index: 0, Name: name}}, nil
	}
	var found []lease.Device
	for _, d := range e.cfg.DiscoverGPUs(ctx) {
		if d.Target == t {
			found = append(found, d)
		}
	}
	if len(found) > 0 {
		return found, nil
	}
	probe, err := e.deviceProbe(ctx)
	if err != nil {
		return nil, err
	}
	// Discovery can miss GPUs torch sees (no NVML in a container): number
	// them as torch does.
	for i := 0; i < probe.DeviceCount; i++ {
		found = append(found, lease.Device{Target: t, Index: i, Name: probe.DeviceName})
	}
	if len(found) == 0 {
		return nil, &lease.NoDeviceError{Target: t, Why: "discovery and torch found none"}
	}
	return found, nil
}

// discoverGPUs is the default EvalConfig.DiscoverGPUs: NVML and
// amd-smi/rocm-smi through the device package.
func discoverGPUs(ctx context.Context) []lease.Device {
	gpus, _, _ := device.GPUs(ctx, device.Options{})
	var out []lease.Device
	for _, g := range gpus {
		t, cc := target.NVIDIA, g.ComputeCapability
		if g.Vendor == "amd" {
			t, cc = target.AMD, ""
		}
		out = append(out, lease.Device{Target: t, Index: g.Index, UUID: g.UUID, Name: g.Name, SpecKey: g.SpecKey, CC: cc})
	}
	return out
}

// Acquire leases a device of a target (auto: the best found) for work that
// is not an evaluation: a profile (exclusive), a calibration. device is an
// index or UUID ("" = any free one).
func (e *Evaluator) Acquire(ctx context.Context, targetName, dev string, exclusive bool) (*Lease, error) {
	l, _, err := e.acquire(ctx, targetName, dev, exclusive)
	return l, err
}

// acquire is Acquire that also returns how long it waited for the device
// to be free (the pool's wait, not the target's discovery): the time an
// evaluation's deadline does not count.
func (e *Evaluator) acquire(ctx context.Context, targetName, dev string, exclusive bool) (*Lease, time.Duration, error) {
	t, err := e.resolveTarget(ctx, targetName)
	if err != nil {
		return nil, 0, err
	}
	p, err := e.pool(ctx, t)
	if err != nil {
		return nil, 0, err
	}
	t0 := time.Now()
	l, err := p.Acquire(ctx, lease.Request{Device: dev, Exclusive: exclusive})
	return l, time.Since(t0), asInputError(err)
}

// Devices lists the devices of a target (auto: the best found).
func (e *Evaluator) Devices(ctx context.Context, targetName string) ([]lease.Device, error) {
	t, err := e.resolveTarget(ctx, targetName)
	if err != nil {
		return nil, err
	}
	p, err := e.pool(ctx, t)
	if err != nil {
		return nil, err
	}
	return p.Devices(), nil
}

// asInputError turns a request for a device the pool lacks into the
// caller's mistake it is.
func asInputError(err error) error {
	var ud *lease.UnknownDeviceError
	if errors.As(err, &ud) {
		return &InputError{Arg: "device", Msg: ud.Msg}
	}
	return err
}
