package tools

import (
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
	Query       string   `json:"query,omitempty" jsonschema:"Free text: what you want to know or try, e.g. 'split-K for skinny GEMM' or 'why does my Triton kernel spill registers'."`
	Device      string   `json:"device,omitempty" jsonschema:"Target device: a chip (h100, h200, a100, b200, mi300x, mi325x, mi355x, cpu), an arch (hopper, blackwell, cdna3, ...) or a vendor (nvidia, amd). Results are scoped to it: same arch first, then vendor, then generic; other hardware last."`
	K           int      `json:"k,omitempty" jsonschema:"How many documents to return (1-50, default 5)."`
	Operator    string   `json:"operator,omitempty" jsonschema:"Operator family being written: gemm, attention, norm, softmax, embedding-bag, jagged, interaction, conv, reduction, scan, elementwise. Adds the constraints that apply to it."`
	Language    string   `json:"language,omitempty" jsonschema:"Kernel language: cuda, triton, hip, c, cute."`
	Bottlenecks []string `json:"bottlenecks,omitempty" jsonschema:"Diagnosed bottlenecks from profile_kernel, e.g. memory-bound, register-pressure, bank-conflicts, uncoalesced, tail-effect, low-tensor-core-use."`
	Diagnosis   string   `json:"diagnosis,omitempty" jsonschema:"The profiler's diagnosis in words, e.g. 'memory-bound, 30% occupancy on H100'."`
	ErrorText   string   `json:"error_text,omitempty" jsonschema:"A compiler or runtime error message; its salient words become part of the query."`
}

// SearchKnowledge returns the search_knowledge tool over an opened index.
func SearchKnowledge(ix *retrieval.Index) server.ServerTool {
	tool := mcp.NewTool("search_knowledge",
		mcp.WithDescription("Search the kernel-optimization knowledge base (constraints, platform-neutral "+
			"guidance, per-vendor/arch hardware notes, language idioms, operator recipes, examples). "+
			"Give free text and/or a runtime context (device, operator, language, bottlenecks, the "+
			"profiler's diagnosis, a compiler error). Returns for each document its path, title, scope "+
			"relative to the device, score and the most relevant passage; with an operator also the "+
			"constraints every candidate must obey. Read a whole document as resource kb://<path>."),
		mcp.WithInputSchema[SearchKnowledgeArgs](),
		mcp.WithOutputSchema[retrieval.Response](),
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
