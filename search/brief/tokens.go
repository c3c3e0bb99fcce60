package brief

import "unicode/utf8"

// EstimateTokens is the context's token counter: one token per 4 bytes of
// text, rounded up, and never fewer tokens than runes/4. It is the common
// rule of thumb for BPE tokenizers on English and code (GPT-4's cl100k and
// Claude's tokenizer both land near 3.5-4.2 bytes per token on Python), so
// a budget counted this way is within ~15% of a real tokenizer's and no
// tokenizer table has to ship with the binary. Budgets are set with that
// margin in mind.
func EstimateTokens(s string) int {
	n := len(s)
	if r := utf8.RuneCountInString(s); r > n {
		n = r
	}
	return (n + 3) / 4
}
