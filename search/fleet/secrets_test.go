package fleet

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain/toolchaintest"
	"github.com/kevolve/kevolve-mcp/search"
)

const secretRef = `
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(64, 64)]

def get_init_inputs():
    return []
`

// A fleet worker's evaluations run without the token: a candidate that
// looks for it in its environment (and prints the environment into its
// log) finds nothing, and nothing the coordinator stored holds it.
func TestFleetWorkerChildHasNoToken(t *testing.T) {
	py := toolchaintest.Python(t)
	secret := "tok-" + randomID("")
	t.Setenv(tokenEnv, secret)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	q := newTestQueue(t, nil)
	coord := &Coordinator{Queue: q, Token: secret, ClaimWait: time.Second}
	if err := coord.Listen(ctx, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	// The candidate prints what it found (its own folder is all it may write).
	code := `import os, sys, torch, torch.nn as nn
print(dict(os.environ))
print("TOKEN_SEEN=" + repr([v for v in os.environ.values() if v.startswith("tok-")]) + " " + repr(os.environ.get("KEVOLVE_TOKEN")), flush=True)

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
`
	p := search.Problem{Name: "t/secret", Target: "cpu"}
	id, err := q.Enqueue(ctx, p, Kind{Target: "cpu"}, secretRef, code, 2*time.Minute, true)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- ServeWorker(ctx, WorkerOptions{Coordinator: "http://" + coord.Addr(), Token: os.Getenv(tokenEnv), Target: "cpu",
			Python: py, CacheDir: t.TempDir(), Drain: time.Second})
	}()
	deadline := time.Now().Add(4 * time.Minute)
	var j *JobRecord
	for time.Now().Before(deadline) {
		if j, _ = q.Job(ctx, id); j != nil && j.State == JobDone {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("worker ended: %v", err)
		case <-time.After(500 * time.Millisecond):
		}
	}
	if j == nil || j.State != JobDone || j.Result == nil {
		t.Fatalf("job not done: %+v", j)
	}
	if !strings.Contains(j.Result.Log, "TOKEN_SEEN=") {
		t.Fatalf("the candidate did not run: %+v", j.Result)
	}
	if !strings.Contains(j.Result.Log, "TOKEN_SEEN=[] None") {
		t.Fatalf("the candidate saw the token: %s", j.Result.Log)
	}
	stored, _ := json.Marshal(j.Result)
	if strings.Contains(string(stored), secret) {
		t.Fatal("the stored result holds the token")
	}
	var logs int
	if err := q.db.QueryRow(`SELECT count(*) FROM fleet_job_log WHERE detail LIKE ?`, "%"+secret+"%").Scan(&logs); err != nil || logs != 0 {
		t.Fatalf("events hold the token: %d %v", logs, err)
	}
	stop()
	<-done
}

// Whatever a result holds, the token is redacted from it before it is
// stored: the log, check details, the error.
func TestRedactResult(t *testing.T) {
	secret := "tok-\"quoted\\secret"
	r := ResultRequest{Error: "failed: " + secret, Result: &search.Result{Verdict: "pass", Log: "env " + secret + " end"}}
	redactResult(&r, secret)
	b, _ := json.Marshal(r)
	if strings.Contains(string(b), "quoted") || !strings.Contains(r.Result.Log, redacted) || !strings.Contains(r.Error, redacted) || r.Result.Verdict != "pass" {
		t.Fatalf("not redacted: %s", b)
	}
}

func pyQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
