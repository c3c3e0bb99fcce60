package compile

import (
	"regexp"
	"sort"
	"strings"
)

// LintFinding is one place where CUDA-style code assumes a 32-lane warp,
// which is wrong on AMD's 64-lane wavefronts (CDNA: gfx90a, gfx942, gfx950).
// torch.utils.hipify renames APIs but leaves all of these alone.
type LintFinding struct {
	Line     int    `json:"line"`
	Col      int    `json:"col"`
	Rule     string `json:"rule"`
	Severity string `json:"severity"` // error: wrong results or a failed build on 64 lanes; warning: suspicious
	Message  string `json:"message"`
	Fix      string `json:"fix"`
	Code     string `json:"code"` // the source line, trimmed
}

type waveRule struct {
	name, severity string
	re             *regexp.Regexp
	// when, if set, must also match the line (a context filter).
	when     *regexp.Regexp
	message  string
	fix      string
	nextSpan int // also look for when in the next lines (loop bodies)
}

var (
	laneCtxRE = regexp.MustCompile(`threadIdx|\btid\b|\blane|\bwarp|\bthread_?id|\bidx\b|\blocal_?id`)
	shflRE    = regexp.MustCompile(`__shfl|__reduce_\w+_sync|__shfl_\w+`)
)

var waveRules = []waveRule{
	{
		name: "sync-mask-32bit", severity: "error",
		re:      regexp.MustCompile(`\b(__shfl(?:_xor|_up|_down)?_sync|__ballot_sync|__any_sync|__all_sync|__uni_sync|__match_any_sync|__match_all_sync|__reduce_\w+_sync|__syncwarp|__activemask_sync)\s*\(\s*(0x[fF]{8}[uUlL]*|4294967295[uUlL]*|~0[uU]?|0xFFFFFFFF[uUlL]*|-1)\s*[,)]`),
		message: "32-bit lane mask: it names lanes 0-31 only, and a wavefront has 64 lanes. HIP's *_sync functions take a 64-bit mask and reject a 32-bit one at compile time (\"The mask must be a 64-bit integer\")",
		fix:     "pass a 64-bit mask covering the wavefront (0xffffffffffffffffull, or __activemask()), or use the mask-less HIP form (__shfl_xor(v, offset))",
	},
	{
		name: "shuffle-loop-from-16", severity: "error",
		re:       regexp.MustCompile(`\bfor\s*\([^;]*=\s*16\s*;[^;]*;[^)]*(>>=\s*1|/=\s*2|>>\s*1|/\s*2)`),
		when:     shflRE,
		nextSpan: 3,
		message:  "a shuffle reduction that starts at offset 16 combines 32 lanes; on a 64-lane wavefront lanes 32-63 are never added in, so the result is half a wavefront's",
		fix:      "start at warpSize / 2: for (int o = warpSize / 2; o > 0; o >>= 1)",
	},
	{
		name: "shuffle-width-32", severity: "warning",
		re:      regexp.MustCompile(`\b__shfl(?:_xor|_up|_down)?(?:_sync)?\s*\([^;]*,\s*32\s*\)`),
		message: "shuffle with width 32 splits the 64-lane wavefront into two independent 32-lane halves",
		fix:     "drop the width argument (it defaults to warpSize) unless two 32-lane groups are intended",
	},
	{
		name: "lane-id-mod-32", severity: "error",
		re:      regexp.MustCompile(`(&\s*(31|0x1[fF])\b|%\s*32\b)`),
		when:    laneCtxRE,
		message: "lane index taken modulo 32; on a 64-lane wavefront lanes 32-63 alias lanes 0-31",
		fix:     "use threadIdx.x % warpSize (or & (warpSize - 1))",
	},
	{
		name: "warp-id-div-32", severity: "error",
		re:      regexp.MustCompile(`(>>\s*5\b|/\s*32(?:[^.\w]|$))`),
		when:    regexp.MustCompile(`threadIdx|blockDim|\btid\b|\bwarp|\bthread_?id|\bidx\b|\blocal_?id`),
		message: "warp index or warp count computed with 32 lanes per warp; a 256-thread block has 4 wavefronts, not 8",
		fix:     "divide by warpSize: threadIdx.x / warpSize, blockDim.x / warpSize",
	},
	{
		name: "warp-size-constant-32", severity: "error",
		re:      regexp.MustCompile(`(?i)(#\s*define\s+\w*warp_?size\w*\s+32\b|\bwarp_?size\w*\s*=\s*32\b|\bkWarpSize\s*=\s*32\b|\bwarp_?lanes?\w*\s*=\s*32\b)`),
		message: "warp size hard-coded as 32; HIP's warpSize is 64 on CDNA",
		fix:     "use warpSize (a device constant) or a constexpr 64 for gfx9 targets",
	},
	{
		name: "ballot-32bit", severity: "error",
		re:      regexp.MustCompile(`\b(unsigned\s+int|unsigned|int|uint32_t|int32_t|uint)\s+\w+\s*=\s*(__ballot(?:_sync)?|__activemask)\s*\(`),
		message: "ballot / activemask result stored in 32 bits: a 64-lane wavefront's mask is 64 bits, so lanes 32-63 are dropped",
		fix:     "store it in unsigned long long (uint64_t) and count with __popcll / find with __ffsll",
	},
	{
		name: "popc-of-ballot", severity: "error",
		re:      regexp.MustCompile(`\b(__popc|__ffs|__clz)\s*\(\s*(__ballot(?:_sync)?|__activemask)\b`),
		message: "32-bit bit count / find on a 64-bit wavefront mask",
		fix:     "use __popcll / __ffsll / __clzll",
	},
}

var (
	lineCommentRE  = regexp.MustCompile(`//.*$`)
	blockCommentRE = regexp.MustCompile(`(?s)/\*.*?\*/`)
)

// LintWavefront64 finds 32-lane warp assumptions in CUDA or HIP source
// that break on 64-lane AMD wavefronts. Lines are 1-based, as in the
// source given.
func LintWavefront64(src string) []LintFinding {
	// Blank out block comments but keep their newlines, so lines still count.
	src = blockCommentRE.ReplaceAllStringFunc(src, func(c string) string {
		return strings.Repeat("\n", strings.Count(c, "\n"))
	})
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	code := make([]string, len(lines))
	for i, ln := range lines {
		code[i] = lineCommentRE.ReplaceAllString(ln, "")
	}
	var out []LintFinding
	for i, ln := range code {
		for _, r := range waveRules {
			loc := r.re.FindStringIndex(ln)
			if loc == nil {
				continue
			}
			if r.when != nil {
				ctx := ln
				for j := 1; j <= r.nextSpan && i+j < len(code); j++ {
					ctx += "\n" + code[i+j]
				}
				if !r.when.MatchString(ctx) {
					continue
				}
			}
			out = append(out, LintFinding{
				Line: i + 1, Col: loc[0] + 1, Rule: r.name, Severity: r.severity,
				Message: r.message, Fix: r.fix, Code: strings.TrimSpace(lines[i]),
			})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Line != out[j].Line {
			return out[i].Line < out[j].Line
		}
		return out[i].Col < out[j].Col
	})
	return out
}
