package tools

// One limit for every tool's arguments, enforced before any handler runs:
// an inline source is at most problem.MaxSourceBytes (the limit run_kernel
// always had), a path at most problem.MaxPathBytes, free text (notes, a
// query) at most maxTextBytes, and every other string (a problem name, a
// run id, a label, a flag) at most problem.MaxNameBytes. A refusal names
// the argument and its size, never its content.

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/kevolve/kevolve-mcp/harness/problem"
)

// maxTextBytes bounds free text an agent writes (notes, a diagnosis).
const maxTextBytes = 64 << 10

// argLimits are the arguments allowed past MaxNameBytes, by name.
var argLimits = map[string]int{
	"source": problem.MaxSourceBytes, "code": problem.MaxSourceBytes, "candidate_source": problem.MaxSourceBytes,
	"reference_source": problem.MaxSourceBytes, "problem_source": problem.MaxSourceBytes, "start_source": problem.MaxSourceBytes,
	"path": problem.MaxPathBytes, "candidate": problem.MaxPathBytes, "reference": problem.MaxPathBytes,
	"problem": problem.MaxPathBytes, "start": problem.MaxPathBytes,
	"notes": maxTextBytes, "reason": maxTextBytes, "diagnosis": maxTextBytes, "error_text": maxTextBytes, "query": maxTextBytes,
}

// limitArguments is the server's middleware that applies the limits.
func limitArguments(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if args, ok := req.Params.Arguments.(map[string]any); ok {
			for k, v := range args {
				if msg := overLimit(k, v, limitOf(k)); msg != "" {
					return toolErrorf("%s: %s", req.Params.Name, msg), nil
				}
			}
		}
		return next(ctx, req)
	}
}

func limitOf(arg string) int {
	if n, ok := argLimits[arg]; ok {
		return n
	}
	return problem.MaxNameBytes
}

// overLimit checks a value and what it holds (a list of flags, a map of
// constants) against the limit of its argument; "" if within.
func overLimit(arg string, v any, limit int) string {
	switch x := v.(type) {
	case string:
		if len(x) <= limit {
			return ""
		}
		if limit >= problem.MaxSourceBytes {
			return fmt.Sprintf("argument %s is %d bytes, over the %d MiB limit for inline source: a kernel file is kilobytes", arg, len(x), limit>>20)
		}
		return fmt.Sprintf("argument %s is %d bytes, over its limit of %d bytes (it begins %q)", arg, len(x), limit, problem.Clip(x[:min(len(x), 64)]))
	case []any:
		for _, e := range x {
			if msg := overLimit(arg, e, limit); msg != "" {
				return msg
			}
		}
	case map[string]any:
		for k, e := range x {
			if len(k) > problem.MaxNameBytes {
				return fmt.Sprintf("argument %s has a key of %d bytes, over the limit of %d", arg, len(k), problem.MaxNameBytes)
			}
			if msg := overLimit(arg, e, limit); msg != "" {
				return msg
			}
		}
	}
	return ""
}
