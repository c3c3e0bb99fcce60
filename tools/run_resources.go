package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/search/runs"
)

// runScheme prefixes run URIs: run://ID (the summary as JSON),
// run://ID/report.html (the run's self-contained report),
// run://ID/reference.py (its reference program) and run://ID/node/N (a
// node's kernel).
const runScheme = "run://"

// RunResources returns the run:// templates: a run's summary, its report,
// its reference and its nodes' kernels.
func RunResources(m *runs.Manager) []server.ServerResourceTemplate {
	read := func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return readRun(ctx, m, req.Params.URI)
	}
	return []server.ServerResourceTemplate{
		{
			Template: mcp.NewResourceTemplate(runScheme+"{id}", "Search run summary",
				mcp.WithTemplateDescription("A search run's summary as JSON: status, evaluations, start and best kernels with speedups and % of speed of light (run ids come from evolve and evolve_start)"),
				mcp.WithTemplateMIMEType("application/json")),
			Handler: read,
		},
		{
			Template: mcp.NewResourceTemplate(runScheme+"{id}/report.html", "Search run report",
				mcp.WithTemplateDescription("A search run's self-contained HTML report: the search tree, best-so-far, the roofline and every node's code and checks"),
				mcp.WithTemplateMIMEType("text/html")),
			Handler: read,
		},
		{
			Template: mcp.NewResourceTemplate(runScheme+"{id}/reference.py", "Search run reference",
				mcp.WithTemplateDescription("The reference program (KernelBench format) of a run's problem: what evolve_next's task.problem.reference_uri names"),
				mcp.WithTemplateMIMEType("text/x-python")),
			Handler: read,
		},
		{
			Template: mcp.NewResourceTemplate(runScheme+"{id}/node/{node}", "Search run kernel",
				mcp.WithTemplateDescription("One node's kernel (a Python module defining ModelNew): what evolve_next's task.parent.code_uri and evolve_submit's node.code_uri name"),
				mcp.WithTemplateMIMEType("text/x-python")),
			Handler: read,
		},
	}
}

func readRun(ctx context.Context, m *runs.Manager, uri string) ([]mcp.ResourceContents, error) {
	if m == nil {
		return nil, errors.New("runs are not available: this server has no search store")
	}
	rest, ok := strings.CutPrefix(uri, runScheme)
	if !ok || rest == "" {
		return nil, fmt.Errorf("not a run URI: %q (want run://ID or run://ID/report.html)", uri)
	}
	id, file, _ := strings.Cut(rest, "/")
	if node, ok := strings.CutPrefix(file, "node/"); ok {
		return readNodeCode(ctx, m, uri, id, node)
	}
	switch file {
	case "reference.py":
		src, err := m.ReferenceSource(ctx, id)
		if err != nil {
			return nil, err
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "text/x-python", Text: src}}, nil
	case "":
		sum, err := m.Summary(ctx, id)
		if err != nil {
			return nil, err
		}
		b, err := json.MarshalIndent(sum, "", "  ")
		if err != nil {
			return nil, err
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(b)}}, nil
	case "report.html":
		path, err := m.Report(ctx, id)
		if err != nil {
			return nil, err
		}
		if filepath.Ext(path) != ".html" {
			return nil, fmt.Errorf("run %s: this build writes no HTML report (its report is %s); read run://%s for the summary", id, filepath.Base(path), id)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("run %s report: %w", id, err)
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "text/html", Text: string(b)}}, nil
	}
	return nil, fmt.Errorf("run %s has no resource %q (run://%s, run://%s/report.html, run://%s/reference.py or run://%s/node/N)", id, file, id, id, id, id)
}

// readNodeCode answers run://ID/node/N with node N's kernel.
func readNodeCode(ctx context.Context, m *runs.Manager, uri, id, node string) ([]mcp.ResourceContents, error) {
	n, err := strconv.ParseInt(node, 10, 64)
	if err != nil || n <= 0 {
		return nil, fmt.Errorf("run %s: %q is not a node id (run://%s/node/N, N a number)", id, node, id)
	}
	code, err := m.NodeCode(ctx, id, n)
	if err != nil {
		return nil, err
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "text/x-python", Text: code}}, nil
}
