package harness

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/lease"
	"github.com/kevolve/kevolve-mcp/harness/target"
)

// What torch reports decides the target: on a ROCm build torch.cuda is
// available too, and those GPUs are AMD's, never "nvidia".
func TestTargetFromProbe(t *testing.T) {
	cases := []struct {
		name  string
		probe deviceProbe
		ask   string
		want  target.Name
		noDev string // a NoDeviceError containing this is expected
	}{
		{"cuda_auto", deviceProbe{CUDA: true, DeviceCount: 2}, "auto", target.NVIDIA, ""},
		{"cuda_alias", deviceProbe{CUDA: true, DeviceCount: 1}, "cuda", target.NVIDIA, ""},
		{"rocm_auto", deviceProbe{CUDA: true, HIP: "6.2.41133", DeviceCount: 8}, "", target.AMD, ""},
		{"rocm_alias", deviceProbe{CUDA: true, HIP: "6.2", DeviceCount: 8}, "rocm", target.AMD, ""},
		{"rocm_asked_nvidia", deviceProbe{CUDA: true, HIP: "6.2", DeviceCount: 8}, "nvidia", "", "drives amd GPUs"},
		{"cuda_asked_amd", deviceProbe{CUDA: true, DeviceCount: 1}, "amd", "", "no AMD device found"},
		{"cpu_only_auto", deviceProbe{Error: "torch.cuda.is_available() is False"}, "auto", target.CPU, ""},
		{"cpu_only_nvidia", deviceProbe{Error: "torch.cuda.is_available() is False"}, "nvidia", "", "no NVIDIA device found: torch.cuda.is_available() is False"},
		{"cpu_only_amd", deviceProbe{}, "amd", "", "no AMD device found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.probe
			ev := &Evaluator{probe: &p, pools: map[target.Name]*lease.Pool{}}
			got, err := ev.resolveTarget(context.Background(), tc.ask)
			if tc.noDev != "" {
				var nd *lease.NoDeviceError
				if !errors.As(err, &nd) || !strings.Contains(err.Error(), tc.noDev) {
					t.Fatalf("want NoDeviceError with %q, got %v", tc.noDev, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// With no GPU discovered, the pool numbers the devices torch counts.
func TestPoolFromTorchCount(t *testing.T) {
	ev := &Evaluator{probe: &deviceProbe{CUDA: true, HIP: "6.2", DeviceCount: 3, DeviceName: "AMD Instinct MI300X"},
		pools: map[target.Name]*lease.Pool{},
		cfg:   EvalConfig{DiscoverGPUs: func(context.Context) []lease.Device { return nil }}}
	devs, err := ev.Devices(context.Background(), "auto")
	if err != nil || len(devs) != 3 || devs[2].Index != 2 || devs[0].Target != target.AMD {
		t.Fatalf("devices %+v, %v", devs, err)
	}
	l, err := ev.Acquire(context.Background(), "amd", "1", false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if l.Env()["HIP_VISIBLE_DEVICES"] != "1" {
		t.Errorf("env %v", l.Env())
	}
	if _, err := ev.Acquire(context.Background(), "amd", "GPU-nope", false); err == nil || !strings.HasPrefix(err.Error(), "device: ") {
		t.Errorf("unknown device: %v", err)
	}
}
