package compile

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// AMDResources is what an AMD (gfx*) kernel uses, read from the AMDGCN
// assembly the compiler wrote: its code-object metadata and its
// "; Kernel info" comments.
type AMDResources struct {
	VGPRs         int            `json:"vgprs"`          // vgpr_count: VGPRs allocated per lane (AGPRs included on gfx90a+); decides occupancy
	ArchVGPRs     int            `json:"arch_vgprs"`     // NumVgprs: architectural VGPRs used
	AGPRs         int            `json:"agprs"`          // accumulation registers (MFMA results)
	SGPRs         int            `json:"sgprs"`          // scalar registers
	VGPRSpills    int            `json:"vgpr_spills"`    // VGPRs spilled to scratch
	SGPRSpills    int            `json:"sgpr_spills"`    // SGPRs spilled (to VGPR lanes or scratch)
	ScratchBytes  int            `json:"scratch_bytes"`  // private segment per lane: spills and stack arrays
	LDSBytes      int            `json:"lds_bytes"`      // static LDS per workgroup (Triton's is dynamic: see shared_dynamic_bytes)
	WavesPerSIMD  int            `json:"waves_per_simd"` // the compiler's occupancy estimate (of at most 8 on CDNA)
	WavefrontSize int            `json:"wavefront_size"` // 64 on CDNA
	MaxFlatWGSize int            `json:"max_workgroup_size,omitempty"`
	DynamicStack  bool           `json:"dynamic_stack"` // recursion or variable-size stack: scratch size unknown at compile time
	ISA           *AMDGCNSummary `json:"isa,omitempty"`
}

// AMDGCNSummary is the instruction mix of AMDGCN code: did the matrix cores
// (MFMA) get used, are global and LDS accesses 16-byte wide, does the code
// touch scratch (spills), how much cross-lane traffic it has.
type AMDGCNSummary struct {
	Instructions  int            `json:"instructions"`
	Classes       map[string]int `json:"classes"` // mfma, valu, salu, global_mem, lds, scratch, smem, cross_lane, branch, wait, ...
	TopOpcodes    []OpcodeCount  `json:"top_opcodes"`
	MFMA          bool           `json:"mfma"`
	MFMACount     int            `json:"mfma_count"`
	MFMAOps       []string       `json:"mfma_ops,omitempty"` // e.g. v_mfma_f32_32x32x8_f16
	Vector16Load  bool           `json:"vector16_loads"`     // global/buffer_load_dwordx4, ds_read_b128
	Vector16Store bool           `json:"vector16_stores"`
	ScratchOps    int            `json:"scratch_ops"` // scratch_* and buffer accesses to the private segment
	CrossLaneOps  int            `json:"cross_lane_ops"`
	opcodes       map[string]int
}

func newAMDGCNSummary() *AMDGCNSummary {
	return &AMDGCNSummary{Classes: map[string]int{}, opcodes: map[string]int{}}
}

var amdgcnVec16RE = regexp.MustCompile(`^(global|buffer|flat)_(load|store)_(dwordx4|b128)$|^ds_(read|write)_b128$|^ds_(load|store)_b128$`)

func amdClass(op, operands string) string {
	switch {
	case strings.HasPrefix(op, "v_mfma") || strings.HasPrefix(op, "v_smfmac"):
		return "mfma"
	case strings.HasPrefix(op, "scratch_"):
		return "scratch"
	case strings.HasPrefix(op, "buffer_") && strings.Contains(operands, "s[0:3]"):
		return "scratch" // the private-segment buffer resource: spills on pre-gfx9.4 code
	case strings.HasPrefix(op, "global_") || strings.HasPrefix(op, "buffer_") || strings.HasPrefix(op, "flat_"):
		return "global_mem"
	case op == "ds_bpermute_b32" || op == "ds_permute_b32" || strings.HasPrefix(op, "ds_swizzle") ||
		strings.HasPrefix(op, "v_readlane") || strings.HasPrefix(op, "v_writelane") || strings.HasPrefix(op, "v_readfirstlane") ||
		strings.Contains(operands, "row_") || strings.Contains(operands, "quad_perm") || strings.Contains(operands, "wave_") ||
		strings.HasSuffix(op, "_dpp"):
		return "cross_lane"
	case strings.HasPrefix(op, "ds_"):
		return "lds"
	case strings.HasPrefix(op, "s_load") || strings.HasPrefix(op, "s_buffer_load") || strings.HasPrefix(op, "s_store"):
		return "smem"
	case strings.HasPrefix(op, "s_waitcnt") || op == "s_barrier" || strings.HasPrefix(op, "s_sleep") || op == "s_nop":
		return "wait"
	case strings.HasPrefix(op, "s_cbranch") || op == "s_branch" || op == "s_endpgm" || strings.HasPrefix(op, "s_setpc") ||
		strings.HasPrefix(op, "s_swappc") || strings.HasPrefix(op, "s_getpc"):
		return "branch"
	case strings.HasPrefix(op, "s_"):
		return "salu"
	case strings.HasPrefix(op, "v_"):
		return "valu"
	}
	return "other"
}

func (s *AMDGCNSummary) add(op, operands string) {
	s.Instructions++
	s.opcodes[op]++
	c := amdClass(op, operands)
	s.Classes[c]++
	switch c {
	case "mfma":
		s.MFMACount++
	case "scratch":
		s.ScratchOps++
	case "cross_lane":
		s.CrossLaneOps++
	}
	if amdgcnVec16RE.MatchString(op) {
		if strings.Contains(op, "load") || strings.Contains(op, "read") {
			s.Vector16Load = true
		} else {
			s.Vector16Store = true
		}
	}
}

func (s *AMDGCNSummary) merge(o *AMDGCNSummary) {
	for op, n := range o.opcodes {
		s.opcodes[op] += n
	}
	for c, n := range o.Classes {
		s.Classes[c] += n
	}
	s.Instructions += o.Instructions
	s.MFMACount += o.MFMACount
	s.ScratchOps += o.ScratchOps
	s.CrossLaneOps += o.CrossLaneOps
	s.Vector16Load = s.Vector16Load || o.Vector16Load
	s.Vector16Store = s.Vector16Store || o.Vector16Store
}

func (s *AMDGCNSummary) finish() *AMDGCNSummary {
	s.MFMA = s.MFMACount > 0
	s.MFMAOps = nil
	for op := range s.opcodes {
		if amdClass(op, "") == "mfma" {
			s.MFMAOps = append(s.MFMAOps, op)
		}
	}
	sort.Strings(s.MFMAOps)
	s.TopOpcodes = topOpcodes(s.opcodes, 12)
	return s
}

func topOpcodes(m map[string]int, n int) []OpcodeCount {
	out := make([]OpcodeCount, 0, len(m))
	for op, c := range m {
		out = append(out, OpcodeCount{Op: op, Count: c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Op < out[j].Op
	})
	if len(out) > n {
		out = out[:n]
	}
	return out
}

var (
	amdFuncTypeRE = regexp.MustCompile(`^\s*\.type\s+([\w.$]+)\s*,\s*@function`)
	amdLabelRE    = regexp.MustCompile(`^([\w.$]+):`)
	amdInstRE     = regexp.MustCompile(`^\s+([a-z][a-z0-9_]*)\b\s*([^;]*)`)
	amdSizeRE     = regexp.MustCompile(`^\s*\.size\s+([\w.$]+)\s*,`)
	amdInfoRE     = regexp.MustCompile(`^; (Occupancy|NumVgprs|NumAgprs|TotalNumSgprs|ScratchSize|LDSByteSize): (\d+)`)
)

// amdKernelMeta is one entry of the code object's amdhsa.kernels metadata.
type amdKernelMeta struct {
	Name          string `yaml:".name"`
	VGPRs         int    `yaml:".vgpr_count"`
	AGPRs         int    `yaml:".agpr_count"`
	SGPRs         int    `yaml:".sgpr_count"`
	VGPRSpills    int    `yaml:".vgpr_spill_count"`
	SGPRSpills    int    `yaml:".sgpr_spill_count"`
	LDS           int    `yaml:".group_segment_fixed_size"`
	Private       int    `yaml:".private_segment_fixed_size"`
	Wave          int    `yaml:".wavefront_size"`
	MaxFlatWGSize int    `yaml:".max_flat_workgroup_size"`
	DynamicStack  bool   `yaml:".uses_dynamic_stack"`
}

// ParseAMDGCN reads AMDGCN assembly (clang -S, Triton's asm["amdgcn"]) and
// returns one Kernel per entry point, with its resources and instruction
// mix, plus the instruction mix over all functions (device functions that
// were not inlined included).
func ParseAMDGCN(asm string) ([]Kernel, *AMDGCNSummary) {
	lines := strings.Split(strings.ReplaceAll(asm, "\r\n", "\n"), "\n")
	funcs := map[string]bool{}
	for _, ln := range lines {
		if m := amdFuncTypeRE.FindStringSubmatch(ln); m != nil {
			funcs[m[1]] = true
		}
	}
	per := map[string]*AMDGCNSummary{}
	info := map[string]map[string]int{}
	var meta []amdKernelMeta
	cur, last := "", ""
	for i := 0; i < len(lines); i++ {
		ln := lines[i]
		if strings.HasPrefix(strings.TrimSpace(ln), ".amdgpu_metadata") {
			var b strings.Builder
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), ".end_amdgpu_metadata"); i++ {
				b.WriteString(lines[i])
				b.WriteByte('\n')
			}
			var doc struct {
				Kernels []amdKernelMeta `yaml:"amdhsa.kernels"`
			}
			if yaml.Unmarshal([]byte(b.String()), &doc) == nil {
				meta = append(meta, doc.Kernels...)
			}
			continue
		}
		if m := amdLabelRE.FindStringSubmatch(ln); m != nil {
			if funcs[m[1]] {
				cur = m[1]
				if per[cur] == nil {
					per[cur] = newAMDGCNSummary()
				}
			} else if strings.HasPrefix(m[1], ".Lfunc_end") {
				cur = ""
			}
			continue
		}
		if m := amdSizeRE.FindStringSubmatch(ln); m != nil {
			last = m[1]
			continue
		}
		if m := amdInfoRE.FindStringSubmatch(ln); m != nil && last != "" {
			if info[last] == nil {
				info[last] = map[string]int{}
			}
			info[last][m[1]] = atoi(m[2])
			continue
		}
		if cur == "" {
			continue
		}
		if m := amdInstRE.FindStringSubmatch(ln); m != nil {
			per[cur].add(m[1], m[2])
		}
	}
	total := newAMDGCNSummary()
	for _, s := range per {
		total.merge(s)
	}
	var ks []Kernel
	for _, md := range meta {
		res := &AMDResources{
			VGPRs: md.VGPRs, AGPRs: md.AGPRs, SGPRs: md.SGPRs, VGPRSpills: md.VGPRSpills, SGPRSpills: md.SGPRSpills,
			ScratchBytes: md.Private, LDSBytes: md.LDS, WavefrontSize: md.Wave, MaxFlatWGSize: md.MaxFlatWGSize, DynamicStack: md.DynamicStack,
		}
		if in := info[md.Name]; in != nil {
			res.WavesPerSIMD = in["Occupancy"]
			res.ArchVGPRs = in["NumVgprs"]
			if res.ScratchBytes == 0 {
				res.ScratchBytes = in["ScratchSize"]
			}
		}
		if s := per[md.Name]; s != nil {
			res.ISA = s.finish()
		}
		ks = append(ks, Kernel{Name: md.Name, Registers: md.VGPRs, SharedStaticBytes: md.LDS, StackFrameBytes: res.ScratchBytes, AMD: res})
	}
	return ks, total.finish()
}

// amdWaveLimit is why a kernel's occupancy is what it is, in words, for
// the note of a result (empty when nothing limits it below 8 waves).
func amdWaveLimit(k Kernel) string {
	a := k.AMD
	if a == nil || a.WavesPerSIMD == 0 || a.WavesPerSIMD >= 8 {
		return ""
	}
	return k.Name + ": " + strconv.Itoa(a.WavesPerSIMD) + " waves per SIMD (" + strconv.Itoa(a.VGPRs) + " VGPRs, " +
		strconv.Itoa(a.SGPRs) + " SGPRs, " + strconv.Itoa(k.SharedStaticBytes+k.SharedDynBytes) + " B LDS)"
}

// ldsPerCU is the LDS of one compute unit: 160 KiB on CDNA4 (gfx950), 64 KiB
// on CDNA2/CDNA3.
func ldsPerCU(arch string) int {
	if strings.HasPrefix(arch, "gfx95") {
		return 160 << 10
	}
	return 64 << 10
}

// ldsWaveLimit is the occupancy the LDS allows a kernel whose workgroup
// size is known (Triton's num_warps), when it is below the register limit:
// the compiler's estimate does not count Triton's dynamic LDS.
func ldsWaveLimit(arch string, k Kernel) string {
	lds := k.SharedStaticBytes + k.SharedDynBytes
	if k.AMD == nil || k.NumWarps == 0 || lds == 0 {
		return ""
	}
	groups := ldsPerCU(arch) / lds
	waves := groups * k.NumWarps / 4 // 4 SIMDs per CU
	if waves > 8 {
		waves = 8
	}
	if k.AMD.WavesPerSIMD > 0 && waves >= k.AMD.WavesPerSIMD {
		return ""
	}
	return fmt.Sprintf("%s: its %d B of LDS per workgroup let %d workgroups of %d waves share a CU: at most %d waves per SIMD",
		k.Name, lds, groups, k.NumWarps, waves)
}
