package compile

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

var ptxTargetRE = regexp.MustCompile(`(?m)^\s*\.target\s+(sm_\w+)`)

//go:embed triton_compile.py
var tritonScript []byte

// tritonBuilder runs triton.compile for a fixed target in the harness's
// Python (no GPU needed). CUDA: Triton's wheel ships ptxas; ptxas -v on the
// PTX gives resource usage and cuobjdump on the cubin the SASS summary. AMD
// (gfx*): Triton's HIP backend writes AMDGCN assembly, whose metadata and
// instructions give registers, LDS, scratch, occupancy and MFMA use.
type tritonBuilder struct{ python, disasm string }

func (b *tritonBuilder) prepare(req Request) (string, error) {
	var err error
	if b.python, err = FindPython(); err != nil {
		return "", fmt.Errorf("compile triton: %w", err)
	}
	if IsAMDArch(req.Arch) {
		return fileIdent(b.python), nil
	}
	if b.disasm, err = findDisassembler(); err != nil {
		return "", fmt.Errorf("compile triton: %w", err)
	}
	return fileIdent(b.python) + "|" + fileIdent(b.disasm), nil
}

type tritonOut struct {
	OK             bool              `json:"ok"`
	Status         string            `json:"status"`
	Diagnostics    []Diagnostic      `json:"diagnostics"`
	Log            string            `json:"log"`
	Note           string            `json:"note"`
	Kernel         string            `json:"kernel"`
	Name           string            `json:"name"`
	NumWarps       int               `json:"num_warps"`
	Shared         int               `json:"shared"`
	Ptxas          string            `json:"ptxas"`
	CompileSeconds float64           `json:"compile_seconds"`
	Signature      map[string]string `json:"signature"`
}

func (b *tritonBuilder) build(ctx context.Context, req Request, dir string) (*Result, error) {
	if err := os.WriteFile(filepath.Join(dir, "kernel.py"), []byte(req.Source), 0o644); err != nil {
		return nil, fmt.Errorf("compile triton: write source: %w", err)
	}
	script := filepath.Join(dir, "triton_compile.py")
	if err := os.WriteFile(script, tritonScript, 0o644); err != nil {
		return nil, fmt.Errorf("compile triton: write script: %w", err)
	}
	amd := IsAMDArch(req.Arch)
	in := map[string]any{
		"source_path": filepath.Join(dir, "kernel.py"), "kernel": req.Kernel, "signature": req.Signature,
		"constants": req.Constants, "divisible16": req.Divisible16, "num_warps": req.NumWarps, "num_stages": req.NumStages, "out_dir": dir,
	}
	if amd {
		in["amd_arch"], in["warp_size"] = req.Arch, WavefrontSize(req.Arch)
	} else {
		in["cc"], _ = strconv.Atoi(strings.TrimRight(strings.TrimPrefix(req.Arch, "sm_"), "af"))
	}
	inJSON, _ := json.Marshal(in)
	res := &Result{Language: LangTriton, Arch: req.Arch, Compiler: b.python + " (triton.compile)"}
	start := time.Now()
	out := run(ctx, dir, nil, string(inJSON), b.python, script)
	res.CompileSeconds = time.Since(start).Seconds()
	if out.TimedOut {
		res.Status = StatusTimeout
		res.Log = trimLog(out.Stderr, 8000)
		return res, nil
	}
	if out.Err != nil {
		return nil, fmt.Errorf("compile triton: run python: %w", out.Err)
	}
	var to tritonOut
	if err := json.Unmarshal([]byte(toolchain.LastJSONLine(out.Stdout)), &to); err != nil {
		res.Diagnostics = []Diagnostic{{Severity: "error", Message: "the Triton compile script failed: " + toolchain.LastLine(out.Stderr)}}
		res.Log = trimLog(out.Stdout+out.Stderr, 8000)
		return res, nil
	}
	res.Diagnostics, res.Note, res.Log = to.Diagnostics, to.Note, trimLog(to.Log, 8000)
	if to.Status == StatusUnavailable {
		res.Status = StatusUnavailable
		res.Note = strings.TrimSpace(res.Note + " Triton could not compile here without a GPU toolchain; run on the GPU box or install triton with its bundled ptxas.")
	}
	if !to.OK {
		return res, nil
	}
	res.OK = true
	if amd {
		return b.amdResult(res, to, dir)
	}
	k := Kernel{Name: to.Name, NumWarps: to.NumWarps, SharedDynBytes: to.Shared}
	// Resource usage: ptxas -v on the PTX Triton produced (Triton's own ptxas).
	if to.Ptxas != "" {
		target := req.Arch
		if ptx, err := os.ReadFile(filepath.Join(dir, "kernel.ptx")); err == nil {
			if m := ptxTargetRE.FindSubmatch(ptx); m != nil {
				target = string(m[1]) // Triton targets sm_90a on Hopper
			}
		}
		p := run(ctx, dir, nil, "", to.Ptxas, "-v", "--gpu-name="+target, "kernel.ptx", "-o", "ptxas.cubin")
		if p.Err == nil && p.ExitCode == 0 {
			if ks := ParsePtxasInfo(p.Stdout + p.Stderr); len(ks) > 0 {
				nk := ks[0]
				nk.NumWarps, nk.SharedDynBytes = k.NumWarps, k.SharedDynBytes
				k = nk
			}
		} else {
			res.Note = strings.TrimSpace(res.Note + " ptxas -v failed: " + toolchain.LastLine(p.Stderr))
		}
	}
	res.Kernels = []Kernel{k}
	if err := attachSASS(ctx, res, b.disasm, dir, "kernel.cubin"); err != nil {
		res.Note = strings.TrimSpace(res.Note + " " + err.Error())
	}
	return res, nil
}

// amdResult reads the AMDGCN assembly Triton wrote for an AMD arch.
func (b *tritonBuilder) amdResult(res *Result, to tritonOut, dir string) (*Result, error) {
	asm, err := os.ReadFile(filepath.Join(dir, "kernel.amdgcn"))
	if err != nil {
		return nil, fmt.Errorf("compile triton: read the AMDGCN assembly: %w", err)
	}
	ks, total := ParseAMDGCN(string(asm))
	for i := range ks {
		if ks[i].Name == to.Name {
			// Triton allocates its LDS dynamically, at launch: the compiler's
			// occupancy estimate does not count it.
			ks[i].NumWarps, ks[i].SharedDynBytes = to.NumWarps, to.Shared
		}
	}
	if len(ks) == 0 {
		ks = []Kernel{{Name: to.Name, NumWarps: to.NumWarps, SharedDynBytes: to.Shared}}
		res.Note = strings.TrimSpace(res.Note + " no kernel metadata found in the AMDGCN assembly.")
	}
	res.Kernels, res.AMDGCN = ks, total
	res.Note = strings.TrimSpace(res.Note + fmt.Sprintf(" On AMD num_warps counts %d-lane wavefronts: num_warps=%d is %d threads.",
		WavefrontSize(res.Arch), to.NumWarps, to.NumWarps*WavefrontSize(res.Arch)))
	addAMDNotes(res)
	res.See = seeAMD(res)
	return res, nil
}
