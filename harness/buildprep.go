package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/lease"
	"github.com/kevolve/kevolve-mcp/harness/target"
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
	PCHBuilt         int      `json:"pch_built"`
	BindingsBuilt    int      `json:"bindings_built"`
	ExtensionsBuilt  int      `json:"extensions_built"`
	ExtensionsFailed int      `json:"extensions_failed"`
	Errors           []string `json:"errors"`
	Error            string   `json:"error"`
	Seconds          float64  `json:"seconds"`
}

// note is what the result says of a build step that made something (the
// first evaluation of a source is slow for it; the next ones are not).
// Never the compiler's words: the build step keeps the server's identity,
// and a source's errors could quote files its candidate may not read.
func (pr prepareResult) note(secs float64) string {
	if pr.PCHBuilt+pr.BindingsBuilt+pr.ExtensionsBuilt+pr.ExtensionsFailed == 0 {
		return ""
	}
	n := fmt.Sprintf("the harness's build step took %.1f s: %d precompiled headers, %d bindings objects and %d extensions built for this source",
		secs, pr.PCHBuilt, pr.BindingsBuilt, pr.ExtensionsBuilt)
	if pr.ExtensionsFailed > 0 {
		n += fmt.Sprintf("; %d load_inline calls did not build there (the candidate's own build reports why)", pr.ExtensionsFailed)
	}
	return n
}

// buildDirs is where the build step writes, the only folders of the shared
// cache its sandbox lets it write: the PCH folder (KEVOLVE_PCH_DIR, which
// _pch.py honours, else the kernel cache's own pch/) and the extensions it
// builds (kevolve/_extcache.py). Made here: the jail binds only folders
// that exist.
func (e *Evaluator) buildDirs() []string {
	pch := filepath.Join(e.cfg.CacheDir, "kernels", "pch")
	if d := os.Getenv("KEVOLVE_PCH_DIR"); d != "" {
		pch = d
	}
	dirs := []string{pch, filepath.Join(e.cfg.CacheDir, "kernels", "torch_extensions")}
	for _, d := range dirs {
		_ = os.MkdirAll(d, 0o755)
	}
	return dirs
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
// takes, with the other cores idle; those candidates build without it,
// at a lower CPU priority than the step building it, so that the PCH is
// not slowed to three times its idle time by the builds that lack it.
// On an NVIDIA device whose compute capability discovery gave, it also
// builds the extensions of the calls whose arguments it can read, for that
// arch, for the candidate to load (GPU jobs: their candidates keep the
// server's identity, so a build under it reads nothing they could not; a
// CPU job's candidate, which drops it, builds its own, and so does one on
// a device whose arch the build step cannot name as the candidate's build
// will). It returns its seconds (0 where it did not run) and a note for
// the result; a failure is logged and the candidate builds as torch would:
// slower, same result.
func (e *Evaluator) prepareBuilds(ctx context.Context, candCode string, dev lease.Device) (float64, string) {
	if !strings.Contains(candCode, "load_inline") {
		return 0, ""
	}
	args := map[string]any{"candidate": candCode}
	if dev.Target == target.NVIDIA && dev.CC != "" {
		args["extensions"], args["arch"] = true, dev.CC
	}
	t0 := time.Now()
	out, err := e.w.Run(ctx, worker.Job{Module: "kevolve._prepare", Func: "prepare",
		Args: args, Timeout: prepareTimeout, RSSLimit: max(e.cfg.HostMemLimit, 0), Writable: e.buildDirs()})
	secs := time.Since(t0).Seconds()
	if err != nil {
		e.log.Warn("load_inline build step failed; building without a precompiled header", "err", err)
		return secs, ""
	}
	var pr prepareResult
	if out.Result == nil || json.Unmarshal(out.Result, &pr) != nil || pr.Error != "" || len(pr.Errors) > 0 {
		e.log.Warn("load_inline build step failed; building without a precompiled header",
			"code", out.Code, "error", pr.Error, "errors", pr.Errors, "log", out.Log)
		return secs, ""
	}
	if pr.PCHBuilt+pr.BindingsBuilt+pr.ExtensionsBuilt > 0 {
		e.log.Info("the load_inline build step built for this source", "seconds", secs, "builds", string(out.Result), "log", out.Log)
	}
	return secs, pr.note(secs)
}
