package retrieval

// Readable output of searches and listings, for command lines (the flags
// that choose them are parsed by the caller: this package is a library).

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// PrintSearch writes a response as JSON or as a readable list: rank, score,
// scope, path and title, then the passage, indented and clipped.
func PrintSearch(w io.Writer, resp *Response, asJSON bool) error {
	if asJSON {
		return writeJSON(w, resp)
	}
	if resp.Device != nil {
		fmt.Fprintf(w, "device scope: %s/%s\n", resp.Device.Vendor, orGeneric(resp.Device.Arch))
	}
	if len(resp.Results) == 0 {
		fmt.Fprintln(w, "no results")
	}
	for i, r := range resp.Results {
		printResult(w, fmt.Sprintf("%d.", i+1), r)
	}
	if len(resp.Constraints) > 0 {
		fmt.Fprintln(w, "\nconstraints that apply:")
		for _, r := range resp.Constraints {
			printResult(w, "!", r)
		}
	}
	return nil
}

func printResult(w io.Writer, mark string, r Result) {
	fmt.Fprintf(w, "%-3s %7.2f  %-7s %s\n    %s\n", mark, r.Score, r.Scope, r.Path, r.Title)
	text := strings.Join(strings.Fields(r.Passage), " ")
	if len(text) > 240 {
		text = text[:240] + "..."
	}
	if text != "" {
		fmt.Fprintf(w, "    %s\n", text)
	}
}

func orGeneric(s string) string {
	if s == "" {
		return "any"
	}
	return s
}

// PrintList writes the documents as JSON or as a table.
func PrintList(w io.Writer, docs []DocInfo, asJSON bool) error {
	if asJSON {
		return writeJSON(w, docs)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tVENDOR/ARCH\tBOTTLENECKS\tTITLE")
	for _, d := range docs {
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\n", d.Path, d.Vendor, d.Arch, strings.Join(d.Bottlenecks, ","), d.Title)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write list: %w", err)
	}
	fmt.Fprintf(w, "%d documents\n", len(docs))
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}
