package device

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// This build machine has no NVIDIA driver: NVML's absence is a real case,
// and discovery must report it and carry on, not crash.
func TestNoNVMLIsReportedNotFatal(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libnvidia-ml.so.1")
	r := Discover(context.Background(), Options{NVMLLibrary: missing, SkipPython: true})
	if r.NVIDIA.Available || !strings.Contains(r.NVIDIA.Detail, "not found") {
		t.Fatalf("NVIDIA source = %+v", r.NVIDIA)
	}
	for _, g := range r.GPUs {
		if g.Vendor == "nvidia" {
			t.Fatalf("an NVIDIA GPU without NVML: %+v", g)
		}
	}
	if r.Targets[len(r.Targets)-1] != "cpu" {
		t.Fatalf("cpu target missing: %v", r.Targets)
	}
	if len(r.TargetTable) != len(r.Targets) || r.TargetTable[len(r.TargetTable)-1].TorchDevice != "cpu" {
		t.Fatalf("target table %+v for %v", r.TargetTable, r.Targets)
	}
	var buf bytes.Buffer
	if err := WriteTable(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"missing: NVML library", "CPU", "gcc", "TARGETS", "profilers torch.profiler/perf"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("doctor table lacks %q:\n%s", want, buf.String())
		}
	}
}

// With KEVOLVE_GPU=1 (the H100 box) the real driver must be found and the
// card matched to its spec row.
func TestNVIDIAOnGPUMachine(t *testing.T) {
	if os.Getenv("KEVOLVE_GPU") != "1" {
		t.Skip("no GPU here (set KEVOLVE_GPU=1 on a GPU machine)")
	}
	r := Discover(context.Background(), Options{})
	if !r.NVIDIA.Available || len(r.GPUs) == 0 {
		t.Fatalf("no GPU: %+v", r.NVIDIA)
	}
	g := r.GPUs[0]
	if g.SpecKey == "" || g.Units < 100 || g.UUID == "" || g.MemBytes == 0 || g.ComputeCapability == "" {
		t.Fatalf("GPU under-described: %+v", g)
	}
	var buf bytes.Buffer
	_ = WriteTable(&buf, r)
	t.Logf("\n%s", buf.String())
}

func TestCPUDiscovered(t *testing.T) {
	c := discoverCPU()
	if c.Threads < 1 || c.Cores < 1 || c.MemBytes == 0 || c.Model == "" {
		t.Fatalf("cpu: %+v", c)
	}
}

// The AMD parsers run on samples written in the documented JSON shapes of
// amd-smi and rocm-smi (no AMD GPU has been available to record from).
func TestAMDParsers(t *testing.T) {
	b, err := os.ReadFile("testdata/amd-smi-static.json")
	if err != nil {
		t.Fatal(err)
	}
	gpus, err := parseAMDSMI(b)
	if err != nil || len(gpus) != 2 {
		t.Fatalf("amd-smi: %v %+v", err, gpus)
	}
	g := gpus[0]
	matchSpec(&g)
	if g.Name != "AMD Instinct MI300X" || g.Units != 304 || g.Arch != "cdna3" || g.SpecKey != "mi300x" || g.MemBytes < 190<<30 {
		t.Fatalf("amd-smi gpu0: %+v", g)
	}
	b, err = os.ReadFile("testdata/rocm-smi.json")
	if err != nil {
		t.Fatal(err)
	}
	gpus, err = parseROCmSMI(b)
	if err != nil || len(gpus) != 2 || gpus[0].Index != 0 || gpus[1].UUID != "0x2b" {
		t.Fatalf("rocm-smi: %v %+v", err, gpus)
	}
	matchSpec(&gpus[0])
	if gpus[0].Arch != "cdna4" || gpus[0].SpecKey != "mi355x" {
		t.Fatalf("rocm-smi gpu0: %+v", gpus[0])
	}
	if _, err := parseAMDSMI([]byte("not json")); err == nil {
		t.Fatal("garbage parsed")
	}
}
