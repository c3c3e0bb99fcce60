package main

import (
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestWorkerCommand(t *testing.T) {
	db := filepath.Join(t.TempDir(), "x.db")
	out, _, err := runCLI(t, "--db", db, "worker", "manifest", "k8s", "--coordinator", "http://head:8787", "--replicas", "3", "--gpus", "8", "--namespace", "ml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.NewDecoder(strings.NewReader(out)).Decode(&doc); err != nil || doc["kind"] != "StatefulSet" {
		t.Fatalf("manifest: %v %v\n%s", err, doc["kind"], out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"worker"}, `"coordinator" not set`},
		{[]string{"worker", "manifest", "k8s"}, `"coordinator" not set`},
		{[]string{"worker", "manifest", "helm", "--coordinator", "http://x:1"}, "only k8s"},
		{[]string{"worker", "manifest", "k8s", "--coordinator", "x:1"}, "must be the URL"},
		{[]string{"evolve", "--workers", "pbs:q", "--budget", "1", "--calibrate=false"}, "unknown engine"},
		{[]string{"evolve", "--workers", "slurm:gpu:2", "--listen", "127.0.0.1:0", "--budget", "1", "--calibrate=false"}, "cannot reach a coordinator on loopback"},
		{[]string{"evolve", "--listen", "0.0.0.0:0", "--budget", "1", "--calibrate=false"}, "only with a token"},
		{[]string{"evolve", "--workers", "local:2", "--targets", "tpu:v5", "--budget", "1", "--calibrate=false"}, `unknown target "tpu"`},
		{[]string{"evolve", "--targets", "h100", "--budget", "1", "--calibrate=false"}, "needs a fleet"},
		{[]string{"evolve", "--listen", "nohost", "--budget", "1", "--calibrate=false"}, "want HOST:PORT"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, _, err := runCLI(t, append([]string{"--db", db}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
