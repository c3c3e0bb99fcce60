package profile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The table of a real H100 recording (the uncoalesced transpose) leads with
// its diagnosis and carries the figures that show it.
func TestWriteTableFromRecording(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "ncu", "uncoalesced_raw.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ks, err := ParseNCURaw(f)
	if err != nil || len(ks) == 0 {
		t.Fatalf("parse: %v", err)
	}
	r := Report{Mode: "kernel", Profiler: "ncu", Available: true, Kernels: ks, Findings: Diagnose(ks)}
	var b bytes.Buffer
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"DIAGNOSIS", "KERNEL", "occupancy", "sectors/request", "search_knowledge:"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "%!") {
		t.Errorf("format error in table:\n%s", out)
	}
	b.Reset()
	_ = WriteTable(&b, Report{Mode: "kernel", Profiler: "none", Missing: "ncu not found"})
	if !strings.Contains(b.String(), "ncu not found") {
		t.Errorf("missing profiler not shown: %s", b.String())
	}
}
