package device

import (
	"bufio"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// CPU is the host processor.
type CPU struct {
	Model    string   `json:"model"`
	Arch     string   `json:"arch"` // GOARCH: amd64, arm64
	Cores    int      `json:"cores"`
	Threads  int      `json:"threads"`
	ISA      []string `json:"isa"` // vector/matrix extensions that kernels can target
	MemBytes int64    `json:"mem_bytes"`
}

// isaFlags are the /proc/cpuinfo flags worth reporting, with display names.
var isaFlags = map[string]string{
	"sse4_2": "SSE4.2", "avx": "AVX", "avx2": "AVX2", "fma": "FMA", "avx512f": "AVX-512F",
	"avx512bw": "AVX-512BW", "avx512_vnni": "AVX-512VNNI", "avx512_bf16": "AVX-512BF16",
	"avx512_fp16": "AVX-512FP16", "amx_tile": "AMX-TILE", "amx_bf16": "AMX-BF16", "amx_int8": "AMX-INT8",
	"asimd": "NEON", "sve": "SVE", "sve2": "SVE2", "asimddp": "NEON-DOTPROD", "bf16": "BF16",
}

func discoverCPU() CPU {
	c := CPU{Arch: runtime.GOARCH, Threads: runtime.NumCPU()}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		parseCPUInfo(f, &c)
	}
	if c.Cores == 0 {
		c.Cores = c.Threads
	}
	c.MemBytes = memTotal("/proc/meminfo")
	return c
}

func parseCPUInfo(f *os.File, c *CPU) {
	cores := map[string]bool{}
	isa := map[string]bool{}
	var phys, core string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name", "Model":
			if c.Model == "" {
				c.Model = v
			}
		case "physical id":
			phys = v
		case "core id":
			core = v
			cores[phys+"/"+core] = true
		case "flags", "Features":
			for _, fl := range strings.Fields(v) {
				if name, ok := isaFlags[fl]; ok {
					isa[name] = true
				}
			}
		}
	}
	c.Cores = len(cores)
	for k := range isa {
		c.ISA = append(c.ISA, k)
	}
	sort.Strings(c.ISA)
}

func memTotal(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// HostMemBytes is this host's physical memory (MemTotal), 0 if unknown.
func HostMemBytes() int64 { return memTotal("/proc/meminfo") }
