package search

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// NormalizedHash hashes code after dropping what cannot change behaviour:
// line endings, trailing whitespace and blank lines. Comments stay: a '#'
// line inside a kernel source string may be a preprocessor directive. Two
// kernels with the same hash are the same candidate and are evaluated once.
func NormalizedHash(code string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.ReplaceAll(code, "\r\n", "\n"), "\n") {
		line = strings.TrimRight(line, " \t\r")
		if line == "" {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}
