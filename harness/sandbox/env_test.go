package sandbox

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestFilterDropsSecretsKeepsToolchains(t *testing.T) {
	base := []string{
		"PATH=/usr/bin", "HOME=/root", "LANG=C.UTF-8", "LC_ALL=C", "LD_LIBRARY_PATH=/opt/lib",
		"CUDA_VISIBLE_DEVICES=1", "HIP_VISIBLE_DEVICES=0", "ROCR_VISIBLE_DEVICES=0", "HSA_OVERRIDE_GFX_VERSION=9.4.2",
		"TRITON_INTERPRET=1", "TORCH_CUDA_ARCH_LIST=9.0", "PYTORCH_NVML_BASED_CUDA_CHECK=1", "OMP_NUM_THREADS=4",
		"KEVOLVE_CACHE_DIR=/c", "CC=gcc", "PYTHONPATH=/p",
		"KEVOLVE_TOKEN=t", "OPENAI_API_KEY=k", "ANTHROPIC_API_KEY=a", "AWS_SECRET_ACCESS_KEY=s", "GITHUB_TOKEN=g",
		"KEVOLVE_OPENAI_KEY=k2", "TRITON_SECRET=x", "DB_PASSWORD=p", "GOOGLE_APPLICATION_CREDENTIALS=/c.json",
		"SSH_AUTH_SOCK=/tmp/agent", "HF_TOKEN=h", "USERS_OTHER_VAR=1", "EDITOR=vim", "BROKEN",
	}
	got := Filter(base, "KEVOLVE_SHAPES=small", "CUDA_VISIBLE_DEVICES=2", "KEVOLVE_TOKEN=again")
	for _, want := range []string{"PATH=/usr/bin", "HOME=/root", "LANG=C.UTF-8", "LC_ALL=C", "LD_LIBRARY_PATH=/opt/lib",
		"HIP_VISIBLE_DEVICES=0", "ROCR_VISIBLE_DEVICES=0", "HSA_OVERRIDE_GFX_VERSION=9.4.2", "TRITON_INTERPRET=1",
		"TORCH_CUDA_ARCH_LIST=9.0", "PYTORCH_NVML_BASED_CUDA_CHECK=1", "OMP_NUM_THREADS=4", "KEVOLVE_CACHE_DIR=/c",
		"CC=gcc", "PYTHONPATH=/p", "KEVOLVE_SHAPES=small", "CUDA_VISIBLE_DEVICES=2"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s dropped", want)
		}
	}
	for _, kv := range got {
		switch kv {
		case "CUDA_VISIBLE_DEVICES=1":
			t.Errorf("the job's own value did not win: %v", got)
		}
	}
	for _, name := range []string{"KEVOLVE_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN",
		"KEVOLVE_OPENAI_KEY", "TRITON_SECRET", "DB_PASSWORD", "GOOGLE_APPLICATION_CREDENTIALS", "SSH_AUTH_SOCK", "HF_TOKEN",
		"USERS_OTHER_VAR", "EDITOR", "BROKEN"} {
		for _, kv := range got {
			if kv == name || len(kv) > len(name) && kv[:len(name)+1] == name+"=" {
				t.Errorf("%s reached untrusted code", name)
			}
		}
	}
}

func TestEnvReadsThisProcess(t *testing.T) {
	t.Setenv("KEVOLVE_TOKEN", "secret")
	t.Setenv("PATH", "/usr/bin:/bin")
	env := Env("KEVOLVE_X=1")
	if slices.Contains(env, "KEVOLVE_TOKEN=secret") || !slices.Contains(env, "PATH=/usr/bin:/bin") || !slices.Contains(env, "KEVOLVE_X=1") {
		t.Fatalf("Env: %v", env)
	}
}

func TestMergeNamesEveryLayer(t *testing.T) {
	layers := Report{Active: []string{"landlock"}, Missing: map[string]string{"uid": "not root"}}.Merge()
	if len(layers) != len(Layers) {
		t.Fatalf("%d layers, want %d", len(layers), len(Layers))
	}
	for _, l := range layers {
		want := l.Name == "landlock" || l.Name == "env" || l.Name == "output_cap"
		if l.Active != want || l.Without == "" {
			t.Errorf("%+v", l)
		}
		if l.Name == "uid" && l.Detail != "not root" {
			t.Errorf("uid detail %q", l.Detail)
		}
	}
}

// TestWriteTableStates: doctor's table says which layers are active, which
// a job runs without but has something standing in for (a GPU job's PID
// namespace and uid drop), and which are simply missing.
func TestWriteTableStates(t *testing.T) {
	layers := Report{Active: []string{"cgroup", "read_only"},
		Missing:  map[string]string{"pidns": "a GPU job", "uid": "a GPU job", "landlock": "no Landlock"},
		Replaced: map[string]string{"pidns": "the job's cgroup", "uid": "the read-only host"}}.Merge()
	var b strings.Builder
	if err := WriteTable(&b, layers); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^pidns\s+replaced\s+a GPU job\n\s+instead: the job's cgroup$`),
		regexp.MustCompile(`(?m)^uid\s+replaced\s+a GPU job\n\s+instead: the read-only host$`),
		regexp.MustCompile(`(?m)^landlock\s+MISSING\s+no Landlock\n\s+without it: `),
		regexp.MustCompile(`(?m)^cgroup\s+active\s`),
	} {
		if !want.MatchString(out) {
			t.Errorf("table lacks %s:\n%s", want, out)
		}
	}
}
