// Package target is the table of what kevolve-mcp can run kernels on: for
// each target its vendor, the device type torch calls it, the environment
// variable that pins a process to one device, the kernel languages it
// compiles, its profiler and how its architectures are named. It is data,
// and a leaf: discovery, leases, compile and the evaluator all read it, so
// "nvidia", "cuda" and "amd" mean the same thing everywhere.
package target

import (
	"fmt"
	"strings"
)

// Name identifies a target.
type Name string

// The targets.
const (
	NVIDIA Name = "nvidia"
	AMD    Name = "amd"
	CPU    Name = "cpu"
	// Auto is not a target: it asks for the best one found (a GPU over the CPU).
	Auto Name = "auto"
)

// Kernel languages a target may compile.
const (
	LangCUDA   = "cuda"
	LangHIP    = "hip"
	LangTriton = "triton"
	LangC      = "c"
)

// Target is one row of the table.
type Target struct {
	Name   Name   `json:"name"`
	Vendor string `json:"vendor"`
	// TorchDevice is torch's device type for it. ROCm builds of torch call
	// AMD GPUs "cuda" too: torch.cuda.is_available() alone cannot tell the
	// vendors apart (torch.version.hip can).
	TorchDevice string `json:"torch_device"`
	// VisibleDevices is the variable that limits a process to the devices it
	// lists ("" on the CPU: nothing to pin).
	VisibleDevices string `json:"visible_devices_env,omitempty"`
	// Languages are the kernel languages it compiles.
	Languages []string `json:"languages"`
	// Profilers are the profilers that explain its kernels, the preferred first.
	Profilers []string `json:"profilers"`
	// ArchPrefix is how its architectures are spelled for compilers (sm_90,
	// gfx942); ArchExample is one such name.
	ArchPrefix  string `json:"arch_prefix,omitempty"`
	ArchExample string `json:"arch_example,omitempty"`
	// Aliases are other spellings accepted for the name.
	Aliases []string `json:"aliases,omitempty"`
}

var table = []Target{
	{Name: NVIDIA, Vendor: "nvidia", TorchDevice: "cuda", VisibleDevices: "CUDA_VISIBLE_DEVICES",
		Languages: []string{LangCUDA, LangTriton, LangC}, Profilers: []string{"ncu", "torch.profiler"},
		ArchPrefix: "sm_", ArchExample: "sm_90", Aliases: []string{"cuda"}},
	{Name: AMD, Vendor: "amd", TorchDevice: "cuda", VisibleDevices: "HIP_VISIBLE_DEVICES",
		Languages: []string{LangHIP, LangTriton, LangC}, Profilers: []string{"rocprofv3", "torch.profiler"},
		ArchPrefix: "gfx", ArchExample: "gfx942", Aliases: []string{"rocm", "hip"}},
	{Name: CPU, Vendor: "cpu", TorchDevice: "cpu",
		Languages: []string{LangC, LangTriton}, Profilers: []string{"torch.profiler", "perf"},
		Aliases: []string{"host"}},
}

// All returns the table.
func All() []Target {
	out := make([]Target, len(table))
	copy(out, table)
	return out
}

// Get returns the row for a target name.
func Get(n Name) (Target, bool) {
	for _, t := range table {
		if t.Name == n {
			return t, true
		}
	}
	return Target{}, false
}

// MustGet returns the row for one of the constants above.
func MustGet(n Name) Target {
	t, ok := Get(n)
	if !ok {
		panic("target: no row for " + string(n))
	}
	return t
}

// Parse reads a target as a user or agent writes it: a name, an alias
// ("cuda", "rocm") or auto; "" is auto. Unknown names are an error that
// lists what is accepted.
func Parse(s string) (Name, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	if k == "" || k == string(Auto) {
		return Auto, nil
	}
	for _, t := range table {
		if k == string(t.Name) {
			return t.Name, nil
		}
		for _, a := range t.Aliases {
			if k == a {
				return t.Name, nil
			}
		}
	}
	return "", fmt.Errorf("unknown target %q (use %s)", s, Accepted())
}

// Accepted lists the names Parse takes, for error messages:
// "nvidia, amd, cpu or auto".
func Accepted() string {
	var names []string
	for _, t := range table {
		names = append(names, string(t.Name))
	}
	return strings.Join(names, ", ") + " or " + string(Auto)
}

// ParseTarget is Parse for a named target: auto (or "") is refused, for
// places that need one row of the table (a stored run, a fleet kind).
func ParseTarget(s string) (Target, error) {
	n, err := Parse(s)
	if err != nil {
		return Target{}, err
	}
	if n == Auto {
		return Target{}, fmt.Errorf("target %q: name one of %s", s, names())
	}
	return MustGet(n), nil
}

func names() string {
	var out []string
	for _, t := range table {
		out = append(out, string(t.Name))
	}
	return strings.Join(out[:len(out)-1], ", ") + " or " + out[len(out)-1]
}

// GPU reports whether the target is an accelerator (not the host CPU).
func (t Target) GPU() bool { return t.Name != CPU }

// DefaultLanguage is the kernel language a search or a start kernel uses
// when none is named: the target's first language (cuda, hip, c).
func (t Target) DefaultLanguage() string { return t.Languages[0] }

// DefaultShapes is the shape set problems are evaluated on when none is
// named: the small one on the CPU, where the large ones take minutes.
func (t Target) DefaultShapes() string {
	if t.GPU() {
		return "large"
	}
	return "small"
}

// Compiles reports whether the target compiles a kernel language.
func (t Target) Compiles(lang string) bool {
	for _, l := range t.Languages {
		if l == strings.ToLower(lang) {
			return true
		}
	}
	return false
}

// Arch spells a device architecture for the target's compilers: sm_90 from
// a compute capability "9.0", gfx942 from "gfx942" or "942".
func (t Target) Arch(capability string) string {
	c := strings.ToLower(strings.TrimSpace(capability))
	switch t.Name {
	case NVIDIA:
		c = strings.TrimPrefix(c, "sm_")
		return "sm_" + strings.ReplaceAll(c, ".", "")
	case AMD:
		return "gfx" + strings.TrimPrefix(c, "gfx")
	}
	return ""
}
