package brief

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/kevolve/kevolve-mcp/retrieval"
	"github.com/kevolve/kevolve-mcp/search"
)

// query turns the parent's state into the knowledge index's runtime
// query: the device scopes it, the diagnosis and the SOL bound name the
// bottleneck, a build or runtime error lends its salient words, and the
// operator family brings the constraints that apply to it. Deeper nodes ask
// for more documents (their problems are more specific).
func query(c search.Context, parent *search.Node, o Options) retrieval.Query {
	q := retrieval.Query{Device: o.Device.Name, Operator: o.OpFamily, Language: c.Problem.Language, K: 3 + min(parent.Depth, 3)}
	if q.Device == "" && c.Problem.Target == "cpu" {
		q.Device = "cpu"
	}
	var diag []string
	if r := parent.Result; r != nil {
		switch {
		case r.Verdict == search.VerdictPass && r.SOLBound != "":
			diag = append(diag, r.SOLBound+"-bound")
		case r.Verdict == search.VerdictCompileError || r.Verdict == search.VerdictRuntimeError:
			q.ErrorText = r.Log
		case r.Verdict != search.VerdictPass:
			for _, fc := range r.FailedChecks() {
				diag = append(diag, strings.ReplaceAll(fc.Name, "_", " "))
			}
		}
	}
	if d := strings.TrimSpace(parent.Diagnosis); d != "" {
		diag = append(diag, oneLine(d, 400))
	}
	q.Diagnosis = strings.Join(diag, "; ")
	return q
}

// specificity orders retrieved documents by depth: a node near the root is
// shown generic guidance first, deeper nodes the arch's own pages, and the
// deepest worked examples (the search's winners included).
func specificity(r retrieval.Result, depth int) int {
	kind := docKind(r.Path)
	want := []string{"generic", "vendor", "arch", "example"}
	switch {
	case depth >= 4:
		want = []string{"example", "arch", "vendor", "generic"}
	case depth >= 2:
		want = []string{"arch", "vendor", "example", "generic"}
	}
	key := r.Scope
	if kind == "examples" {
		key = "example"
	}
	for i, w := range want {
		if w == key {
			return i
		}
	}
	return len(want)
}

// docKind is a document's top folder, past a user source's label.
func docKind(p string) string {
	parts := strings.Split(p, "/")
	for _, s := range parts {
		switch s {
		case "constraints", "guidance", "hardware", "operators", "examples", "languages":
			return s
		}
	}
	return ""
}

func knowledgeParts(ctx context.Context, c search.Context, parent *search.Node, o Options) (cons, docs *part, q *retrieval.Query) {
	cons = &part{name: "constraints", prio: prioConstraint}
	docs = &part{name: "knowledge", prio: prioKnowledge}
	if o.Retriever == nil {
		return cons, docs, nil
	}
	qq := query(c, parent, o)
	resp, err := o.Retriever.Search(ctx, qq)
	if err != nil && qq.Device != "" {
		// An unknown device name must not cost the operator its knowledge:
		// ask again unscoped.
		qq.Device = ""
		resp, err = o.Retriever.Search(ctx, qq)
	}
	if err != nil || resp == nil {
		return cons, docs, &qq
	}
	if len(resp.Constraints) > 0 {
		var full, lean strings.Builder
		full.WriteString("## Rules every candidate must follow\n\n")
		lean.WriteString("## Rules every candidate must follow (titles; the documents are in the knowledge base)\n\n")
		var paths []string
		for _, r := range resp.Constraints {
			fmt.Fprintf(&full, "### %s\n\n%s\n\n", r.Title, strings.TrimSpace(r.Passage))
			fmt.Fprintf(&lean, "- %s (%s)\n", r.Title, r.Path)
			paths = append(paths, r.Path)
		}
		// Constraints are never dropped, only shortened to their titles.
		cons.levels = []string{full.String(), lean.String()}
		cons.docPaths = [][]string{paths, paths}
	}
	res := append([]retrieval.Result(nil), resp.Results...)
	sort.SliceStable(res, func(i, j int) bool {
		return specificity(res[i], parent.Depth) < specificity(res[j], parent.Depth)
	})
	if len(res) == 0 {
		return cons, docs, &qq
	}
	entries := make([]string, len(res))
	paths := make([]string, len(res))
	for i, r := range res {
		h := ""
		if r.Heading != "" {
			h = " — " + r.Heading
		}
		entries[i] = fmt.Sprintf("### %s%s (%s, %s)\n\n%s\n\n", r.Title, h, r.Path, r.Scope, strings.TrimSpace(r.Passage))
		paths[i] = r.Path
	}
	title := "## Knowledge for this device and bottleneck\n\n"
	for k := len(entries); k >= 1; k-- {
		docs.levels = append(docs.levels, title+strings.Join(entries[:k], ""))
		docs.docPaths = append(docs.docPaths, paths[:k])
	}
	docs.levels = append(docs.levels, "")
	docs.docPaths = append(docs.docPaths, nil)
	return cons, docs, &qq
}
