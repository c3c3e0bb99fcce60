package fleet

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/kevolve/kevolve-mcp/harness/device"
	tgt "github.com/kevolve/kevolve-mcp/harness/target"
)

// LocalDevices turns the host's discovery report into the devices a worker
// offers for target ("auto" = every GPU found, else the CPU). For the cpu
// target, slots is how many CPU "devices" (fake indices: concurrent
// evaluations) to offer; for a GPU target, slots > 0 keeps only the first
// slots GPUs.
func LocalDevices(rep device.Report, target string, slots int) ([]Device, error) {
	n, err := tgt.Parse(target)
	if err != nil {
		return nil, err
	}
	target = string(n)
	if n == tgt.Auto {
		target = ""
	}
	var out []Device
	if target == "" || tgt.MustGet(n).GPU() {
		for _, g := range rep.GPUs {
			t := strings.ToLower(g.Vendor)
			if gt, err := tgt.ParseTarget(t); err != nil || !gt.GPU() {
				continue
			}
			if target != "" && t != target {
				continue
			}
			d := Device{Index: g.Index, Target: t, Arch: g.Arch, Name: g.Name, UUID: g.UUID}
			if g.Spec != nil {
				d.Ceilings = jsonObject(g.Spec)
			}
			out = append(out, d)
		}
		if slots > 0 && len(out) > slots {
			out = out[:slots]
		}
		if len(out) > 0 || target != "" {
			if len(out) == 0 {
				return nil, fmt.Errorf("worker: no %s device found on this host (%s)", target, rep.NVIDIA.Detail)
			}
			return out, nil
		}
	}
	if slots <= 0 {
		slots = 1
	}
	arch := rep.CPU.Arch
	if arch == "" {
		arch = runtime.GOARCH
	}
	for i := 0; i < slots; i++ {
		out = append(out, Device{Index: i, Target: "cpu", Arch: arch, Name: rep.CPU.Model})
	}
	return out, nil
}

// ShareDevices keeps worker I's share of N ("I/N"): the GPUs whose index
// is I modulo N. CPU slots are per worker already and are kept whole.
// An empty share keeps every device.
func ShareDevices(devs []Device, share string) ([]Device, error) {
	if share == "" {
		return devs, nil
	}
	var i, n int
	if _, err := fmt.Sscanf(share, "%d/%d", &i, &n); err != nil || n < 1 || i < 0 || i >= n {
		return nil, fmt.Errorf("worker: --share %q: want I/N with 0 <= I < N", share)
	}
	var out []Device
	for _, d := range devs {
		if d.Target == "cpu" || d.Index%n == i {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("worker: share %s of this host's %d devices is empty: start fewer local workers", share, len(devs))
	}
	return out, nil
}
