package compile

import (
	"regexp"
	"sort"
	"strings"
)

// SASSSummary is the instruction mix of compiled GPU code: what ran out of
// the compiler, which is what decides speed (did the tensor cores get used,
// are loads vectorized, does the kernel copy asynchronously, does it spill).
type SASSSummary struct {
	Instructions  int            `json:"instructions"` // NOPs excluded
	Classes       map[string]int `json:"classes"`      // tensor, global_mem, shared_mem, local_mem, async_copy, fp32, fp16, fp64, int, ...
	TopOpcodes    []OpcodeCount  `json:"top_opcodes"`
	TensorCore    bool           `json:"tensor_core"`
	TensorCoreOps []string       `json:"tensor_core_ops,omitempty"` // e.g. HMMA.16816.F32, HGMMA.64x128x16.F32.BF16
	Vector16Load  bool           `json:"vector16_loads"`            // LDG.E.128 / LDS.128 / LD.128
	Vector16Store bool           `json:"vector16_stores"`           // STG.E.128 / STS.128
	Vector16Count int            `json:"vector16_count"`
	AsyncCopy     bool           `json:"async_copy"` // LDGSTS (cp.async), UTMALDG/UBLKCP (TMA, cp.async.bulk)
	AsyncCopyOps  []string       `json:"async_copy_ops,omitempty"`
	LocalLoads    int            `json:"local_loads"`  // LDL: spills or stack arrays
	LocalStores   int            `json:"local_stores"` // STL
	opcodes       map[string]int
	tensorOps     map[string]bool
	asyncOps      map[string]bool
}

// OpcodeCount is one opcode (without modifiers) and how often it occurs.
type OpcodeCount struct {
	Op    string `json:"op"`
	Count int    `json:"count"`
}

var (
	sassInstRE = regexp.MustCompile(`^\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;`)
	sassFuncRE = regexp.MustCompile(`^\s*Function\s*:\s*(\S+)`)
	predRE     = regexp.MustCompile(`^@!?U?P[T0-9]+\s+`)
)

var asyncOps = map[string]bool{
	"LDGSTS": true, "LDGDEPBAR": true, "UTMALDG": true, "UTMASTG": true, "UTMAPF": true, "UTMAREDG": true,
	"UBLKCP": true, "UBLKPF": true, "UBLKRED": true,
}

var classOf = map[string]string{
	"LDG": "global_mem", "STG": "global_mem", "LD": "global_mem", "ST": "global_mem", "RED": "global_mem",
	"ATOM": "global_mem", "ATOMG": "global_mem", "REDG": "global_mem",
	"LDS": "shared_mem", "STS": "shared_mem", "LDSM": "shared_mem", "STSM": "shared_mem", "ATOMS": "shared_mem",
	"LDL": "local_mem", "STL": "local_mem",
	"LDC": "constant", "ULDC": "constant",
	"FADD": "fp32", "FMUL": "fp32", "FFMA": "fp32", "FMNMX": "fp32", "FSET": "fp32", "FSETP": "fp32", "FCHK": "fp32",
	"FSEL": "fp32", "FSWZADD": "fp32", "FRND": "fp32", "FADD32I": "fp32", "FMUL32I": "fp32", "FFMA32I": "fp32",
	"DADD": "fp64", "DMUL": "fp64", "DFMA": "fp64", "DSETP": "fp64", "DMNMX": "fp64",
	"MUFU": "sfu",
	"F2F":  "convert", "F2I": "convert", "I2F": "convert", "F2FP": "convert", "I2FP": "convert", "F2IP": "convert", "I2I": "convert",
	"MOV": "move", "MOV32I": "move", "S2R": "move", "S2UR": "move", "CS2R": "move", "R2UR": "move", "P2R": "move", "R2P": "move",
	"SHFL": "warp", "VOTE": "warp", "VOTEU": "warp", "MATCH": "warp", "REDUX": "warp", "ELECT": "warp",
	"BRA": "control", "BRX": "control", "JMP": "control", "EXIT": "control", "RET": "control", "CALL": "control",
	"BSSY": "control", "BSYNC": "control", "BAR": "sync", "WARPSYNC": "sync", "MEMBAR": "sync", "DEPBAR": "sync",
	"SYNCS": "sync", "WARPGROUP": "sync", "ERRBAR": "sync", "CCTL": "sync", "YIELD": "control", "NANOSLEEP": "control",
	"BPT": "control", "KILL": "control", "BREAK": "control",
}

func opClass(op string) string {
	if strings.Contains(op, "MMA") {
		return "tensor"
	}
	if asyncOps[op] {
		return "async_copy"
	}
	if c, ok := classOf[op]; ok {
		return c
	}
	if strings.HasPrefix(op, "H") && (strings.HasSuffix(op, "2") || strings.HasSuffix(op, "2_32I")) {
		return "fp16"
	}
	if strings.HasPrefix(op, "U") {
		return "uniform"
	}
	switch op {
	case "IADD3", "IADD", "IMAD", "IMUL", "LEA", "LOP3", "LOP", "SHF", "SHL", "SHR", "ISETP", "IABS", "IMNMX",
		"POPC", "FLO", "BREV", "PRMT", "SEL", "IDP", "VIADD", "VIMNMX", "BMSK", "PLOP3", "IADD32I", "IMAD32I", "LOP32I", "SGXT":
		return "int"
	}
	return "other"
}

func newSASSSummary() *SASSSummary {
	return &SASSSummary{Classes: map[string]int{}, opcodes: map[string]int{}, tensorOps: map[string]bool{}, asyncOps: map[string]bool{}}
}

func (s *SASSSummary) add(inst string) {
	inst = predRE.ReplaceAllString(strings.TrimSpace(inst), "")
	full := inst
	if i := strings.IndexAny(inst, " \t"); i >= 0 {
		full = inst[:i]
	}
	op, mods, _ := strings.Cut(full, ".")
	if op == "" || op == "NOP" {
		return
	}
	s.Instructions++
	s.opcodes[op]++
	cls := opClass(op)
	s.Classes[cls]++
	switch cls {
	case "tensor":
		s.TensorCore = true
		s.tensorOps[full] = true
	case "async_copy":
		s.AsyncCopy = true
		s.asyncOps[op] = true
	}
	wide := strings.Contains("."+mods+".", ".128.")
	switch op {
	case "LDG", "LDS", "LD", "LDL":
		if wide {
			s.Vector16Load = true
			s.Vector16Count++
		}
	case "STG", "STS", "ST", "STL":
		if wide {
			s.Vector16Store = true
			s.Vector16Count++
		}
	}
	switch op {
	case "LDL":
		s.LocalLoads++
	case "STL":
		s.LocalStores++
	}
}

func (s *SASSSummary) merge(o *SASSSummary) {
	for k, v := range o.opcodes {
		s.opcodes[k] += v
	}
	for k, v := range o.Classes {
		s.Classes[k] += v
	}
	for k := range o.tensorOps {
		s.tensorOps[k] = true
	}
	for k := range o.asyncOps {
		s.asyncOps[k] = true
	}
	s.Instructions += o.Instructions
	s.TensorCore = s.TensorCore || o.TensorCore
	s.AsyncCopy = s.AsyncCopy || o.AsyncCopy
	s.Vector16Load = s.Vector16Load || o.Vector16Load
	s.Vector16Store = s.Vector16Store || o.Vector16Store
	s.Vector16Count += o.Vector16Count
	s.LocalLoads += o.LocalLoads
	s.LocalStores += o.LocalStores
}

// finish fills the exported lists from the private tallies.
func (s *SASSSummary) finish() *SASSSummary {
	s.TopOpcodes = s.TopOpcodes[:0]
	for op, n := range s.opcodes {
		s.TopOpcodes = append(s.TopOpcodes, OpcodeCount{op, n})
	}
	sort.Slice(s.TopOpcodes, func(i, j int) bool {
		a, b := s.TopOpcodes[i], s.TopOpcodes[j]
		return a.Count > b.Count || (a.Count == b.Count && a.Op < b.Op)
	})
	if len(s.TopOpcodes) > 12 {
		s.TopOpcodes = s.TopOpcodes[:12]
	}
	s.TensorCoreOps = sortedKeys(s.tensorOps)
	s.AsyncCopyOps = sortedKeys(s.asyncOps)
	return s
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ParseSASS summarizes `cuobjdump -sass` (or nvdisasm) output per function.
func ParseSASS(text string) map[string]*SASSSummary {
	out := map[string]*SASSSummary{}
	cur := ""
	for _, ln := range strings.Split(text, "\n") {
		if m := sassFuncRE.FindStringSubmatch(ln); m != nil {
			cur = m[1]
			if out[cur] == nil {
				out[cur] = newSASSSummary()
			}
			continue
		}
		m := sassInstRE.FindStringSubmatch(ln)
		if m == nil {
			continue
		}
		if out[cur] == nil {
			out[cur] = newSASSSummary()
		}
		out[cur].add(m[1])
	}
	for _, s := range out {
		s.finish()
	}
	return out
}

var (
	ptxEntryRE = regexp.MustCompile(`Compiling entry function '([^']+)'`)
	ptxPropsRE = regexp.MustCompile(`Function properties for (\S+)`)
	ptxStackRE = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	ptxUsedRE  = regexp.MustCompile(`Used (\d+) registers(?:, used (\d+) barriers)?(?:, (\d+) bytes smem)?(?:, (\d+) bytes cmem\[0\])?`)
	ptxSmemRE  = regexp.MustCompile(`(\d+) bytes smem`)
)

// ParsePtxasInfo reads the resource usage that `ptxas -v` (nvcc -Xptxas -v)
// prints, one Kernel per entry function, in order.
func ParsePtxasInfo(log string) []Kernel {
	var ks []Kernel
	idx := map[string]int{}
	entry := ""
	props := ""
	get := func(name string) *Kernel {
		i, ok := idx[name]
		if !ok {
			ks = append(ks, Kernel{Name: name})
			i = len(ks) - 1
			idx[name] = i
		}
		return &ks[i]
	}
	for _, ln := range strings.Split(log, "\n") {
		if m := ptxEntryRE.FindStringSubmatch(ln); m != nil {
			entry = m[1]
			get(entry)
			continue
		}
		if m := ptxPropsRE.FindStringSubmatch(ln); m != nil {
			props = m[1]
			continue
		}
		if m := ptxStackRE.FindStringSubmatch(ln); m != nil {
			if i, ok := idx[props]; ok && props != "" {
				ks[i].StackFrameBytes, ks[i].SpillStoreBytes, ks[i].SpillLoadBytes = atoi(m[1]), atoi(m[2]), atoi(m[3])
			}
			continue
		}
		if m := ptxUsedRE.FindStringSubmatch(ln); m != nil && entry != "" {
			k := get(entry)
			k.Registers, k.Barriers = atoi(m[1]), atoi(m[2])
			if sm := ptxSmemRE.FindStringSubmatch(ln); sm != nil {
				k.SharedStaticBytes = atoi(sm[1])
			}
			k.ConstantBytes = atoi(m[4])
		}
	}
	return ks
}
