// Package retrieval indexes the knowledge base (the embedded tree plus users'
// own --kb directories) in SQLite and answers hybrid, hierarchy-aware and
// runtime-aware queries: FTS5 BM25 and chromem-go vector rankings fused by
// reciprocal rank, scoped to the device's arch, then vendor, then generic.
package retrieval

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/philippgille/chromem-go"

	"github.com/kevolve/kevolve-mcp/knowledge"
)

// BuiltinLabel is the source label of the embedded knowledge base; its
// documents keep their plain paths ("guidance/coalescing.md").
const BuiltinLabel = "builtin"

// Source is one tree of documents. Documents of a non-builtin source get
// paths "<Label>/<relative path>".
type Source struct {
	Label string
	FS    fs.FS
	// Origin says where the tree came from (a directory), for messages.
	Origin string
}

// Builtin is the embedded knowledge base.
func Builtin() Source {
	return Source{Label: BuiltinLabel, FS: knowledge.Embedded(), Origin: "embedded"}
}

var labelRe = regexp.MustCompile(`[^a-z0-9_-]+`)

// DirSource is a user's own tree (--kb DIR). Its label is the directory's
// base name, made URI-safe; a label that would shadow a folder of the
// builtin tree is prefixed with "user-".
func DirSource(dir string) Source {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	label := labelRe.ReplaceAllString(strings.ToLower(filepath.Base(abs)), "-")
	label = strings.Trim(label, "-")
	if label == "" || label == BuiltinLabel || slices.Contains(knowledge.Kinds, label) {
		label = "user-" + label
	}
	return Source{Label: label, FS: os.DirFS(abs), Origin: abs}
}

// DocInfo is a document's metadata as indexed.
type DocInfo struct {
	Path        string   `json:"path"`
	Source      string   `json:"source"`
	Kind        string   `json:"kind"`
	Title       string   `json:"title"`
	Summary     string   `json:"summary,omitempty"`
	Vendor      string   `json:"vendor"`
	Arch        string   `json:"arch"`
	Topics      []string `json:"topics,omitempty"`
	Bottlenecks []string `json:"bottlenecks,omitempty"`
	Languages   []string `json:"languages,omitempty"`
	Operators   []string `json:"operators,omitempty"`
	Hash        string   `json:"hash"`
}

// Document is a document with its body, for Get and MCP resources.
type Document struct {
	DocInfo
	Body string `json:"body"`
}

type passageRec struct {
	id      int64
	path    string
	heading string
	text    string
}

// BuildStats says what Open did to the stored index.
type BuildStats struct {
	Added, Updated, Removed, Unchanged int
	Passages                           int
	Duration                           time.Duration
}

// Index is an opened knowledge index. It is safe for concurrent searches.
type Index struct {
	db       *sql.DB
	emb      Embedder
	docs     map[string]*Document // by path
	rowPath  map[int64]string     // kb_documents rowid -> path
	order    []string             // paths, sorted
	passages map[int64]*passageRec
	byDoc    map[string][]int64
	coll     *chromem.Collection
	stats    BuildStats
}

const schemaVersion = "2"

var schema = []string{
	`CREATE TABLE IF NOT EXISTS kb_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS kb_documents(
		path TEXT PRIMARY KEY, source TEXT NOT NULL, kind TEXT NOT NULL,
		title TEXT NOT NULL, summary TEXT NOT NULL, vendor TEXT NOT NULL, arch TEXT NOT NULL,
		topics TEXT NOT NULL, bottlenecks TEXT NOT NULL, languages TEXT NOT NULL, operators TEXT NOT NULL,
		hash TEXT NOT NULL, body TEXT NOT NULL, indexed_at INTEGER NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS kb_passages(
		id INTEGER PRIMARY KEY, path TEXT NOT NULL, ord INTEGER NOT NULL,
		heading TEXT NOT NULL, text TEXT NOT NULL, embedding BLOB NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS kb_passages_path ON kb_passages(path)`,
	// Porter stemming so "coalesce" finds "coalescing"; the meta column
	// carries topics, bottlenecks, operators and languages of the document.
	`CREATE VIRTUAL TABLE IF NOT EXISTS kb_fts USING fts5(title, summary, meta, heading, text, tokenize='porter unicode61')`,
	// Whole documents too: words of a query that a document spreads over
	// several passages still meet here.
	`CREATE VIRTUAL TABLE IF NOT EXISTS kb_docfts USING fts5(title, summary, meta, body, tokenize='porter unicode61')`,
}

// migrate creates the kb_ tables, or recreates them when an older schema
// version is found (they are a cache of the Markdown, so nothing is lost).
func migrate(ctx context.Context, db *sql.DB) error {
	var v string
	err := db.QueryRowContext(ctx, `SELECT value FROM kb_meta WHERE key='schema'`).Scan(&v)
	if err == nil && v != schemaVersion {
		for _, t := range []string{"kb_docfts", "kb_fts", "kb_passages", "kb_documents", "kb_meta"} {
			if _, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+t); err != nil {
				return fmt.Errorf("drop old %s: %w", t, err)
			}
		}
	}
	for _, s := range schema {
		if _, err := db.ExecContext(ctx, s); err != nil {
			if strings.Contains(err.Error(), "no such module: fts5") {
				return fmt.Errorf("create knowledge tables: SQLite lacks FTS5; build with -tags sqlite_fts5: %w", err)
			}
			return fmt.Errorf("create knowledge tables: %w", err)
		}
	}
	_, err = db.ExecContext(ctx, `INSERT INTO kb_meta(key,value) VALUES('schema',?)
		ON CONFLICT(key) DO UPDATE SET value=excluded.value`, schemaVersion)
	if err != nil {
		return fmt.Errorf("record knowledge schema version: %w", err)
	}
	return nil
}

// Open indexes the embedded knowledge base plus the given sources (users'
// --kb directories) into db, incrementally, and returns the index. emb nil
// means the default offline embedder.
func Open(ctx context.Context, db *sql.DB, emb Embedder, sources ...Source) (*Index, error) {
	return OpenSources(ctx, db, emb, append([]Source{Builtin()}, sources...)...)
}

// OpenSources indexes exactly the given sources: documents of any other
// source stored earlier are removed from the index.
func OpenSources(ctx context.Context, db *sql.DB, emb Embedder, sources ...Source) (*Index, error) {
	start := time.Now()
	if emb == nil {
		emb = NewHashEmbedder(0)
	}
	if err := migrate(ctx, db); err != nil {
		return nil, err
	}
	labels := map[string]bool{}
	var all []Document
	for _, src := range sources {
		if src.Label == "" || labelRe.MatchString(src.Label) {
			return nil, fmt.Errorf("knowledge source %q (%s): label must be non-empty [a-z0-9_-]", src.Label, src.Origin)
		}
		if labels[src.Label] {
			return nil, fmt.Errorf("knowledge source %s: label %q used twice; rename one directory", src.Origin, src.Label)
		}
		labels[src.Label] = true
		docs, err := knowledge.Load(src.FS)
		if err != nil {
			return nil, fmt.Errorf("knowledge source %s (%s): %w", src.Label, src.Origin, err)
		}
		for _, d := range docs {
			kind := d.Kind() // of the path inside its own tree
			if src.Label != BuiltinLabel {
				if err := d.Validate(); err != nil {
					slog.Warn("knowledge document outside the vocabulary; indexed anyway", "source", src.Label, "err", err)
				}
				d.Path = src.Label + "/" + d.Path
			}
			all = append(all, toDocument(src.Label, kind, d))
		}
	}
	ix := &Index{db: db, emb: emb}
	stats, err := ix.sync(ctx, all)
	if err != nil {
		return nil, err
	}
	if err := ix.loadMemory(ctx); err != nil {
		return nil, err
	}
	stats.Passages = len(ix.passages)
	stats.Duration = time.Since(start)
	ix.stats = stats
	slog.Debug("knowledge index ready", "docs", len(ix.docs), "passages", stats.Passages,
		"added", stats.Added, "updated", stats.Updated, "removed", stats.Removed, "took", stats.Duration)
	return ix, nil
}

func toDocument(source, kind string, d knowledge.Doc) Document {
	return Document{DocInfo: DocInfo{
		Path: d.Path, Source: source, Kind: kind, Title: d.Title, Summary: d.Summary,
		Vendor: d.Vendor, Arch: d.Arch, Topics: d.Topics, Bottlenecks: d.Bottlenecks,
		Languages: d.Languages, Operators: d.Operators, Hash: d.Hash,
	}, Body: d.Body}
}

// Stats returns what the last Open did.
func (ix *Index) Stats() BuildStats { return ix.stats }

// RemoteEmbedder reports whether queries are embedded by a service over the
// network (Ollama, an OpenAI-compatible endpoint) rather than in process:
// search_knowledge's openWorldHint says so to clients.
func (ix *Index) RemoteEmbedder() bool {
	_, local := ix.emb.(*HashEmbedder)
	return ix.emb != nil && !local
}

// sync brings the stored tables in line with docs: unchanged hashes are
// skipped, changed documents re-indexed, vanished ones deleted. A different
// embedder than the one that built the index re-embeds everything.
func (ix *Index) sync(ctx context.Context, docs []Document) (BuildStats, error) {
	var st BuildStats
	var prevEmb string
	err := ix.db.QueryRowContext(ctx, `SELECT value FROM kb_meta WHERE key='embedder'`).Scan(&prevEmb)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return st, fmt.Errorf("read knowledge embedder: %w", err)
	}
	reembed := prevEmb != ix.emb.Name()
	stored, err := ix.storedHashes(ctx)
	if err != nil {
		return st, err
	}
	plan, err := planSync(docs, stored, reembed)
	if err != nil {
		return st, err
	}
	st = plan.stats
	vecs, err := ix.embedAll(ctx, plan.texts)
	if err != nil {
		return st, err
	}
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return st, fmt.Errorf("begin knowledge index update: %w", err)
	}
	defer tx.Rollback()
	for _, p := range plan.removed {
		if err := deleteDoc(ctx, tx, p); err != nil {
			return st, err
		}
	}
	if err := insertDocs(ctx, tx, plan.todo, stored, vecs); err != nil {
		return st, err
	}
	if reembed {
		_, err := tx.ExecContext(ctx, `INSERT INTO kb_meta(key,value) VALUES('embedder',?)
			ON CONFLICT(key) DO UPDATE SET value=excluded.value`, ix.emb.Name())
		if err != nil {
			return st, fmt.Errorf("record knowledge embedder: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return st, fmt.Errorf("commit knowledge index update: %w", err)
	}
	return st, nil
}

// storedHashes maps each indexed document's path to its content hash.
func (ix *Index) storedHashes(ctx context.Context) (map[string]string, error) {
	stored := map[string]string{}
	rows, err := ix.db.QueryContext(ctx, `SELECT path, hash FROM kb_documents`)
	if err != nil {
		return nil, fmt.Errorf("read indexed documents: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p, h string
		if err := rows.Scan(&p, &h); err != nil {
			return nil, fmt.Errorf("read indexed documents: %w", err)
		}
		stored[p] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read indexed documents: %w", err)
	}
	return stored, nil
}

// pendingDoc is a document to (re-)index with its passages.
type pendingDoc struct {
	doc      Document
	passages []passage
}

// syncPlan is what one sync changes: documents to index (with the texts
// to embed, in passage order), paths to delete, and the counts.
type syncPlan struct {
	todo    []pendingDoc
	texts   []string
	removed []string
	stats   BuildStats
}

func planSync(docs []Document, stored map[string]string, reembed bool) (syncPlan, error) {
	var plan syncPlan
	seen := map[string]bool{}
	for _, d := range docs {
		if seen[d.Path] {
			return plan, fmt.Errorf("knowledge document %s appears twice", d.Path)
		}
		seen[d.Path] = true
		h, ok := stored[d.Path]
		switch {
		case ok && h == d.Hash && !reembed:
			plan.stats.Unchanged++
			continue
		case ok:
			plan.stats.Updated++
		default:
			plan.stats.Added++
		}
		ps := splitPassages(d.Body)
		if len(ps) == 0 {
			ps = []passage{{Text: d.Summary}}
		}
		plan.todo = append(plan.todo, pendingDoc{d, ps})
		for _, p := range ps {
			plan.texts = append(plan.texts, embedText(&d, p))
		}
	}
	for p := range stored {
		if !seen[p] {
			plan.removed = append(plan.removed, p)
		}
	}
	plan.stats.Removed = len(plan.removed)
	return plan, nil
}

// embedAll embeds texts in one call and checks the embedder answered each.
func (ix *Index) embedAll(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	vecs, err := ix.emb.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embed knowledge passages with %s: %w", ix.emb.Name(), err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("embedder %s returned %d vectors for %d passages", ix.emb.Name(), len(vecs), len(texts))
	}
	return vecs, nil
}

// deleteDoc removes a document, its passages and their full-text rows.
func deleteDoc(ctx context.Context, tx *sql.Tx, p string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM kb_fts WHERE rowid IN (SELECT id FROM kb_passages WHERE path=?)`, p); err != nil {
		return fmt.Errorf("delete passages of %s from full-text index: %w", p, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM kb_docfts WHERE rowid IN (SELECT rowid FROM kb_documents WHERE path=?)`, p); err != nil {
		return fmt.Errorf("delete %s from full-text index: %w", p, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM kb_passages WHERE path=?`, p); err != nil {
		return fmt.Errorf("delete passages of %s: %w", p, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM kb_documents WHERE path=?`, p); err != nil {
		return fmt.Errorf("delete document %s: %w", p, err)
	}
	return nil
}

// docInserter holds the prepared statements that index documents.
type docInserter struct {
	tx                *sql.Tx
	doc, passage, fts *sql.Stmt
	now               int64
}

func newDocInserter(ctx context.Context, tx *sql.Tx) (*docInserter, error) {
	in := &docInserter{tx: tx, now: time.Now().Unix()}
	var err error
	if in.doc, err = tx.PrepareContext(ctx, `INSERT INTO kb_documents(path,source,kind,title,summary,vendor,arch,
		topics,bottlenecks,languages,operators,hash,body,indexed_at) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?)`); err != nil {
		return nil, fmt.Errorf("prepare document insert: %w", err)
	}
	if in.passage, err = tx.PrepareContext(ctx, `INSERT INTO kb_passages(path,ord,heading,text,embedding) VALUES(?,?,?,?,?)`); err != nil {
		in.close()
		return nil, fmt.Errorf("prepare passage insert: %w", err)
	}
	if in.fts, err = tx.PrepareContext(ctx, `INSERT INTO kb_fts(rowid,title,summary,meta,heading,text) VALUES(?,?,?,?,?,?)`); err != nil {
		in.close()
		return nil, fmt.Errorf("prepare full-text insert: %w", err)
	}
	return in, nil
}

func (in *docInserter) close() {
	for _, s := range []*sql.Stmt{in.doc, in.passage, in.fts} {
		if s != nil {
			s.Close()
		}
	}
}

// insertDocs indexes each pending document (replacing a stored version)
// with its passages; vecs holds their vectors in passage order.
func insertDocs(ctx context.Context, tx *sql.Tx, todo []pendingDoc, stored map[string]string, vecs [][]float32) error {
	in, err := newDocInserter(ctx, tx)
	if err != nil {
		return err
	}
	defer in.close()
	vi := 0
	for _, t := range todo {
		if _, ok := stored[t.doc.Path]; ok {
			if err := deleteDoc(ctx, tx, t.doc.Path); err != nil {
				return err
			}
		}
		if err := in.insert(ctx, t, vecs[vi:vi+len(t.passages)]); err != nil {
			return err
		}
		vi += len(t.passages)
	}
	return nil
}

// insert indexes one document and its passages.
func (in *docInserter) insert(ctx context.Context, t pendingDoc, vecs [][]float32) error {
	d := t.doc
	res, err := in.doc.ExecContext(ctx, d.Path, d.Source, d.Kind, d.Title, d.Summary, d.Vendor, d.Arch,
		joinList(d.Topics), joinList(d.Bottlenecks), joinList(d.Languages), joinList(d.Operators),
		d.Hash, d.Body, in.now)
	if err != nil {
		return fmt.Errorf("insert document %s: %w", d.Path, err)
	}
	docID, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("document id of %s: %w", d.Path, err)
	}
	meta := metaText(&d.DocInfo)
	if _, err := in.tx.ExecContext(ctx, `INSERT INTO kb_docfts(rowid,title,summary,meta,body) VALUES(?,?,?,?,?)`,
		docID, d.Title, d.Summary, meta, d.Body); err != nil {
		return fmt.Errorf("full-text index %s: %w", d.Path, err)
	}
	for i, p := range t.passages {
		res, err := in.passage.ExecContext(ctx, d.Path, i, p.Heading, p.Text, encodeVec(vecs[i]))
		if err != nil {
			return fmt.Errorf("insert passage %d of %s: %w", i, d.Path, err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("passage id of %s: %w", d.Path, err)
		}
		if _, err := in.fts.ExecContext(ctx, id, d.Title, d.Summary, meta, p.Heading, p.Text); err != nil {
			return fmt.Errorf("full-text index passage %d of %s: %w", i, d.Path, err)
		}
	}
	return nil
}

// embedText is what a passage's vector represents: the passage in the
// context of its document, so a short passage still carries its topic.
func embedText(d *Document, p passage) string {
	return d.Title + ". " + d.Summary + " " + strings.Join(d.Topics, " ") + ". " + p.Heading + ". " + p.Text
}

// metaText is the FTS "meta" column: front-matter words, with vocabulary
// hyphens kept as phrases ("memory-bound" is searchable as "memory bound").
func metaText(d *DocInfo) string {
	parts := slices.Concat(d.Topics, d.Bottlenecks, d.Operators, d.Languages)
	return strings.Join(parts, " ")
}

func joinList(l []string) string { return strings.Join(l, ",") }

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func encodeVec(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVec(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("stored embedding has %d bytes, not a multiple of 4", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// loadMemory reads the stored index into memory and builds the chromem-go
// collection from the stored vectors: no embedding call is made here.
func (ix *Index) loadMemory(ctx context.Context) error {
	ix.docs = map[string]*Document{}
	ix.rowPath = map[int64]string{}
	ix.passages = map[int64]*passageRec{}
	ix.byDoc = map[string][]int64{}
	rows, err := ix.db.QueryContext(ctx, `SELECT rowid,path,source,kind,title,summary,vendor,arch,topics,bottlenecks,
		languages,operators,hash,body FROM kb_documents ORDER BY path`)
	if err != nil {
		return fmt.Errorf("load knowledge documents: %w", err)
	}
	for rows.Next() {
		var d Document
		var rowid int64
		var topics, bns, langs, ops string
		if err := rows.Scan(&rowid, &d.Path, &d.Source, &d.Kind, &d.Title, &d.Summary, &d.Vendor, &d.Arch,
			&topics, &bns, &langs, &ops, &d.Hash, &d.Body); err != nil {
			rows.Close()
			return fmt.Errorf("load knowledge documents: %w", err)
		}
		d.Topics, d.Bottlenecks, d.Languages, d.Operators = splitList(topics), splitList(bns), splitList(langs), splitList(ops)
		ix.docs[d.Path] = &d
		ix.rowPath[rowid] = d.Path
		ix.order = append(ix.order, d.Path)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load knowledge documents: %w", err)
	}

	// The embedding function is never called for documents (each carries its
	// vector); it is set so chromem-go never falls back to its OpenAI default.
	embFn := func(ctx context.Context, text string) ([]float32, error) {
		v, err := ix.emb.Embed(ctx, []string{text})
		if err != nil {
			return nil, err
		}
		return v[0], nil
	}
	cdb := chromem.NewDB()
	coll, err := cdb.CreateCollection("kb", nil, embFn)
	if err != nil {
		return fmt.Errorf("create vector collection: %w", err)
	}
	rows, err = ix.db.QueryContext(ctx, `SELECT id,path,heading,text,embedding FROM kb_passages ORDER BY path, ord`)
	if err != nil {
		return fmt.Errorf("load knowledge passages: %w", err)
	}
	var cdocs []chromem.Document
	for rows.Next() {
		var p passageRec
		var blob []byte
		if err := rows.Scan(&p.id, &p.path, &p.heading, &p.text, &blob); err != nil {
			rows.Close()
			return fmt.Errorf("load knowledge passages: %w", err)
		}
		vec, err := decodeVec(blob)
		if err != nil {
			rows.Close()
			return fmt.Errorf("passage %d of %s: %w", p.id, p.path, err)
		}
		ix.passages[p.id] = &p
		ix.byDoc[p.path] = append(ix.byDoc[p.path], p.id)
		cdocs = append(cdocs, chromem.Document{ID: strconv.FormatInt(p.id, 10), Embedding: normalize(vec)})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("load knowledge passages: %w", err)
	}
	if len(cdocs) > 0 {
		if err := coll.AddDocuments(ctx, cdocs, runtime.GOMAXPROCS(0)); err != nil {
			return fmt.Errorf("fill vector collection: %w", err)
		}
	}
	ix.coll = coll
	return nil
}

// List returns every indexed document's metadata, sorted by path.
func (ix *Index) List() []DocInfo {
	out := make([]DocInfo, 0, len(ix.order))
	for _, p := range ix.order {
		out = append(out, ix.docs[p].DocInfo)
	}
	return out
}

// Get returns one document with its body; ok is false if no such path.
func (ix *Index) Get(path string) (Document, bool) {
	d, ok := ix.docs[path]
	if !ok {
		return Document{}, false
	}
	return *d, true
}
