// Package profile explains why a kernel is slow: it runs the vendor's
// profiler (Nsight Compute, rocprofv3) or torch.profiler/perf on the CPU,
// parses their output into per-kernel metrics and diagnoses bottlenecks in
// the knowledge base's vocabulary, each with the figures that show it.
package profile

// Kernel is one profiled kernel launch. Pointer fields are nil when the
// profiler did not report the metric (absent is not zero: an L1 hit rate of
// 0% is a finding, a missing one is not).
type Kernel struct {
	Name       string   `json:"name"`
	DurationNs *float64 `json:"duration_ns,omitempty"`
	BlockSize  *float64 `json:"block_size,omitempty"`
	GridSize   *float64 `json:"grid_size,omitempty"`

	SMThroughputPct   *float64 `json:"sm_throughput_pct,omitempty"`   // compute (SM) throughput, % of peak
	MemThroughputPct  *float64 `json:"mem_throughput_pct,omitempty"`  // busiest memory unit, % of peak
	DRAMThroughputPct *float64 `json:"dram_throughput_pct,omitempty"` // DRAM / HBM, % of peak
	L1HitPct          *float64 `json:"l1_hit_pct,omitempty"`
	L2HitPct          *float64 `json:"l2_hit_pct,omitempty"`

	AchievedOccupancyPct    *float64           `json:"achieved_occupancy_pct,omitempty"`
	TheoreticalOccupancyPct *float64           `json:"theoretical_occupancy_pct,omitempty"`
	OccupancyLimiter        string             `json:"occupancy_limiter,omitempty"` // registers | shared_mem | warps | blocks | barriers
	OccupancyLimits         map[string]float64 `json:"occupancy_limits_blocks,omitempty"`
	RegistersPerThread      *float64           `json:"registers_per_thread,omitempty"`
	SharedMemPerBlock       *float64           `json:"shared_mem_per_block_bytes,omitempty"`
	WavesPerSM              *float64           `json:"waves_per_sm,omitempty"`
	SMCount                 *float64           `json:"sm_count,omitempty"`

	SpillBytes *float64 `json:"spill_bytes,omitempty"` // local-memory traffic (register spills, local arrays)

	// DRAMBytes is the launch's DRAM traffic, read plus written; FLOPs its
	// floating-point operations on the CUDA cores (fp16, fp32, fp64 adds,
	// multiplies and fused multiply-adds counted twice; tensor-core work
	// is not counted). Both measured, for one launch (the speed-of-light
	// check's "own work", sol_shortcut.go).
	DRAMBytes *float64 `json:"dram_bytes,omitempty"`
	FLOPs     *float64 `json:"flops,omitempty"`

	Stalls []Stall `json:"top_stalls,omitempty"`

	TensorPipePct *float64 `json:"tensor_pipe_pct,omitempty"`

	GlobalLoadSectorsPerReq  *float64 `json:"global_load_sectors_per_request,omitempty"`
	GlobalStoreSectorsPerReq *float64 `json:"global_store_sectors_per_request,omitempty"`
	GlobalLoadEfficiencyPct  *float64 `json:"global_load_efficiency_pct,omitempty"`  // bytes used per sector fetched
	GlobalStoreEfficiencyPct *float64 `json:"global_store_efficiency_pct,omitempty"` // bytes used per sector written

	ThreadsPerInstr     *float64 `json:"active_threads_per_instruction,omitempty"` // of 32 (64 on AMD)
	SharedBankConflicts *float64 `json:"shared_bank_conflicts,omitempty"`
	SharedWavefronts    *float64 `json:"shared_wavefronts,omitempty"`
	VendorWaveSize      int      `json:"wave_size,omitempty"`
}

// Stall is one warp stall reason with its share of sampled stalls.
type Stall struct {
	Reason string  `json:"reason"`
	Pct    float64 `json:"pct"`
}

func f64(v float64) *float64 { return &v }
