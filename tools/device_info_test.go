package tools

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/kevolve/kevolve-mcp/corpus"
	"github.com/kevolve/kevolve-mcp/harness/device"
	"github.com/kevolve/kevolve-mcp/harness/target"
	"github.com/kevolve/kevolve-mcp/tools/toolstest"
)

func TestDeviceInfoOverMCP(t *testing.T) {
	// NVML pointed at a missing library: the real no-GPU case, whatever
	// machine runs the test.
	devs := device.NewCache(device.Options{NVMLLibrary: filepath.Join(t.TempDir(), "none.so"), SkipPython: true})
	c := toolstest.Connect(t, New(Deps{Devices: devs}))
	var r DeviceInfoOutput
	toolstest.Decode(t, toolstest.Call(t, c, "device_info", map[string]any{}), &r)
	if r.NVIDIA.Available || r.NVIDIA.Detail == "" || r.CPU.Threads < 1 || len(r.Tools) == 0 {
		t.Fatalf("report: %+v", r)
	}
	if r.Targets[len(r.Targets)-1] != "cpu" {
		t.Fatalf("targets %v", r.Targets)
	}
	// The CPU compiles C: every bundled problem with a C start is listed.
	if !slices.Contains(r.Problems, "llm/softmax") || !slices.Contains(r.Problems, corpus.Default) {
		t.Fatalf("problems here: %v", r.Problems)
	}
	// Schema validation is on: a wrongly typed argument is refused.
	res := toolstest.Call(t, c, "device_info", map[string]any{"refresh": "yes"})
	if !res.IsError {
		t.Fatalf("a string for a boolean was accepted: %s", toolstest.Text(res))
	}
}

// problemsHere lists a problem when a target found compiles one of its
// start kernels' languages, and only then.
func TestProblemsHereFollowTheTargetsFound(t *testing.T) {
	cpuOnly := device.Report{Targets: []string{"cpu"}, TargetTable: []target.Target{{Name: target.CPU, Languages: []string{target.LangC}}}}
	none := device.Report{Targets: []string{}}
	tests := []struct {
		name   string
		report device.Report
		want   int // problems listed; -1: every bundled problem
	}{
		{"cpu compiles every C start", cpuOnly, -1},
		{"no target, nothing to optimize", none, 0},
	}
	for _, tc := range tests {
		got := problemsHere(tc.report)
		want := tc.want
		if want < 0 {
			want = len(corpus.List())
		}
		if len(got) != want {
			t.Errorf("%s: %d problems %v, want %d", tc.name, len(got), got, want)
		}
	}
}
