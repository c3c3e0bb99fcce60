package tools

import (
	"path/filepath"
	"testing"

	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

func TestDeviceInfoOverMCP(t *testing.T) {
	// NVML pointed at a missing library: the real no-GPU case, whatever
	// machine runs the test.
	devs := device.NewCache(device.Options{NVMLLibrary: filepath.Join(t.TempDir(), "none.so"), SkipPython: true})
	c := toolstest.Connect(t, New(Deps{Devices: devs}))
	var r device.Report
	toolstest.Decode(t, toolstest.Call(t, c, "device_info", map[string]any{}), &r)
	if r.NVIDIA.Available || r.NVIDIA.Detail == "" || r.CPU.Threads < 1 || len(r.Tools) == 0 {
		t.Fatalf("report: %+v", r)
	}
	if r.Targets[len(r.Targets)-1] != "cpu" {
		t.Fatalf("targets %v", r.Targets)
	}
	// Schema validation is on: a wrongly typed argument is refused.
	res := toolstest.Call(t, c, "device_info", map[string]any{"refresh": "yes"})
	if !res.IsError {
		t.Fatalf("a string for a boolean was accepted: %s", toolstest.Text(res))
	}
}
