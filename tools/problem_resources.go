package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/corpus"
)

// problemScheme prefixes corpus URIs: problem://llm/rmsnorm/reference.py,
// problem://llm/rmsnorm/meta.json, problem://llm/rmsnorm/start_cuda.py.
const problemScheme = "problem://"

// ProblemResources returns, for every bundled problem, its reference program
// and its metadata (dtype, tolerance, FLOP and byte formulas, shape sets,
// start kernels) as resources, and the problem://{+path} template that also
// reads the start candidates.
func ProblemResources() ([]server.ServerResource, server.ServerResourceTemplate) {
	var res []server.ServerResource
	for _, p := range corpus.List() {
		res = append(res,
			server.ServerResource{
				Resource: mcp.NewResource(problemScheme+p.Name+"/reference.py", p.Name+" reference",
					mcp.WithResourceDescription(p.Description+" (KernelBench format: Model, get_inputs, get_init_inputs)"),
					mcp.WithMIMEType("text/x-python")),
				Handler: readProblem,
			},
			server.ServerResource{
				Resource: mcp.NewResource(problemScheme+p.Name+"/meta.json", p.Name+" metadata",
					mcp.WithResourceDescription("dtype, tolerance, FLOP/byte formulas, shape sets and start kernels of "+p.Name),
					mcp.WithMIMEType("application/json")),
				Handler: readProblem,
			})
	}
	tmpl := server.ServerResourceTemplate{
		Template: mcp.NewResourceTemplate(problemScheme+"{+path}", "Corpus problem file",
			mcp.WithTemplateDescription("A bundled problem's reference.py, meta.json or start kernel (start_cuda.py, start_c.py, start_triton.py), e.g. problem://llm/rmsnorm/start_cuda.py"),
		),
		Handler: readProblem,
	}
	return res, tmpl
}

func readProblem(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	rest, ok := strings.CutPrefix(req.Params.URI, problemScheme)
	i := strings.LastIndexByte(rest, '/')
	if !ok || i <= 0 {
		return nil, fmt.Errorf("not a problem URI: %q (want problem://<family>/<name>/<file>)", req.Params.URI)
	}
	name, file := rest[:i], rest[i+1:]
	p, err := corpus.Get(name)
	if err != nil {
		return nil, err
	}
	text, mime := "", "text/x-python"
	switch {
	case file == "reference.py":
		text, err = p.ReferenceSource()
	case file == "meta.json":
		var b []byte
		b, err = json.MarshalIndent(p, "", "  ")
		text, mime = string(b), "application/json"
	case strings.HasPrefix(file, "start_") && strings.HasSuffix(file, ".py"):
		text, err = p.StartSource(strings.TrimSuffix(strings.TrimPrefix(file, "start_"), ".py"))
	default:
		err = fmt.Errorf("problem %s has no file %q (reference.py, meta.json, start_<kind>.py)", name, file)
	}
	if err != nil {
		return nil, err
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: mime, Text: text}}, nil
}
