package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/worker"
)

// StagePrepareBuild is the stage_s entry for the harness's build step
// before a load_inline candidate runs (prepareBuilds).
const StagePrepareBuild = "prepare_build"

// prepareTimeout bounds one build step: a precompiled torch/extension.h
// takes 20-100 s of one core, more on a loaded host, and a signature's
// bindings 10-15 s after it.
const prepareTimeout = 15 * time.Minute

// prepareResult is what kevolve/_prepare.py's prepare returns.
type prepareResult struct {
	Builds []struct {
		WithCUDA    bool     `json:"with_cuda"`
		ExtraCflags []string `json:"extra_cflags"`
		PCH         string   `json:"pch"`
	} `json:"builds"`
	PCHBuilt      int      `json:"pch_built"`
	BindingsBuilt int      `json:"bindings_built"`
	Errors        []string `json:"errors"`
	Error         string   `json:"error"`
	Seconds       float64  `json:"seconds"`
}

// pchDirs is where the build step writes: the PCH folder set apart from
// the kernel cache (KEVOLVE_PCH_DIR, which _pch.py honours), else the
// kernel cache's own pch/. The only folder of the shared cache its sandbox
// lets it write.
func (e *Evaluator) pchDirs() []string {
	if d := os.Getenv("KEVOLVE_PCH_DIR"); d != "" {
		return []string{d}
	}
	return []string{filepath.Join(e.cfg.CacheDir, "kernels", "pch")}
}

// prepareBuilds is the harness's build step for a candidate that builds
// torch extensions with load_inline: it makes what its C++ units will
// want in the shared kernel cache (kevolve/_prepare.py): the precompiled
// headers for their flags and the pybind11 bindings for their functions'
// signatures. It is a harness job, not the candidate's: it reads the
// candidate's source without running it, and is the only writer of those
// files; the candidate's own process only reads them (under the sandbox it
// cannot write there). It never waits for what another evaluation's step
// is building: a whole first wave of a kernelbench run (16 evaluations on
// the H100 box) would otherwise sit on the 30 s of one core a new PCH
// takes, with the other cores idle; those candidates build without it. It
// returns its seconds (0 where it did not run); a failure is logged and
// the candidate builds as torch would: slower, same result.
func (e *Evaluator) prepareBuilds(ctx context.Context, candCode string) float64 {
	if !strings.Contains(candCode, "load_inline") {
		return 0
	}
	t0 := time.Now()
	out, err := e.w.Run(ctx, worker.Job{Module: "kevolve._prepare", Func: "prepare",
		Args: map[string]any{"candidate": candCode}, Timeout: prepareTimeout, RSSLimit: max(e.cfg.HostMemLimit, 0),
		Writable: e.pchDirs()})
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
	if pr.PCHBuilt > 0 || pr.BindingsBuilt > 0 {
		e.log.Info("built shared headers and bindings for load_inline builds",
			"pch", pr.PCHBuilt, "bindings", pr.BindingsBuilt, "seconds", secs)
	}
	return secs
}
