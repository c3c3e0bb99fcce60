package retrieval

import (
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/kevolve/kevolve-mcp/harness/spec"
	"github.com/kevolve/kevolve-mcp/knowledge"
)

// tokenize lower-cases text and splits it into runs of letters and digits,
// the same way FTS5's unicode61 tokenizer does, so both halves of the hybrid
// search see the same words.
func tokenize(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// stop words carry no topic; dropping them keeps BM25 OR-queries and hashed
// vectors focused.
var stop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be been but by can could do does did for from
	has have how i if in into is it its it's me my of on or our should so than that the their them then
	there these they this those to too use used using was we what when where which while who why will
	with would you your not no yes via per vs also any all some more most very just about get make
	want need help tell show find give best way ways do does me please`) {
		m[w] = true
	}
	return m
}()

// contentWords drops stop words and single characters (but keeps digits
// such as "8" in "fp 8" only when part of a longer token).
func contentWords(words []string) []string {
	out := words[:0:0]
	for _, w := range words {
		if stop[w] || len(w) < 2 {
			continue
		}
		out = append(out, w)
	}
	return out
}

// DeviceScope is where a device sits in the knowledge hierarchy.
type DeviceScope struct {
	Vendor string `json:"vendor"`
	// Arch is "" when only the vendor is known (e.g. "cpu", "nvidia").
	Arch string `json:"arch,omitempty"`
}

// deviceNames maps names an agent or device_info may use to a scope. Order
// matters for substring matching of long names: more specific first.
var deviceNames = []struct {
	names []string
	scope DeviceScope
}{
	{[]string{"h100", "h200", "h800", "h20", "gh200", "hopper", "sm90", "sm_90", "sm90a"}, DeviceScope{"nvidia", "hopper"}},
	{[]string{"b200", "b100", "gb200", "gb300", "b300", "blackwell", "sm100", "sm_100", "sm100a", "rtx5090", "sm120"}, DeviceScope{"nvidia", "blackwell"}},
	{[]string{"a100", "a800", "a10", "a10g", "a30", "a40", "a6000", "rtx3090", "ampere", "sm80", "sm_80", "sm86", "sm_86"}, DeviceScope{"nvidia", "ampere"}},
	{[]string{"mi355x", "mi350x", "mi350", "mi355", "cdna4", "gfx950"}, DeviceScope{"amd", "cdna4"}},
	{[]string{"mi300x", "mi300a", "mi300", "mi325x", "mi325", "cdna3", "gfx942"}, DeviceScope{"amd", "cdna3"}},
	{[]string{"x86", "x86_64", "avx2", "avx512", "avx-512", "amx", "xeon", "epyc"}, DeviceScope{"cpu", "x86"}},
	{[]string{"arm", "arm64", "aarch64", "neon", "sve", "graviton", "grace"}, DeviceScope{"cpu", "arm"}},
	{[]string{"nvidia", "cuda", "geforce"}, DeviceScope{"nvidia", ""}},
	{[]string{"amd", "rocm", "hip", "instinct", "radeon"}, DeviceScope{"amd", ""}},
	{[]string{"cpu", "openmp"}, DeviceScope{"cpu", ""}},
}

// ResolveDevice maps a device string ("h100", "NVIDIA H100 80GB HBM3",
// "mi300x", "cpu", "hopper", "amd") to its scope. ok is false when nothing
// in it names a known device, arch or vendor.
func ResolveDevice(device string) (DeviceScope, bool) {
	toks := tokenize(strings.ReplaceAll(device, "_", ""))
	// Also join adjacent tokens so "MI300 X" and "sm 90" resolve.
	for i, n := 0, len(toks); i+1 < n; i++ {
		toks = append(toks, toks[i]+toks[i+1])
	}
	find := func(names []struct {
		names []string
		scope DeviceScope
	}) (DeviceScope, bool) {
		for _, d := range names {
			for _, t := range toks {
				if slices.Contains(d.names, t) {
					return d.scope, true
				}
			}
		}
		return DeviceScope{}, false
	}
	// Chips and archs first, then any device of the spec table (one
	// hardware vocabulary: its keys, aliases and driver names such as
	// l40s, "NVIDIA L40S"), then bare vendors.
	if s, ok := find(deviceNames[:7]); ok {
		return s, true
	}
	arches := spec.Arches()
	for _, t := range toks {
		if vendor, ok := arches[t]; ok {
			return DeviceScope{vendor, t}, true
		}
	}
	if row, ok := spec.Get(device); ok {
		return DeviceScope{row.Vendor, row.Arch}, true
	}
	if row, ok := spec.Lookup(device, 0); ok {
		return DeviceScope{row.Vendor, row.Arch}, true
	}
	if s, ok := find(deviceNames[7:]); ok {
		return s, true
	}
	return DeviceScope{}, false
}

// detectDevice finds a device mention in free text, only by specific names
// (an arch, a chip), so that a word such as "hip" or "cuda" in a question
// about languages does not narrow the scope.
func detectDevice(text string) (DeviceScope, bool) {
	for _, t := range tokenize(text) {
		for _, d := range deviceNames[:7] {
			if slices.Contains(d.names, t) {
				return d.scope, true
			}
		}
	}
	return DeviceScope{}, false
}

// isDeviceWord reports whether w names a GPU or GPU arch (not a vendor,
// language or CPU ISA: "cuda", "hip" and "avx512" are topics too).
func isDeviceWord(w string) bool {
	for _, d := range deviceNames[:5] {
		if slices.Contains(d.names, w) {
			return true
		}
	}
	return false
}

// chipIn returns the first GPU chip name ("h200", "mi300x") in s, or "".
// Arch and ISA names ("hopper", "sm90", "gfx942") are not chips.
func chipIn(s string) string {
	for _, t := range tokenize(s) {
		if !isDeviceWord(t) || strings.HasPrefix(t, "sm") || strings.HasPrefix(t, "gfx") {
			continue
		}
		if slices.Contains([]string{"hopper", "blackwell", "ampere", "cdna3", "cdna4"}, t) {
			continue
		}
		return t
	}
	return ""
}

// bottleneckTerms expands a diagnosis word into the words documents use for
// it, so a structured bottleneck also works as query text.
var bottleneckTerms = map[string][]string{
	"memory-bound":          {"memory bound", "bandwidth", "bytes moved"},
	"compute-bound":         {"compute bound", "flops", "tensor cores"},
	"latency-bound":         {"latency bound", "stalls", "instruction level parallelism"},
	"occupancy-limited":     {"occupancy", "active warps", "blocks per sm"},
	"register-pressure":     {"register pressure", "spills", "registers per thread"},
	"shared-memory-limited": {"shared memory", "smem per block"},
	"launch-bound":          {"launch overhead", "small kernels", "cuda graphs"},
	"uncoalesced":           {"uncoalesced", "coalescing", "strided access"},
	"bank-conflicts":        {"bank conflicts", "padding", "swizzle"},
	"tail-effect":           {"tail effect", "wave quantization", "persistent"},
	"divergence":            {"warp divergence", "branches"},
	"low-tensor-core-use":   {"tensor cores", "mma"},
	"numerics":              {"numerics", "precision", "fp32 accumulation"},
	"compile-error":         {"compile error"},
	"runtime-error":         {"runtime error"},
	"incorrect":             {"incorrect", "wrong results", "mismatch"},
}

// errorHints turns well-known compiler and runtime messages into the words
// the knowledge base uses for their causes.
var errorHints = []struct {
	re    *regexp.Regexp
	terms string
}{
	{regexp.MustCompile(`(?i)illegal memory access|out of bounds|misaligned address|segmentation fault`), "out of bounds mask bounds check index"},
	{regexp.MustCompile(`(?i)too many resources requested|uses too much|registers`), "register pressure launch bounds block size"},
	{regexp.MustCompile(`(?i)out of resource: shared memory|shared memory.*(exceed|limit)|too much shared data`), "shared memory limit num_stages tile size"},
	{regexp.MustCompile(`(?i)constexpr|tl\.constexpr`), "triton constexpr compile time constant"},
	{regexp.MustCompile(`(?i)tl\.arange|power of 2|power of two`), "triton arange power of two block size"},
	{regexp.MustCompile(`(?i)undefined symbol|undefined reference|extern "c"|name mangling`), "extern c linkage symbol"},
	{regexp.MustCompile(`(?i)nan|inf\b|overflow`), "numerics overflow fp32 accumulation scaling"},
	{regexp.MustCompile(`(?i)mismatch|allclose|tolerance|max abs diff`), "incorrect tolerance correctness"},
	{regexp.MustCompile(`(?i)hipErr|hipcc|hip_`), "hip amd"},
	{regexp.MustCompile(`(?i)wgmma|tma|cp\.async\.bulk`), "hopper wgmma tma"},
}

var (
	hexRe  = regexp.MustCompile(`0x[0-9a-fA-F]+`)
	pathRe = regexp.MustCompile(`(?:[A-Za-z]:)?(?:/[\w.\-]+){2,}`)
	lineRe = regexp.MustCompile(`:\d+(:\d+)?`)
)

// salientError keeps the words of an error text that say what went wrong:
// it drops addresses, paths and line numbers, keeps identifiers and words,
// and adds hint words for messages it recognizes.
func salientError(errText string) string {
	if errText == "" {
		return ""
	}
	s := hexRe.ReplaceAllString(errText, " ")
	s = pathRe.ReplaceAllString(s, " ")
	s = lineRe.ReplaceAllString(s, " ")
	var words []string
	seen := map[string]bool{}
	for _, w := range contentWords(tokenize(s)) {
		if isNumber(w) || seen[w] || noiseErr[w] {
			continue
		}
		seen[w] = true
		words = append(words, w)
		if len(words) >= 40 {
			break
		}
	}
	for _, h := range errorHints {
		if h.re.MatchString(errText) {
			words = append(words, h.terms)
		}
	}
	return strings.Join(words, " ")
}

// noiseErr are words every traceback has.
var noiseErr = map[string]bool{"traceback": true, "file": true, "line": true, "most": true,
	"recent": true, "call": true, "last": true, "py": true, "self": true, "return": true, "module": true}

func isNumber(w string) bool {
	for _, r := range w {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// bottlenecksIn finds vocabulary words written in free text (a diagnosis
// such as "memory-bound, 30% occupancy" names "memory-bound").
func bottlenecksIn(text string) []string {
	low := strings.ToLower(text)
	var out []string
	for _, b := range knowledge.Bottlenecks {
		if strings.Contains(low, b) || strings.Contains(low, strings.ReplaceAll(b, "-", " ")) {
			out = append(out, b)
		}
	}
	return out
}

// passage is one searchable piece of a document.
type passage struct {
	Heading string
	Text    string
}

// passageWords is the target size of a passage: small enough that the
// returned passage is the relevant part, big enough to carry context.
const passageWords = 120

// splitPassages cuts a Markdown body at headings, then cuts long sections at
// paragraph boundaries into ~passageWords pieces. Code fences are never cut.
func splitPassages(body string) []passage {
	var out []passage
	heading := ""
	var cur []string
	curWords := 0
	flush := func() {
		t := strings.TrimSpace(strings.Join(cur, "\n\n"))
		if t != "" {
			out = append(out, passage{Heading: heading, Text: t})
		}
		cur, curWords = nil, 0
	}
	// Split into paragraphs, keeping fenced code blocks whole.
	var paras []string
	var b strings.Builder
	inFence := false
	for _, line := range strings.Split(body, "\n") {
		trim := strings.TrimSpace(line)
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(trim, "#") && isHeading(trim) {
			if b.Len() > 0 {
				paras = append(paras, b.String())
				b.Reset()
			}
			paras = append(paras, "\x00"+strings.TrimSpace(strings.TrimLeft(trim, "#")))
			continue
		}
		if !inFence && trim == "" {
			if b.Len() > 0 {
				paras = append(paras, b.String())
				b.Reset()
			}
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	if b.Len() > 0 {
		paras = append(paras, b.String())
	}
	for _, p := range paras {
		if h, ok := strings.CutPrefix(p, "\x00"); ok {
			flush()
			heading = h
			continue
		}
		n := len(strings.Fields(p))
		if curWords > 0 && curWords+n > passageWords*3/2 {
			flush()
		}
		cur = append(cur, p)
		curWords += n
		if curWords >= passageWords {
			flush()
		}
	}
	flush()
	// Merge a tiny trailing piece into its predecessor of the same section.
	if len(out) >= 2 {
		last := out[len(out)-1]
		prev := &out[len(out)-2]
		if len(strings.Fields(last.Text)) < passageWords/4 && prev.Heading == last.Heading {
			prev.Text += "\n\n" + last.Text
			out = out[:len(out)-1]
		}
	}
	return out
}

func isHeading(line string) bool {
	i := 0
	for i < len(line) && line[i] == '#' {
		i++
	}
	return i >= 1 && i <= 6 && i < len(line) && line[i] == ' '
}
