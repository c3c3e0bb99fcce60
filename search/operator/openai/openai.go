// Package openai is the `openai:` operator: any OpenAI-compatible chat
// endpoint (vLLM, Ollama, a hosted API) proposes kernels through the
// official openai-go client. One name can list several models, each with
// its own endpoint; a cost-aware UCB1 bandit picks one per proposal.
//
//	openai:MODEL[@URL][,MODEL[@URL]...]
//
// URL defaults to OPENAI_BASE_URL, then https://api.openai.com/v1. The key
// is OPENAI_API_KEY ("none" when unset: vLLM and Ollama accept any).
// Every call has a hard deadline (the operator's), each HTTP attempt its
// own timeout, and 429/5xx answers are retried with exponential backoff
// (and Retry-After) by the client.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/kevolve/kevolve-mcp/search"
	"github.com/kevolve/kevolve-mcp/search/brief"
)

// Defaults.
const (
	DefaultDeadline = 5 * time.Minute
	DefaultRetries  = 3
	DefaultBaseURL  = "https://api.openai.com/v1"
)

// Model is one arm: a model name at an endpoint.
type Model struct {
	Name    string `json:"model"`
	BaseURL string `json:"base_url"`
}

// Config sets up the operator.
type Config struct {
	Deadline time.Duration // whole proposal (0 = DefaultDeadline)
	// AttemptTimeout bounds one HTTP attempt (0 = the deadline / (retries+1)).
	AttemptTimeout time.Duration
	Retries        int // 0 = DefaultRetries; <0 = none
	APIKey         string
	Temperature    float64 // 0 = the server's default
	MaxTokens      int     // 0 = the server's default
	// CostWeight is how much the bandit weighs an arm's token cost against
	// its reward (0 = 0.5; <0 = ignore cost).
	CostWeight float64
	Context    brief.Options
}

// Op is an openai: operator.
type Op struct {
	name   string
	models []Model
	cfg    Config

	clients []oai.Client
}

// Parse reads "openai:MODEL[@URL][,MODEL[@URL]...]".
func Parse(spec string) ([]Model, error) {
	rest, ok := strings.CutPrefix(spec, "openai:")
	if !ok || strings.TrimSpace(rest) == "" {
		return nil, fmt.Errorf("operator %q: use openai:MODEL[@URL][,MODEL[@URL]...], e.g. openai:qwen3-coder@http://localhost:8000/v1", spec)
	}
	var out []Model
	for _, part := range strings.Split(rest, ",") {
		part = strings.TrimSpace(part)
		m := Model{Name: part}
		if i := strings.LastIndex(part, "@"); i >= 0 && strings.Contains(part[i:], "://") {
			m.Name, m.BaseURL = part[:i], part[i+1:]
		}
		if m.Name == "" {
			return nil, fmt.Errorf("operator %q: empty model name", spec)
		}
		out = append(out, m)
	}
	return out, nil
}

// New builds the operator from its name.
func New(spec string, cfg Config) (*Op, error) {
	models, err := Parse(spec)
	if err != nil {
		return nil, err
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = DefaultDeadline
	}
	if cfg.Retries == 0 {
		cfg.Retries = DefaultRetries
	}
	if cfg.Retries < 0 {
		cfg.Retries = 0
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = cfg.Deadline / time.Duration(cfg.Retries+1)
	}
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	if cfg.APIKey == "" {
		cfg.APIKey = "none"
	}
	if cfg.CostWeight == 0 {
		cfg.CostWeight = 0.5
	}
	if cfg.CostWeight < 0 {
		cfg.CostWeight = 0
	}
	o := &Op{name: spec, models: models, cfg: cfg}
	for i := range models {
		if models[i].BaseURL == "" {
			models[i].BaseURL = os.Getenv("OPENAI_BASE_URL")
		}
		if models[i].BaseURL == "" {
			models[i].BaseURL = DefaultBaseURL
		}
		o.clients = append(o.clients, oai.NewClient(
			option.WithBaseURL(models[i].BaseURL),
			option.WithAPIKey(cfg.APIKey),
			option.WithMaxRetries(cfg.Retries),
			option.WithRequestTimeout(cfg.AttemptTimeout),
		))
	}
	return o, nil
}

func (o *Op) Name() string            { return o.name }
func (o *Op) Deadline() time.Duration { return o.cfg.Deadline }

// Models are the arms, in order.
func (o *Op) Models() []Model { return o.models }

// Input is what a node records about its proposal.
type Input struct {
	Model          string           `json:"model"`
	BaseURL        string           `json:"base_url"`
	Answer         string           `json:"answer_kind"` // file | diff
	ContextVersion string           `json:"context_version"`
	ContextHash    string           `json:"context_hash"`
	ContextTokens  int              `json:"context_tokens"`
	Synthesis      *brief.Synthesis `json:"synthesis,omitempty"`
	PromptTokens   int              `json:"prompt_tokens"`
	OutputTokens   int              `json:"output_tokens"`
	DurationS      float64          `json:"duration_s"`
	Context        string           `json:"context"`
}

// Contract is how the model must answer.
const Contract = "Answer with the complete new kernel.py in one ```python block (a module defining `ModelNew`), or with a unified diff against the current kernel in one ```diff block. Before the block, say in one line what you changed and why. Nothing outside the block is used."

const system = "You are an expert GPU kernel engineer. You write correct, fast kernels (CUDA, HIP, Triton or C, loaded from Python) that replace a PyTorch reference, and you follow the evaluation rules you are given exactly."

// Propose asks the bandit's model for one candidate.
func (o *Op) Propose(ctx context.Context, c search.Context) (search.Proposal, error) {
	opts := o.cfg.Context
	opts.OutputContract = Contract
	syn, err := brief.Synthesize(ctx, c, opts)
	if err != nil {
		return search.Proposal{}, err
	}
	i := o.pick(c.Graph)
	m := o.models[i]
	params := oai.ChatCompletionNewParams{
		Model:    m.Name,
		Messages: []oai.ChatCompletionMessageParamUnion{oai.SystemMessage(system), oai.UserMessage(syn.Text)},
	}
	if o.cfg.Temperature > 0 {
		params.Temperature = oai.Float(o.cfg.Temperature)
	}
	if o.cfg.MaxTokens > 0 {
		params.MaxCompletionTokens = oai.Int(int64(o.cfg.MaxTokens))
	}
	t0 := time.Now()
	resp, err := o.clients[i].Chat.Completions.New(ctx, params)
	took := time.Since(t0).Seconds()
	if err != nil {
		if ctx.Err() != nil {
			return search.Proposal{}, o.fail(m, syn, 0, fmt.Errorf("%s at %s: no answer within the deadline (%.0f s): %w", m.Name, m.BaseURL, took, err))
		}
		var apiErr *oai.Error
		if errors.As(err, &apiErr) && (apiErr.StatusCode == 401 || apiErr.StatusCode == 403) {
			// No retry fixes a key: the run pauses and says how to resume.
			err = fmt.Errorf("%w: %w — set OPENAI_API_KEY for this endpoint, then resume the run with --resume", search.ErrOperatorUnavailable, err)
		}
		return search.Proposal{}, o.fail(m, syn, 0, fmt.Errorf("%s at %s: %w", m.Name, m.BaseURL, err))
	}
	if len(resp.Choices) == 0 {
		return search.Proposal{}, o.fail(m, syn, 0, fmt.Errorf("%s: %w: the reply has no choices", m.Name, ErrMalformed))
	}
	answer := resp.Choices[0].Message.Content
	tokens := int(resp.Usage.PromptTokens + resp.Usage.CompletionTokens)
	code, kind, err := extract(answer, c.Parents[0].Code)
	if err != nil {
		return search.Proposal{}, o.fail(m, syn, tokens, fmt.Errorf("%s: %w; the answer began: %q", m.Name, err, head(answer, 300)))
	}
	in := Input{Model: m.Name, BaseURL: m.BaseURL, Answer: kind, ContextVersion: syn.Version, ContextHash: syn.Hash,
		ContextTokens: syn.Tokens, Synthesis: syn, PromptTokens: int(resp.Usage.PromptTokens), OutputTokens: int(resp.Usage.CompletionTokens),
		DurationS: took, Context: syn.Text}
	raw, _ := json.Marshal(in)
	return search.Proposal{Code: code, Inputs: raw, Tokens: tokens, Notes: notes(answer, m.Name, kind)}, nil
}

func (o *Op) pick(g *search.Graph) int {
	return choose(stats(g, o.name, modelNames(o.models)), o.cfg.CostWeight)
}

// fail wraps err as a search.ProposalError naming the model, so the run
// records the failure (and its tokens) as a node the bandit learns from.
func (o *Op) fail(m Model, syn *brief.Synthesis, tokens int, err error) error {
	raw, _ := json.Marshal(Input{Model: m.Name, BaseURL: m.BaseURL, ContextVersion: syn.Version, ContextHash: syn.Hash, ContextTokens: syn.Tokens})
	return &search.ProposalError{Err: err, Inputs: raw, Tokens: tokens}
}

func modelNames(ms []Model) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

// notes is the answer's first line of prose before its code block,
// prefixed with the model.
func notes(answer, model, kind string) string {
	prose, _, _ := strings.Cut(answer, "```")
	for _, l := range strings.Split(prose, "\n") {
		l = strings.TrimSpace(l)
		if l != "" && !strings.HasPrefix(l, "```") {
			return model + " (" + kind + "): " + head(l, 200)
		}
	}
	return model + " (" + kind + ")"
}

func head(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
