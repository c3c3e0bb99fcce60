package retrieval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
)

// Embedder turns texts into vectors. Name identifies the model and its
// dimension: the index stores it, and a different name on reopen re-embeds
// every passage (vectors of two models must never be compared).
type Embedder interface {
	Name() string
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// HashEmbedder is the default embedder: offline, deterministic, no model
// download. It hashes word unigrams, word bigrams and character trigrams into
// a fixed number of signed buckets (the "hashing trick"), weights counts
// sublinearly (1+ln tf) and L2-normalizes. It captures lexical and
// morphological overlap (e.g. "coalesce" ~ "coalescing" through trigrams),
// which complements BM25's exact-token matching in the fusion.
type HashEmbedder struct{ Dims int }

// NewHashEmbedder returns the default embedder with dims buckets (512 if
// dims <= 0).
func NewHashEmbedder(dims int) *HashEmbedder {
	if dims <= 0 {
		dims = 512
	}
	return &HashEmbedder{Dims: dims}
}

// Name implements Embedder.
func (h *HashEmbedder) Name() string { return fmt.Sprintf("hash-v1-%d", h.Dims) }

// Embed implements Embedder; it never fails.
func (h *HashEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = h.embed(t)
	}
	return out, nil
}

// Feature weights: words carry most meaning, bigrams add phrase sense
// ("shared memory" vs "memory shared"), trigrams add morphology.
const (
	wUni  = 1.0
	wBi   = 0.6
	wTri  = 0.25
	trigN = 3
)

func (h *HashEmbedder) embed(text string) []float32 {
	counts := map[string]float64{}
	words := contentWords(tokenize(text))
	for i, w := range words {
		counts["u:"+w] += wUni
		if i > 0 {
			counts["b:"+words[i-1]+" "+w] += wBi
		}
		padded := "^" + w + "$"
		if len(padded) > trigN {
			for j := 0; j+trigN <= len(padded); j++ {
				counts["t:"+padded[j:j+trigN]] += wTri
			}
		}
	}
	vec := make([]float64, h.Dims)
	for feat, c := range counts {
		hs := fnv.New64a()
		hs.Write([]byte(feat))
		x := hs.Sum64()
		idx := int(x % uint64(h.Dims))
		sign := 1.0
		if (x>>63)&1 == 1 {
			sign = -1
		}
		// Sublinear: a word said ten times is not ten times as relevant.
		vec[idx] += sign * (1 + math.Log(1+c))
	}
	var norm float64
	for _, v := range vec {
		norm += v * v
	}
	out := make([]float32, h.Dims)
	if norm == 0 {
		// chromem-go rejects a zero vector's normalization; a unit vector in
		// a fixed bucket keeps empty texts comparable and harmless.
		out[0] = 1
		return out
	}
	norm = math.Sqrt(norm)
	for i, v := range vec {
		out[i] = float32(v / norm)
	}
	return out
}

// httpEmbedder is shared by the Ollama and OpenAI-compatible clients.
type httpEmbedder struct {
	url, model, key string
	client          *http.Client
	batch           int
}

func (e *httpEmbedder) post(ctx context.Context, url string, body, into any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode embedding request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("embedding request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if e.key != "" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("embedding request to %s: %w", url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("read embedding response from %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("embedding endpoint %s: %s: %s", url, resp.Status, strings.TrimSpace(string(truncate(data, 300))))
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("decode embedding response from %s: %w", url, err)
	}
	return nil
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// batched calls f on slices of at most size texts and concatenates results,
// checking that every text got exactly one vector of one dimension.
func batched(ctx context.Context, texts []string, size int, f func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += size {
		end := min(start+size, len(texts))
		vecs, err := f(ctx, texts[start:end])
		if err != nil {
			return nil, err
		}
		if len(vecs) != end-start {
			return nil, fmt.Errorf("embedding endpoint returned %d vectors for %d texts", len(vecs), end-start)
		}
		out = append(out, vecs...)
	}
	for i, v := range out {
		if len(v) == 0 || len(v) != len(out[0]) {
			return nil, fmt.Errorf("embedding %d has dimension %d, want %d", i, len(v), len(out[0]))
		}
	}
	return out, nil
}

// Ollama embeds through an Ollama server's /api/embed endpoint.
type Ollama struct{ httpEmbedder }

// NewOllama returns an embedder for an Ollama server at url (e.g.
// "http://localhost:11434") and an embedding model (e.g. "nomic-embed-text").
func NewOllama(url, model string) *Ollama {
	return &Ollama{httpEmbedder{url: strings.TrimRight(url, "/"), model: model,
		client: &http.Client{Timeout: 120 * time.Second}, batch: 64}}
}

// Name implements Embedder.
func (o *Ollama) Name() string { return "ollama:" + o.model }

// Embed implements Embedder.
func (o *Ollama) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return batched(ctx, texts, o.batch, func(ctx context.Context, part []string) ([][]float32, error) {
		var resp struct {
			Embeddings [][]float32 `json:"embeddings"`
			Error      string      `json:"error"`
		}
		err := o.post(ctx, o.url+"/api/embed", map[string]any{"model": o.model, "input": part}, &resp)
		if err != nil {
			return nil, fmt.Errorf("ollama %s: %w", o.model, err)
		}
		if resp.Error != "" {
			return nil, fmt.Errorf("ollama %s: %s", o.model, resp.Error)
		}
		return resp.Embeddings, nil
	})
}

// OpenAICompat embeds through an OpenAI-compatible /embeddings endpoint
// (OpenAI, vLLM, llama.cpp server, LM Studio, ...).
type OpenAICompat struct{ httpEmbedder }

// NewOpenAICompat returns an embedder for baseURL (e.g.
// "https://api.openai.com/v1"; "/embeddings" is appended), model and API key
// (may be empty for local servers).
func NewOpenAICompat(baseURL, model, key string) *OpenAICompat {
	return &OpenAICompat{httpEmbedder{url: strings.TrimRight(baseURL, "/"), model: model, key: key,
		client: &http.Client{Timeout: 120 * time.Second}, batch: 128}}
}

// Name implements Embedder.
func (o *OpenAICompat) Name() string { return "openai:" + o.url + ":" + o.model }

// Embed implements Embedder.
func (o *OpenAICompat) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return batched(ctx, texts, o.batch, func(ctx context.Context, part []string) ([][]float32, error) {
		var resp struct {
			Data []struct {
				Index     int       `json:"index"`
				Embedding []float32 `json:"embedding"`
			} `json:"data"`
		}
		err := o.post(ctx, o.url+"/embeddings", map[string]any{"model": o.model, "input": part}, &resp)
		if err != nil {
			return nil, fmt.Errorf("openai-compatible %s: %w", o.model, err)
		}
		out := make([][]float32, len(part))
		for _, d := range resp.Data {
			if d.Index < 0 || d.Index >= len(out) {
				return nil, fmt.Errorf("openai-compatible %s: index %d out of range", o.model, d.Index)
			}
			out[d.Index] = d.Embedding
		}
		for i, v := range out {
			if v == nil {
				return nil, errors.New("openai-compatible " + o.model + ": no embedding for input " + fmt.Sprint(i))
			}
		}
		return out, nil
	})
}

// normalize returns v scaled to unit length (chromem-go's cosine similarity
// assumes normalized vectors). A zero vector stays zero.
func normalize(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return v
	}
	n = math.Sqrt(n)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

// ParseEmbedder turns a --embedder flag into an Embedder:
//
//	"" or "hash"               the offline default (512 dims)
//	"hash:DIMS"                the offline default with DIMS buckets
//	"ollama:MODEL[@URL]"       Ollama (URL default http://localhost:11434)
//	"openai:MODEL[@BASEURL]"   OpenAI-compatible (default https://api.openai.com/v1),
//	                           key from $OPENAI_API_KEY (getenv)
func ParseEmbedder(spec string, getenv func(string) string) (Embedder, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	model, url, _ := strings.Cut(rest, "@")
	switch kind {
	case "", "hash":
		dims := 0
		if rest != "" {
			if _, err := fmt.Sscanf(rest, "%d", &dims); err != nil || dims < 16 {
				return nil, fmt.Errorf("embedder %q: hash dims must be a number >= 16", spec)
			}
		}
		return NewHashEmbedder(dims), nil
	case "ollama":
		if model == "" {
			return nil, fmt.Errorf("embedder %q: want ollama:MODEL[@URL]", spec)
		}
		if url == "" {
			url = "http://localhost:11434"
		}
		return NewOllama(url, model), nil
	case "openai":
		if model == "" {
			return nil, fmt.Errorf("embedder %q: want openai:MODEL[@BASEURL]", spec)
		}
		if url == "" {
			url = "https://api.openai.com/v1"
		}
		return NewOpenAICompat(url, model, getenv("OPENAI_API_KEY")), nil
	default:
		return nil, fmt.Errorf("embedder %q: unknown kind %q (hash, ollama, openai)", spec, kind)
	}
}
