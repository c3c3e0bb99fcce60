package fleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestManifestIsValidYAML(t *testing.T) {
	for _, kind := range []string{"StatefulSet", "Job"} {
		m, err := Manifest(ManifestOptions{Name: "kv", Namespace: "gpu", Kind: kind, Replicas: 3, GPUs: 8,
			Coordinator: "http://coord:8787", WorkerArgs: []string{"--target", "nvidia"}})
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(strings.NewReader(m))
		var docs []map[string]any
		for {
			var d map[string]any
			if err := dec.Decode(&d); err != nil {
				break
			}
			docs = append(docs, d)
		}
		if len(docs) == 0 {
			t.Fatalf("%s: no YAML documents in\n%s", kind, m)
		}
		w := docs[0]
		for _, f := range []string{"apiVersion", "kind", "metadata", "spec"} {
			if w[f] == nil {
				t.Errorf("%s: no %s", kind, f)
			}
		}
		if w["kind"] != kind {
			t.Errorf("kind %v, want %s", w["kind"], kind)
		}
		spec := w["spec"].(map[string]any)
		tmpl := spec["template"].(map[string]any)
		pod := tmpl["spec"].(map[string]any)
		c := pod["containers"].([]any)[0].(map[string]any)
		if c["image"] == nil || c["args"] == nil {
			t.Errorf("%s: container without image or args: %v", kind, c)
		}
		args := strings.Join(toStrings(c["args"].([]any)), " ")
		if !strings.Contains(args, "worker --coordinator http://coord:8787") || !strings.Contains(args, "--target nvidia") {
			t.Errorf("%s: args %q", kind, args)
		}
		if lim := c["resources"].(map[string]any)["limits"].(map[string]any)["nvidia.com/gpu"]; lim != 8 {
			t.Errorf("%s: gpu limit %v", kind, lim)
		}
		if strings.Contains(m, "s3cret") || !strings.Contains(m, "secretKeyRef") {
			t.Errorf("%s: the token must come from a Secret", kind)
		}
		switch kind {
		case "StatefulSet":
			if spec["replicas"] != 3 || spec["selector"] == nil || spec["serviceName"] == nil || len(docs) != 2 {
				t.Errorf("StatefulSet spec %v (%d docs)", spec, len(docs))
			}
		case "Job":
			if spec["parallelism"] != 3 || pod["restartPolicy"] != "OnFailure" {
				t.Errorf("Job spec %v", spec)
			}
		}
	}
	bad := []ManifestOptions{{Name: "Bad_Name", Coordinator: "http://x"}, {Coordinator: "x:1"}, {Kind: "Deployment", Coordinator: "http://x"}}
	for _, o := range bad {
		if _, err := Manifest(o); err == nil {
			t.Errorf("Manifest(%+v) accepted", o)
		}
	}
}

func toStrings(v []any) []string {
	var out []string
	for _, x := range v {
		out = append(out, x.(string))
	}
	return out
}

func TestParseWorkers(t *testing.T) {
	cases := []struct {
		in   string
		want WorkersSpec
		bad  bool
	}{
		{in: "local:3", want: WorkersSpec{Engine: "local", N: 3}},
		{in: "local", want: WorkersSpec{Engine: "local", N: 1}},
		{in: "ssh:gpu1,gpu2", want: WorkersSpec{Engine: "ssh", N: 2, Hosts: []string{"gpu1", "gpu2"}}},
		{in: "slurm:gpu:8", want: WorkersSpec{Engine: "slurm", N: 8, Partition: "gpu"}},
		{in: "slurm:debug", want: WorkersSpec{Engine: "slurm", N: 1, Partition: "debug"}},
		{in: "k8s:ml:4", want: WorkersSpec{Engine: "k8s", N: 4, Namespace: "ml"}},
		{in: "local:0", bad: true},
		{in: "local:x", bad: true},
		{in: "ssh:", bad: true},
		{in: "ssh:-oProxyCommand=evil", bad: true},
		{in: "ssh:a;rm", bad: true},
		{in: "slurm:", bad: true},
		{in: "pbs:q", bad: true},
	}
	for _, c := range cases {
		got, err := ParseWorkers(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("ParseWorkers(%q) = %+v, want an error", c.in, got)
			}
			continue
		}
		if err != nil || strings.Join(got.Hosts, ",") != strings.Join(c.want.Hosts, ",") || got.Engine != c.want.Engine || got.N != c.want.N ||
			got.Partition != c.want.Partition || got.Namespace != c.want.Namespace {
			t.Errorf("ParseWorkers(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
}

func TestSlurmScript(t *testing.T) {
	l := &SlurmLauncher{Partition: "gpu", N: 2, Config: LaunchConfig{Name: "r1", Coordinator: "http://c:1", Token: "s3cret",
		Command: []string{"/opt/kv/kevolve-mcp", "worker"}, GPUsPerNode: 4, WorkerArgs: []string{"--target", "nvidia"}, LogDir: "/tmp/logs",
		SlurmArgs: []string{"--time=02:00:00"}}}
	s, err := l.Script(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#!/bin/bash\n", "#SBATCH --job-name=r1-worker\n", "#SBATCH --partition=gpu\n", "#SBATCH --nodes=1\n",
		"#SBATCH --gres=gpu:4\n", "#SBATCH --output=/tmp/logs/%x-%j.out\n", "#SBATCH --time=02:00:00\n",
		"exec /opt/kv/kevolve-mcp worker --coordinator http://c:1 --name r1-slurm-1 --target nvidia\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "s3cret") {
		t.Error("the token is in the batch script")
	}
	l.Config.GPUsPerNode = 0
	if s, _ := l.Script(0); !strings.Contains(s, "#SBATCH --exclusive\n") {
		t.Errorf("whole-node script lacks --exclusive:\n%s", s)
	}
}

// The ssh launcher against a stand-in ssh/scp that runs the commands on
// this host in a scratch "remote home": the binary is copied when missing
// or different and not otherwise, and the token travels on stdin.
func TestSSHLauncherCommands(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	os.MkdirAll(home, 0o755)
	calls := filepath.Join(dir, "calls")
	sshStub := filepath.Join(dir, "ssh")
	scpStub := filepath.Join(dir, "scp")
	// ssh [opts] HOST CMD: run CMD in the fake home; scp [opts] SRC HOST:DST.
	os.WriteFile(sshStub, []byte(`#!/bin/sh
echo "ssh $*" >> `+calls+`
while [ "$1" = "-o" ]; do shift 2; done
host=$1; shift
cd `+home+` && exec sh -c "$*"
`), 0o755)
	os.WriteFile(scpStub, []byte(`#!/bin/sh
echo "scp $*" >> `+calls+`
while [ "$1" = "-q" ] || [ "$1" = "-o" ]; do if [ "$1" = "-o" ]; then shift; fi; shift; done
src=$1; dst=${2#*:}
cp "$src" `+home+`/"$dst"
`), 0o755)
	bin := filepath.Join(dir, "kevolve-mcp")
	// The "worker" records its argv and the token it read from stdin.
	os.WriteFile(bin, []byte("#!/bin/sh\necho \"argv $* token=$KEVOLVE_TOKEN\" > "+filepath.Join(dir, "worker.out")+"\n"), 0o755)
	l := &SSHLauncher{Hosts: []string{"gpu1"}, SSH: sshStub, SCP: scpStub,
		Config: LaunchConfig{Name: "r1", Coordinator: "http://c:1", Token: "s3 cret", Command: []string{bin}, WorkerArgs: []string{"--target", "nvidia"}}}
	ctx := context.Background()
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "worker.out"))
	l.Stop(ctx)
	out, _ := os.ReadFile(filepath.Join(dir, "worker.out"))
	if got := strings.TrimSpace(string(out)); got != "argv worker --coordinator http://c:1 --name r1-gpu1 --target nvidia token=s3 cret" {
		t.Errorf("remote worker ran as %q", got)
	}
	log, _ := os.ReadFile(calls)
	if strings.Count(string(log), "scp ") != 1 || strings.Contains(string(log), "s3 cret") {
		t.Errorf("first start: want one copy and no token on a command line:\n%s", log)
	}
	os.Remove(calls)
	if err := l.Start(ctx); err != nil {
		t.Fatal(err)
	}
	l.Stop(ctx)
	log, _ = os.ReadFile(calls)
	if strings.Contains(string(log), "scp ") {
		t.Errorf("the binary was copied again although the host has it:\n%s", log)
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
}

func TestWorkerArgs(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{}, "[]"},
		{Options{Target: "nvidia"}, "[--target nvidia]"},
		{Options{Target: "cpu", Slots: 3}, "[--target cpu --slots 3]"},
		{Options{Target: "auto", JobsPerDevice: 2}, "[--target auto --jobs-per-device 2]"},
		{Options{Target: "nvidia", EvalHostMemGiB: 8}, "[--target nvidia --eval-host-mem 8]"},
		{Options{EvalHostMemGiB: -1}, "[--eval-host-mem -1]"},
	} {
		if got := fmt.Sprint(workerArgs(tc.o)); got != tc.want {
			t.Errorf("workerArgs(%+v) = %s, want %s", tc.o, got, tc.want)
		}
	}
}
