package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Arguments that break a tool's input schema are rejected by mcp-go
// (WithInputSchemaValidation) before any handler or middleware runs, with a
// message built from the validator's internals: an agent that passed an
// unknown argument read `<root>: &{Properties:[candidate]}`. This file is the
// one place that turns such a rejection into words: which argument is wrong,
// and what is allowed instead.

// schemaRejection is how mcp-go's validation errors begin (server/input_validation.go).
const schemaRejection = "input schema validation failed"

// argumentErrorHooks rewrites mcp-go's schema rejections of calls to tools
// into readable messages. The after-call hook runs before the response is
// written, and the result it is given is the one sent. The before-call hook
// renames another tool's word for an argument (argument_aliases.go).
func argumentErrorHooks(tools []server.ServerTool) *server.Hooks {
	ex := newArgExplainer(tools)
	h := &server.Hooks{}
	h.AddBeforeCallTool(aliasArguments(tools))
	h.AddAfterCallTool(func(_ context.Context, _ any, req *mcp.CallToolRequest, result any) {
		res, ok := result.(*mcp.CallToolResult)
		if !ok || res == nil || !res.IsError || req == nil || !rejectedBySchema(res) {
			return
		}
		if msg := ex.explain(req.Params.Name, req.Params.Arguments); msg != "" {
			res.Content = []mcp.Content{mcp.NewTextContent(msg)}
		}
	})
	return h
}

func rejectedBySchema(res *mcp.CallToolResult) bool {
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok && strings.HasPrefix(t.Text, schemaRejection) {
			return true
		}
	}
	return false
}

// argExplainer validates arguments against each tool's input schema (the
// same JSON Schema mcp-go checks, with the same validator, because mcp-go's
// rejection reaches the hook as flat text, not as the violations) and
// describes the violations in words. It decides nothing: the hook calls it
// only for calls mcp-go rejected, and where it finds no violation mcp-go's
// message stands (TestArgExplainerAgreesWithMCPGo).
type argExplainer struct {
	tools map[string]mcp.Tool
	mu    sync.Mutex
	cache map[string]*toolSchema
}

type toolSchema struct {
	compiled *jsonschema.Schema
	props    map[string]map[string]any // argument name -> its schema
}

func newArgExplainer(tools []server.ServerTool) *argExplainer {
	m := make(map[string]mcp.Tool, len(tools))
	for _, t := range tools {
		m[t.Tool.Name] = t.Tool
	}
	return &argExplainer{tools: m, cache: map[string]*toolSchema{}}
}

func (e *argExplainer) schema(name string) (*toolSchema, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.cache[name]; ok {
		return s, nil
	}
	tool, ok := e.tools[name]
	if !ok {
		return nil, fmt.Errorf("no tool %q", name)
	}
	raw := tool.RawInputSchema
	if len(raw) == 0 {
		b, err := json.Marshal(tool.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("encode %s input schema: %w", name, err)
		}
		raw = b
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("decode %s input schema: %w", name, err)
	}
	url := "mem:///kevolve/tools/" + name + ".json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("%s input schema: %w", name, err)
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("compile %s input schema: %w", name, err)
	}
	s := &toolSchema{compiled: compiled, props: map[string]map[string]any{}}
	var top struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if json.Unmarshal(raw, &top) == nil {
		s.props = top.Properties
	}
	e.cache[name] = s
	return s, nil
}

// explain returns what is wrong with args for the tool in words, or "" when
// they conform (or the tool is unknown: then the caller's message stands).
func (e *argExplainer) explain(toolName string, args any) string {
	s, err := e.schema(toolName)
	if err != nil {
		return ""
	}
	b, err := json.Marshal(args)
	if err != nil || args == nil {
		b = []byte("{}")
	}
	if raw, ok := args.(json.RawMessage); ok && len(bytes.TrimSpace(raw)) > 0 {
		b = raw
	}
	value, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Sprintf("%s: the arguments are not a JSON object: %v", toolName, err)
	}
	if _, ok := value.(map[string]any); !ok {
		return fmt.Sprintf("%s: the arguments must be a JSON object of named arguments (%s)", toolName, strings.Join(s.names(), ", "))
	}
	var verr *jsonschema.ValidationError
	if err := s.compiled.Validate(value); !errors.As(err, &verr) {
		return ""
	}
	var parts []string
	seen := map[string]bool{}
	for _, leaf := range leaves(verr) {
		if m := s.describe(leaf); m != "" && !seen[m] {
			seen[m] = true
			parts = append(parts, m)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: invalid arguments: %s", toolName, strings.Join(parts, "; "))
}

func leaves(v *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(v.Causes) == 0 {
		return []*jsonschema.ValidationError{v}
	}
	var out []*jsonschema.ValidationError
	for _, c := range v.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func (s *toolSchema) names() []string {
	names := make([]string, 0, len(s.props))
	for n := range s.props {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

var english = message.NewPrinter(language.English)

// describe puts one violation in words: the argument (as a path where it is
// nested, e.g. flags[2]) and what it may be.
func (s *toolSchema) describe(v *jsonschema.ValidationError) string {
	arg := argPath(v.InstanceLocation)
	switch k := v.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		if len(v.InstanceLocation) > 0 {
			return fmt.Sprintf("%s has unknown keys %s", arg, quoteAll(k.Properties))
		}
		var out []string
		for _, p := range k.Properties {
			m := fmt.Sprintf("unknown argument %q", p)
			if near := s.closest(p); near != "" {
				m += fmt.Sprintf(" (did you mean %q? %s)", near, firstSentence(s.props[near]))
			}
			out = append(out, m)
		}
		return strings.Join(out, "; ") + ". Allowed arguments: " + strings.Join(s.names(), ", ")
	case *kind.Required:
		var out []string
		for _, p := range k.Missing {
			name := p
			if len(v.InstanceLocation) > 0 {
				name = arg + "." + p
			}
			m := fmt.Sprintf("missing required argument %q", name)
			if d := firstSentence(s.props[p]); d != "" && len(v.InstanceLocation) == 0 {
				m += " (" + d + ")"
			}
			out = append(out, m)
		}
		return strings.Join(out, "; ")
	case *kind.Type:
		if k.Got == "number" && len(k.Want) == 1 && k.Want[0] == "integer" {
			return fmt.Sprintf("argument %q must be a whole number (an integer)", arg)
		}
		return fmt.Sprintf("argument %q must be %s, not %s", arg, strings.Join(article(k.Want), " or "), article([]string{k.Got})[0])
	case *kind.Enum:
		var want []string
		for _, w := range k.Want {
			want = append(want, fmt.Sprint(w))
		}
		return fmt.Sprintf("argument %q is %s; allowed values: %s", arg, jsonText(k.Got), strings.Join(want, ", "))
	case nil:
		return ""
	default:
		if arg == "" {
			return k.LocalizedString(english)
		}
		return fmt.Sprintf("argument %q: %s", arg, k.LocalizedString(english))
	}
}

// argPath renders an instance location as an argument path: flags[2], signature.x.
func argPath(loc []string) string {
	var b strings.Builder
	for i, seg := range loc {
		switch {
		case i == 0:
			b.WriteString(seg)
		case isIndex(seg):
			b.WriteString("[" + seg + "]")
		default:
			b.WriteString("." + seg)
		}
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// closest is the allowed argument an unknown one most likely meant: one
// contains the other (candidate / candidate_s), or they are a typo apart.
func (s *toolSchema) closest(name string) string {
	if own := aliasOf(name, func(n string) bool { _, ok := s.props[n]; return ok }); own != "" {
		return own // the other tools' word for the same argument
	}
	best, bestD := "", 3
	for _, n := range s.names() {
		if len(name) >= 3 && (strings.HasPrefix(n, name) || strings.HasPrefix(name, n)) {
			return n
		}
		if d := editDistance(strings.ToLower(name), n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func firstSentence(prop map[string]any) string {
	d, _ := prop["description"].(string)
	if i := strings.Index(d, ". "); i > 0 {
		d = d[:i+1]
	}
	return d
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// article names JSON types as a sentence would: "a string", "an integer".
func article(types []string) []string {
	out := make([]string, len(types))
	for i, t := range types {
		switch t {
		case "integer", "object", "array":
			out[i] = "an " + t
		case "null":
			out[i] = "null"
		default:
			out[i] = "a " + t
		}
	}
	return out
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
