package retrieval

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// stringsFlag is a repeatable string flag (--kb A --kb B).
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// KBCommand runs `kevolve-mcp kb search QUERY [--device D] [-k N] [--json]`
// and `kevolve-mcp kb list [--json]`: it opens the index in db (embedded
// documents plus every --kb DIR, incrementally), and writes a table or JSON
// to out. Flags may come before or after the query words.
func KBCommand(ctx context.Context, db *sql.DB, emb Embedder, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: kb search QUERY [--device D] [-k N] [--json] | kb list [--json]")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("kb "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		dirs                          stringsFlag
		device, op, lang, diag, errTx string
		k                             int
		asJSON                        bool
		bns                           stringsFlag
	)
	fs.Var(&dirs, "kb", "extra knowledge directory (repeatable)")
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	if sub == "search" {
		fs.StringVar(&device, "device", "", "device: h100, mi300x, cpu, ...")
		fs.IntVar(&k, "k", 5, "number of results")
		fs.StringVar(&op, "operator", "", "operator family (adds its constraints)")
		fs.StringVar(&lang, "language", "", "kernel language")
		fs.StringVar(&diag, "diagnosis", "", "profiler diagnosis text")
		fs.StringVar(&errTx, "error", "", "compiler or runtime error text")
		fs.Var(&bns, "bottleneck", "diagnosed bottleneck (repeatable)")
	}
	// Interleave: parse flags, take a positional word, parse again.
	var words []string
	for {
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("kb %s: %w", sub, err)
		}
		if fs.NArg() == 0 {
			break
		}
		words = append(words, fs.Arg(0))
		args = fs.Args()[1:]
	}
	var sources []Source
	for _, d := range dirs {
		sources = append(sources, DirSource(d))
	}
	ix, err := Open(ctx, db, emb, sources...)
	if err != nil {
		return fmt.Errorf("kb %s: %w", sub, err)
	}
	switch sub {
	case "list":
		return PrintList(out, ix.List(), asJSON)
	case "search":
		resp, err := ix.Search(ctx, Query{Text: strings.Join(words, " "), Device: device, K: k,
			Operator: op, Language: lang, Diagnosis: diag, ErrorText: errTx, Bottlenecks: bns})
		if err != nil {
			return fmt.Errorf("kb search: %w", err)
		}
		return PrintSearch(out, resp, asJSON)
	default:
		return fmt.Errorf("kb: unknown subcommand %q (search, list)", sub)
	}
}

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
