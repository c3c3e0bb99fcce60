package compile

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

var (
	// nvcc's front end: kernel.cu(12): error: identifier "x" is undefined
	// (warnings carry a number: kernel.cu(3): warning #177-D: ...)
	edgRE = regexp.MustCompile(`^(.+?)\((\d+)\): (catastrophic error|error|warning|remark|note)(?: #[\w-]+)?: (.*)$`)
	// gcc / clang / host compiler: kernel.c:3:14: error: ...
	gccRE = regexp.MustCompile(`^(.+?):(\d+):(?:(\d+):)? (fatal error|error|warning|note): (.*)$`)
	// ptxas with a location: ptxas /tmp/x.ptx, line 9; error   : ...
	ptxasLocRE = regexp.MustCompile(`^ptxas (.+?), line (\d+); (error|warning|fatal|info)\s*: (.*)$`)
	// a tool-level message: ptxas error   : ..., nvcc fatal   : ..., nvlink error : ...
	toolRE  = regexp.MustCompile(`^(ptxas|nvcc|nvlink|cicc|fatbinary)\s+(error|warning|fatal)\s*: (.*)$`)
	caretRE = regexp.MustCompile(`^\s*\^\s*$`)
)

// ParseDiagnostics extracts the located messages from a compiler log (nvcc,
// ptxas, gcc). Informational ptxas lines are left out.
func ParseDiagnostics(log string) []Diagnostic {
	lines := strings.Split(strings.ReplaceAll(log, "\r\n", "\n"), "\n")
	var out []Diagnostic
	for i := 0; i < len(lines); i++ {
		ln := strings.TrimRight(lines[i], " ")
		if m := edgRE.FindStringSubmatch(ln); m != nil {
			d := Diagnostic{File: cleanFile(m[1]), Line: atoi(m[2]), Severity: severity(m[3]), Message: m[4]}
			// EDG prints the source line indented by two and a caret under
			// the column: recover the column from it.
			if i+2 < len(lines) && caretRE.MatchString(lines[i+2]) && strings.HasPrefix(lines[i+1], "  ") {
				d.Col = strings.Index(lines[i+2], "^") - 1
				i += 2
			}
			out = append(out, d)
			continue
		}
		if m := ptxasLocRE.FindStringSubmatch(ln); m != nil {
			if m[3] == "info" {
				continue
			}
			out = append(out, Diagnostic{File: cleanFile(m[1]), Line: atoi(m[2]), Severity: severity(m[3]), Message: strings.TrimSpace(m[4])})
			continue
		}
		if m := toolRE.FindStringSubmatch(ln); m != nil {
			out = append(out, Diagnostic{File: m[1], Severity: severity(m[2]), Message: strings.TrimSpace(m[3])})
			continue
		}
		if m := gccRE.FindStringSubmatch(ln); m != nil && !strings.HasPrefix(m[1], "ptxas") {
			out = append(out, Diagnostic{File: cleanFile(m[1]), Line: atoi(m[2]), Col: atoi(m[3]), Severity: severity(m[4]), Message: m[5]})
			continue
		}
	}
	return out
}

func severity(s string) string {
	switch s {
	case "catastrophic error", "fatal error", "fatal":
		return "fatal"
	}
	return s
}

// cleanFile shows sources we wrote by their base name (kernel.cu), and
// leaves headers with their full path.
func cleanFile(f string) string {
	base := filepath.Base(f)
	if strings.HasPrefix(base, "kernel.") || strings.HasSuffix(base, ".ptx") {
		return base
	}
	return f
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
