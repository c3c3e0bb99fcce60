// Package spec is the hardware spec table: vendor datasheet peaks for the
// accelerators kevolve-mcp knows, each figure with its source. Measured
// ceilings (calibration) live beside these in SQLite and win where present.
package spec

// Dtype keys used in PeakFLOPS.
const (
	FP64 = "fp64"
	FP32 = "fp32"
	TF32 = "tf32"
	BF16 = "bf16"
	FP16 = "fp16"
	FP8  = "fp8"
)

// Row is one accelerator model. Figures are dense (no sparsity) peaks.
type Row struct {
	Key               string             `json:"key"`    // stable id, e.g. "h100-sxm"
	Name              string             `json:"name"`   // marketing name
	Vendor            string             `json:"vendor"` // nvidia, amd, cpu
	Arch              string             `json:"arch"`   // hopper, ampere, ada, blackwell, cdna3, cdna4
	ComputeCapability string             `json:"compute_capability,omitempty"`
	Units             int                `json:"units"` // SMs (NVIDIA) or CUs (AMD)
	PeakFLOPS         map[string]float64 `json:"peak_flops"`
	MemBandwidth      float64            `json:"mem_bandwidth_bytes_per_s"`
	MemBytes          int64              `json:"mem_bytes"`
	L2Bytes           int64              `json:"l2_bytes"`
	SharedPerUnit     int64              `json:"shared_mem_per_unit_bytes"`
	Source            string             `json:"source"`
}
