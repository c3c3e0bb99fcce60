package tools

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/retrieval"
)

// SearchKnowledgeArgs are the arguments of search_knowledge. Every field is
// optional, but at least one of query, diagnosis, error_text, bottlenecks or
// operator must say what to look for.
type SearchKnowledgeArgs struct {
	Query       string   `json:"query,omitempty" jsonschema:"What you want to know or try, e.g. 'split-K for skinny GEMM'."`
	Device      string   `json:"device,omitempty" jsonschema:"A chip (h100, b200, mi300x, cpu...), an arch (hopper, cdna3...) or a vendor (nvidia, amd); its documents rank first."`
	K           int      `json:"k,omitempty" jsonschema:"Documents to return (1-50, default 5)."`
	Operator    string   `json:"operator,omitempty" jsonschema:"Operator family (gemm, attention, norm, softmax, embedding-bag, jagged, interaction, conv, reduction, scan, elementwise); adds its constraints."`
	Language    string   `json:"language,omitempty" jsonschema:"cuda, triton, hip, c or cute."`
	Bottlenecks []string `json:"bottlenecks,omitempty" jsonschema:"From profile_kernel, e.g. memory-bound, register-pressure, uncoalesced."`
	Diagnosis   string   `json:"diagnosis,omitempty" jsonschema:"The profiler's diagnosis in words."`
	ErrorText   string   `json:"error_text,omitempty" jsonschema:"A compiler or runtime error; its salient words join the query."`
	MaxChars    int      `json:"max_chars,omitempty" jsonschema:"Answer size cap in characters (default 8000); omitted says what was cut."`
}

// SearchKnowledge returns the search_knowledge tool over an opened index.
func SearchKnowledge(ix *retrieval.Index) server.ServerTool {
	tool := mcp.NewTool("search_knowledge",
		mcp.WithDescription("Use before writing a kernel and after profiling one: search the kernel-optimization knowledge base (constraints, guidance, per-arch hardware "+
			"notes, language idioms, operator recipes, examples) by free text and/or context (device, operator, language, bottlenecks, diagnosis, a "+
			"compiler error). Returns each document's path, title, scope relative to the device, score and best passage; with an operator, also the "+
			"constraints every candidate must obey. Read a whole document as resource kb://<path>."),
		mcp.WithInputSchema[SearchKnowledgeArgs](),
		outputSchema[retrieval.Response](),
		mcp.WithTitleAnnotation("Search the knowledge base"),
		mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithDestructiveHintAnnotation(false),
		mcp.WithIdempotentHintAnnotation(true),
		// The documents are a closed, local set; a remote embedder (Ollama,
		// an OpenAI-compatible endpoint) sends each query over the network.
		mcp.WithOpenWorldHintAnnotation(ix != nil && ix.RemoteEmbedder()),
	)
	handler := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if ix == nil {
			return toolErrorf("the knowledge base is not loaded in this server"), nil
		}
		var args SearchKnowledgeArgs
		if err := req.BindArguments(&args); err != nil {
			return toolErrorf("invalid arguments: %v", err), nil
		}
		if args.K < 0 || args.K > 50 {
			return toolErrorf("k must be between 1 and 50 (got %d); omit it for 5", args.K), nil
		}
		if args.MaxChars < 0 || args.MaxChars > 100000 {
			return toolErrorf("max_chars must be between 1 and 100000 (got %d); omit it for %d", args.MaxChars, retrieval.DefaultBudget), nil
		}
		resp, err := ix.Search(ctx, retrieval.Query{
			Text: args.Query, Device: args.Device, Operator: args.Operator, Language: args.Language,
			Bottlenecks: args.Bottlenecks, Diagnosis: args.Diagnosis, ErrorText: args.ErrorText, K: args.K,
		})
		if errors.Is(err, retrieval.ErrEmptyQuery) {
			return toolErrorf("nothing to search for: give query, diagnosis, error_text, bottlenecks or operator"), nil
		}
		if err != nil {
			return toolErrorf("search_knowledge: %v", err), nil
		}
		resp.Fit(cmp.Or(args.MaxChars, retrieval.DefaultBudget))
		return structured(resp), nil
	}
	return server.ServerTool{Tool: tool, Handler: handler}
}

// kbScheme prefixes knowledge document URIs: kb://guidance/coalescing.md.
const kbScheme = "kb://"

// KnowledgeResources returns one resource per indexed document (listed by
// resources/list) and the kb://{+path} template that reads any of them.
func KnowledgeResources(ix *retrieval.Index) ([]server.ServerResource, server.ServerResourceTemplate) {
	read := func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		if ix == nil {
			return nil, errors.New("the knowledge base is not loaded in this server")
		}
		p, ok := strings.CutPrefix(req.Params.URI, kbScheme)
		if !ok {
			return nil, fmt.Errorf("not a knowledge URI: %q (want kb://<path>)", req.Params.URI)
		}
		d, ok := ix.Get(p)
		if !ok {
			return nil, fmt.Errorf("no knowledge document %q; search_knowledge lists paths", p)
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{
			URI: req.Params.URI, MIMEType: "text/markdown", Text: "# " + d.Title + "\n\n" + d.Body,
		}}, nil
	}
	var res []server.ServerResource
	var docs []retrieval.DocInfo
	if ix != nil { // nil in schema-only uses (tools.All(Deps{}))
		docs = ix.List()
	}
	for _, d := range docs {
		desc := d.Summary
		if desc == "" {
			desc = d.Title
		}
		desc += fmt.Sprintf(" [%s/%s]", d.Vendor, d.Arch)
		res = append(res, server.ServerResource{
			Resource: mcp.NewResource(kbScheme+d.Path, d.Title,
				mcp.WithResourceDescription(desc), mcp.WithMIMEType("text/markdown")),
			Handler: read,
		})
	}
	tmpl := server.ServerResourceTemplate{
		Template: mcp.NewResourceTemplate(kbScheme+"{+path}", "Knowledge document",
			mcp.WithTemplateDescription("A knowledge-base document by path, e.g. kb://guidance/coalescing.md"),
			mcp.WithTemplateMIMEType("text/markdown")),
		Handler: read,
	}
	return res, tmpl
}
