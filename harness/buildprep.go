package harness

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// StagePrepareBuild is the stage_s entry for the harness's build step
// before a load_inline candidate runs (prepareBuilds).
const StagePrepareBuild = "prepare_build"

// prepareTimeout bounds one build step: a precompiled torch/extension.h
// takes 20-100 s of one core, more on a loaded host.
const prepareTimeout = 15 * time.Minute

// prepareResult is what kevolve/_prepare.py's prepare returns.
type prepareResult struct {
	Builds []struct {
		WithCUDA    bool     `json:"with_cuda"`
		ExtraCflags []string `json:"extra_cflags"`
		PCH         string   `json:"pch"`
	} `json:"builds"`
	PCHBuilt int      `json:"pch_built"`
	Errors   []string `json:"errors"`
	Error    string   `json:"error"`
	Seconds  float64  `json:"seconds"`
}

// pchDirs is a PCH folder set apart from the kernel cache
// (KEVOLVE_PCH_DIR, which _pch.py honours): the build step's sandbox lets
// it write there as it does the cache.
func pchDirs() []string {
	if d := os.Getenv("KEVOLVE_PCH_DIR"); d != "" {
		return []string{d}
	}
	return nil
}

// prepareBuilds is the harness's build step for a candidate that builds
// torch extensions with load_inline: it makes the precompiled headers its
// C++ units will want (kevolve/_prepare.py), in the shared kernel cache.
// It is a harness job, not the candidate's: it reads the candidate's source
// without running it, and is the only writer of that cache's PCHs; the
// candidate's own process only reads them (under the sandbox it cannot
// write there). One build step runs at a time: an evaluation that arrives
// while one runs goes on without it, and its candidate builds without the
// PCH being made (it uses one already made). Waiting would hold a whole
// first wave of a kernelbench run (16 evaluations on the H100 box) for the
// 30 s of one core a new PCH takes, with the other 15 cores idle; a lone
// evaluation, or the first of a sequence, still waits and uses it. It
// returns its seconds (0 where it did not run); a failure is logged and
// the candidate builds without a PCH: slower, same result.
func (e *Evaluator) prepareBuilds(ctx context.Context, candCode string) float64 {
	if !strings.Contains(candCode, "load_inline") || !e.prepMu.TryLock() {
		return 0
	}
	defer e.prepMu.Unlock()
	t0 := time.Now()
	out, err := e.w.Run(ctx, worker.Job{Module: "kevolve._prepare", Func: "prepare",
		Args: map[string]any{"candidate": candCode}, Timeout: prepareTimeout, RSSLimit: max(e.cfg.HostMemLimit, 0),
		Writable: pchDirs()})
	secs := time.Since(t0).Seconds()
	if err != nil {
		e.log.Warn("load_inline build step failed; building without a precompiled header", "err", err)
		return secs
	}
	var pr prepareResult
	if out.Result == nil || json.Unmarshal(out.Result, &pr) != nil || pr.Error != "" || len(pr.Errors) > 0 {
		e.log.Warn("load_inline build step failed; building without a precompiled header",
			"code", out.Code, "error", pr.Error, "errors", pr.Errors, "log", out.Log)
		return secs
	}
	if pr.PCHBuilt > 0 {
		e.log.Info("precompiled torch/extension.h for load_inline builds", "built", pr.PCHBuilt, "seconds", secs)
	}
	return secs
}
