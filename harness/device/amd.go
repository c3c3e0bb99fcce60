package device

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kevolve/kevolve-mcp/harness/toolchain"
)

// discoverAMD asks amd-smi, then rocm-smi, for their JSON output.
func discoverAMD(ctx context.Context) ([]GPU, Source) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if p, err := toolchain.Which("amd-smi"); err == nil {
		out, err := exec.CommandContext(ctx, p, "static", "--json").Output()
		if err != nil {
			return nil, Source{Detail: fmt.Sprintf("amd-smi static --json failed: %v", err)}
		}
		gpus, err := parseAMDSMI(out)
		if err != nil {
			return nil, Source{Detail: err.Error()}
		}
		return gpus, Source{Available: len(gpus) > 0, Detail: fmt.Sprintf("amd-smi: %d device(s)", len(gpus))}
	}
	if p, err := toolchain.Which("rocm-smi"); err == nil {
		out, err := exec.CommandContext(ctx, p, "--showproductname", "--showmeminfo", "vram", "--showuniqueid", "--json").Output()
		if err != nil {
			return nil, Source{Detail: fmt.Sprintf("rocm-smi --json failed: %v", err)}
		}
		gpus, err := parseROCmSMI(out)
		if err != nil {
			return nil, Source{Detail: err.Error()}
		}
		return gpus, Source{Available: len(gpus) > 0, Detail: fmt.Sprintf("rocm-smi: %d device(s)", len(gpus))}
	}
	return nil, Source{Detail: "neither amd-smi nor rocm-smi is on PATH: no ROCm stack on this machine"}
}

// parseAMDSMI reads `amd-smi static --json`: a list (or {"gpu_data": list})
// of objects with "gpu", "asic" {market_name, target_graphics_version,
// num_compute_units}, "vram" {size: {value, unit}} and "board".
func parseAMDSMI(b []byte) ([]GPU, error) {
	var list []map[string]any
	if err := json.Unmarshal(b, &list); err != nil {
		var wrapped struct {
			GPUData []map[string]any `json:"gpu_data"`
		}
		if err2 := json.Unmarshal(b, &wrapped); err2 != nil {
			return nil, fmt.Errorf("amd-smi JSON: %w", err)
		}
		list = wrapped.GPUData
	}
	var gpus []GPU
	for i, d := range list {
		g := GPU{Index: i, Vendor: "amd"}
		if v, ok := num(d["gpu"]); ok {
			g.Index = int(v)
		}
		asic, _ := d["asic"].(map[string]any)
		g.Name = str(asic["market_name"])
		if g.Name == "" {
			g.Name = str(mapOf(d["board"])["product_name"])
		}
		gfx := str(asic["target_graphics_version"])
		g.ComputeCapability = gfx
		g.Arch = archForGFX(gfx)
		if v, ok := num(asic["num_compute_units"]); ok {
			g.Units = int(v)
		}
		g.UUID = str(asic["asic_serial"])
		if size := mapOf(mapOf(d["vram"])["size"]); size != nil {
			g.MemBytes = sizeBytes(size["value"], str(size["unit"]))
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}

// parseROCmSMI reads rocm-smi's JSON: {"card0": {"Card Series": ..., "Card
// SKU"..., "VRAM Total Memory (B)": "...", "GFX Version": "gfx942"}}.
func parseROCmSMI(b []byte) ([]GPU, error) {
	var cards map[string]map[string]any
	if err := json.Unmarshal(b, &cards); err != nil {
		return nil, fmt.Errorf("rocm-smi JSON: %w", err)
	}
	var gpus []GPU
	for key, c := range cards {
		if !strings.HasPrefix(key, "card") {
			continue
		}
		idx, _ := strconv.Atoi(strings.TrimPrefix(key, "card"))
		g := GPU{Index: idx, Vendor: "amd"}
		for _, k := range []string{"Card Series", "Card series", "Card Model", "Device Name"} {
			if s := str(c[k]); s != "" {
				g.Name = s
				break
			}
		}
		g.UUID = str(c["Unique ID"])
		if gfx := str(c["GFX Version"]); gfx != "" {
			g.ComputeCapability, g.Arch = gfx, archForGFX(gfx)
		}
		if v, err := strconv.ParseInt(str(c["VRAM Total Memory (B)"]), 10, 64); err == nil {
			g.MemBytes = v
		}
		gpus = append(gpus, g)
	}
	// map order is random: keep the device order stable.
	for i := 1; i < len(gpus); i++ {
		for j := i; j > 0 && gpus[j].Index < gpus[j-1].Index; j-- {
			gpus[j], gpus[j-1] = gpus[j-1], gpus[j]
		}
	}
	return gpus, nil
}

var gfxRe = regexp.MustCompile(`gfx(\d+)`)

func archForGFX(gfx string) string {
	m := gfxRe.FindStringSubmatch(strings.ToLower(gfx))
	if m == nil {
		return ""
	}
	switch m[1] {
	case "942", "940", "941":
		return "cdna3"
	case "950":
		return "cdna4"
	case "90a":
		return "cdna2"
	}
	return "gfx" + m[1]
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return ""
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func sizeBytes(v any, unit string) int64 {
	f, ok := num(v)
	if !ok {
		return 0
	}
	switch strings.ToUpper(unit) {
	case "MB", "MIB":
		return int64(f) << 20
	case "GB", "GIB":
		return int64(f) << 30
	case "KB", "KIB":
		return int64(f) << 10
	}
	return int64(f)
}
