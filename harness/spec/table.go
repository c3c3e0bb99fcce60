package spec

import (
	"sort"
	"strings"
)

const (
	tera = 1e12
	giga = 1e9
	gib  = int64(1) << 30
	mib  = int64(1) << 20
	kib  = int64(1) << 10
	gb   = int64(1e9)
)

// Sources. Datasheet figures are dense (no structured sparsity): where a
// datasheet prints only the sparse figure, the row holds half of it.
const (
	srcH100   = "NVIDIA H100 Tensor Core GPU datasheet (SXM5 and PCIe columns) and Hopper architecture whitepaper; tensor figures halved from the sparse ones"
	srcH200   = "NVIDIA H200 Tensor Core GPU datasheet (compute as H100 SXM); L2 as the driver reports it on an H200 of our workplace (60 MB, 2026-10-28)"
	srcA100   = "NVIDIA A100 Tensor Core GPU datasheet and Ampere architecture whitepaper (164 KB usable shared memory per SM)"
	srcL40S   = "NVIDIA L40S datasheet and Ada Lovelace architecture whitepaper; tensor figures halved from the sparse ones"
	srcB200   = "NVIDIA HGX B200 datasheet divided by its 8 GPUs, sparse tensor figures halved; SM count and L2 from Blackwell architecture material"
	srcMI300X = "AMD Instinct MI300X data sheet and CDNA 3 white paper (dense figures; L2 4 MB per XCD x 8, 256 MB Infinity Cache)"
	srcMI325X = "AMD Instinct MI325X data sheet (compute as MI300X, HBM3E)"
	srcMI355X = "AMD Instinct MI350 series (MI355X column) data sheet and CDNA 4 white paper (dense figures)"
	srcMI350X = "AMD Instinct MI350 series (MI350X column) data sheet and CDNA 4 white paper (dense figures)"
)

// rows is the table. Keep it sorted by vendor, then generation.
var rows = []Row{
	{
		Key: "h100-sxm", Name: "NVIDIA H100 SXM5 80GB", Vendor: "nvidia", Arch: "hopper", ComputeCapability: "9.0",
		Units:        132,
		PeakFLOPS:    map[string]float64{FP64: 67 * tera, FP32: 67 * tera, TF32: 494.7 * tera, BF16: 989.4 * tera, FP16: 989.4 * tera, FP8: 1978.9 * tera},
		MemBandwidth: 3.35 * tera, MemBytes: 80 * gib, L2Bytes: 50 * mib, SharedPerUnit: 228 * kib, Source: srcH100,
	},
	{
		Key: "h100-pcie", Name: "NVIDIA H100 PCIe 80GB", Vendor: "nvidia", Arch: "hopper", ComputeCapability: "9.0",
		Units:        114,
		PeakFLOPS:    map[string]float64{FP64: 51 * tera, FP32: 51 * tera, TF32: 378 * tera, BF16: 756 * tera, FP16: 756 * tera, FP8: 1513 * tera},
		MemBandwidth: 2.0 * tera, MemBytes: 80 * gib, L2Bytes: 50 * mib, SharedPerUnit: 228 * kib, Source: srcH100,
	},
	{
		Key: "h200", Name: "NVIDIA H200 SXM 141GB", Vendor: "nvidia", Arch: "hopper", ComputeCapability: "9.0",
		Units:        132,
		PeakFLOPS:    map[string]float64{FP64: 67 * tera, FP32: 67 * tera, TF32: 494.7 * tera, BF16: 989.4 * tera, FP16: 989.4 * tera, FP8: 1978.9 * tera},
		MemBandwidth: 4.8 * tera, MemBytes: 141 * gb, L2Bytes: 60 * mib, SharedPerUnit: 228 * kib, Source: srcH200,
	},
	{
		Key: "a100-40gb", Name: "NVIDIA A100 SXM4 40GB", Vendor: "nvidia", Arch: "ampere", ComputeCapability: "8.0",
		Units:        108,
		PeakFLOPS:    map[string]float64{FP64: 19.5 * tera, FP32: 19.5 * tera, TF32: 156 * tera, BF16: 312 * tera, FP16: 312 * tera},
		MemBandwidth: 1555 * giga, MemBytes: 40 * gib, L2Bytes: 40 * mib, SharedPerUnit: 164 * kib, Source: srcA100,
	},
	{
		Key: "a100-80gb", Name: "NVIDIA A100 SXM4 80GB", Vendor: "nvidia", Arch: "ampere", ComputeCapability: "8.0",
		Units:        108,
		PeakFLOPS:    map[string]float64{FP64: 19.5 * tera, FP32: 19.5 * tera, TF32: 156 * tera, BF16: 312 * tera, FP16: 312 * tera},
		MemBandwidth: 2039 * giga, MemBytes: 80 * gib, L2Bytes: 40 * mib, SharedPerUnit: 164 * kib, Source: srcA100,
	},
	{
		Key: "l40s", Name: "NVIDIA L40S", Vendor: "nvidia", Arch: "ada", ComputeCapability: "8.9",
		Units:        142,
		PeakFLOPS:    map[string]float64{FP64: 1.43 * tera, FP32: 91.6 * tera, TF32: 183 * tera, BF16: 362 * tera, FP16: 362 * tera, FP8: 733 * tera},
		MemBandwidth: 864 * giga, MemBytes: 48 * gib, L2Bytes: 96 * mib, SharedPerUnit: 100 * kib, Source: srcL40S,
	},
	{
		Key: "b200", Name: "NVIDIA B200", Vendor: "nvidia", Arch: "blackwell", ComputeCapability: "10.0",
		Units:        148,
		PeakFLOPS:    map[string]float64{FP64: 37 * tera, FP32: 75 * tera, TF32: 1100 * tera, BF16: 2250 * tera, FP16: 2250 * tera, FP8: 4500 * tera},
		MemBandwidth: 8 * tera, MemBytes: 180 * gb, L2Bytes: 126 * mib, SharedPerUnit: 228 * kib, Source: srcB200,
	},
	{
		Key: "mi300x", Name: "AMD Instinct MI300X", Vendor: "amd", Arch: "cdna3",
		Units:        304,
		PeakFLOPS:    map[string]float64{FP64: 163.4 * tera, FP32: 163.4 * tera, TF32: 653.7 * tera, BF16: 1307.4 * tera, FP16: 1307.4 * tera, FP8: 2614.9 * tera},
		MemBandwidth: 5.3 * tera, MemBytes: 192 * gb, L2Bytes: 32 * mib, SharedPerUnit: 64 * kib, Source: srcMI300X,
	},
	{
		Key: "mi325x", Name: "AMD Instinct MI325X", Vendor: "amd", Arch: "cdna3",
		Units:        304,
		PeakFLOPS:    map[string]float64{FP64: 163.4 * tera, FP32: 163.4 * tera, TF32: 653.7 * tera, BF16: 1307.4 * tera, FP16: 1307.4 * tera, FP8: 2614.9 * tera},
		MemBandwidth: 6 * tera, MemBytes: 256 * gb, L2Bytes: 32 * mib, SharedPerUnit: 64 * kib, Source: srcMI325X,
	},
	{
		Key: "mi355x", Name: "AMD Instinct MI355X", Vendor: "amd", Arch: "cdna4",
		Units:        256,
		PeakFLOPS:    map[string]float64{FP64: 78.6 * tera, FP32: 157.3 * tera, BF16: 2516.6 * tera, FP16: 2516.6 * tera, FP8: 5033.2 * tera},
		MemBandwidth: 8 * tera, MemBytes: 288 * gb, L2Bytes: 32 * mib, SharedPerUnit: 160 * kib, Source: srcMI355X,
	},
	{
		Key: "mi350x", Name: "AMD Instinct MI350X", Vendor: "amd", Arch: "cdna4",
		Units:        256,
		PeakFLOPS:    map[string]float64{FP64: 72.1 * tera, FP32: 144.2 * tera, BF16: 2306.9 * tera, FP16: 2306.9 * tera, FP8: 4613.7 * tera},
		MemBandwidth: 8 * tera, MemBytes: 288 * gb, L2Bytes: 32 * mib, SharedPerUnit: 160 * kib, Source: srcMI350X,
	},
}

// All returns a copy of the table, sorted by key.
func All() []Row {
	out := append([]Row(nil), rows...)
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Arches maps each architecture of the table to its vendor ("hopper":
// "nvidia", "cdna3": "amd"): the one list of arch names that retrieval
// and the knowledge base's vocabulary follow.
func Arches() map[string]string {
	out := map[string]string{}
	for _, r := range rows {
		out[r.Arch] = r.Vendor
	}
	return out
}

// Get returns the row with the given key (e.g. "h100-sxm") or a device alias
// an agent is likely to type ("h100", "mi300x", "a100").
func Get(key string) (Row, bool) {
	k := strings.ToLower(strings.TrimSpace(key))
	if alias, ok := aliases[k]; ok {
		k = alias
	}
	for _, r := range rows {
		if r.Key == k {
			return r, true
		}
	}
	return Row{}, false
}

var aliases = map[string]string{
	"h100": "h100-sxm", "h100-sxm5": "h100-sxm", "h100sxm": "h100-sxm",
	"a100": "a100-80gb", "h200-sxm": "h200", "mi300": "mi300x", "mi355": "mi355x", "mi350": "mi350x",
}

// Lookup matches a device as the driver names it ("NVIDIA H100 80GB HBM3",
// "AMD Instinct MI300X") to a row. memBytes breaks ties the name leaves open
// (A100 40 GB vs 80 GB); pass 0 when unknown.
func Lookup(deviceName string, memBytes int64) (Row, bool) {
	n := strings.ToLower(deviceName)
	has := func(s ...string) bool {
		for _, x := range s {
			if !strings.Contains(n, x) {
				return false
			}
		}
		return true
	}
	var key string
	switch {
	case has("h100") && (has("pcie") || has("h100 pci")):
		key = "h100-pcie"
	case has("h100"):
		// "NVIDIA H100 80GB HBM3" is the SXM5 part; the NVL part has no row and
		// is closest to SXM.
		key = "h100-sxm"
	case has("h200"):
		key = "h200"
	case has("gh200"):
		key = "h200"
	case has("a100"):
		key = "a100-40gb"
		if memBytes > 48*gib || has("80gb") {
			key = "a100-80gb"
		}
	case has("l40s"):
		key = "l40s"
	case has("b200"):
		key = "b200"
	case has("mi355"):
		key = "mi355x"
	case has("mi350"):
		key = "mi350x"
	case has("mi325"):
		key = "mi325x"
	case has("mi300x"), has("mi300"):
		key = "mi300x"
	default:
		return Row{}, false
	}
	return Get(key)
}

// Peak returns the datasheet peak for a dtype name as torch or an agent
// writes it ("bfloat16", "float32", "fp8_e4m3" ...).
func (r Row) Peak(dtype string) (float64, bool) {
	v, ok := r.PeakFLOPS[NormalizeDtype(dtype)]
	return v, ok
}

// NormalizeDtype maps torch and common spellings onto the table's keys.
func NormalizeDtype(d string) string {
	d = strings.TrimPrefix(strings.ToLower(strings.TrimSpace(d)), "torch.")
	switch d {
	case "float64", "double", "fp64", "f64":
		return FP64
	case "float32", "float", "fp32", "f32":
		return FP32
	case "tf32", "tensorfloat32":
		return TF32
	case "bfloat16", "bf16":
		return BF16
	case "float16", "half", "fp16", "f16":
		return FP16
	}
	if strings.HasPrefix(d, "float8") || strings.HasPrefix(d, "fp8") {
		return FP8
	}
	return d
}
