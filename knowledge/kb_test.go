package knowledge

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, path, src string
		want            Doc
		wantErr         string
	}{
		{
			name: "full front matter",
			path: "guidance/coalescing.md",
			src: "---\ntitle: Coalesced access\nsummary: Do it.\nvendor: generic\narch: generic\n" +
				"topics: [memory, Coalescing]\nbottlenecks: [memory-bound, uncoalesced]\nlanguages: [cuda, triton]\n" +
				"operators: [elementwise]\n---\nBody text.\n",
			want: Doc{Path: "guidance/coalescing.md", Title: "Coalesced access", Summary: "Do it.", Vendor: "generic",
				Arch: "generic", Topics: []string{"memory", "coalescing"}, Bottlenecks: []string{"memory-bound", "uncoalesced"},
				Languages: []string{"cuda", "triton"}, Operators: []string{"elementwise"}, Body: "Body text."},
		},
		{
			name: "scope and title from the path when missing",
			path: "hardware/nvidia/hopper/tma-notes.md",
			src:  "---\ntopics: tma, async copy\n---\nText.",
			want: Doc{Path: "hardware/nvidia/hopper/tma-notes.md", Title: "Tma notes", Vendor: "nvidia", Arch: "hopper",
				Topics: []string{"tma", "async copy"}, Body: "Text."},
		},
		{
			name: "vendor from arch, title from heading, CRLF",
			path: "x/notes.md",
			src:  "---\r\narch: cdna3\r\n---\r\n# MFMA shapes\r\nText.\r\n",
			want: Doc{Path: "x/notes.md", Title: "MFMA shapes", Vendor: "amd", Arch: "cdna3", Body: "# MFMA shapes\nText."},
		},
		{
			name: "no front matter at all",
			path: "hardware/cpu/avx.md",
			src:  "Plain body.",
			want: Doc{Path: "hardware/cpu/avx.md", Title: "Avx", Vendor: "cpu", Arch: "generic", Body: "Plain body."},
		},
		{
			name: "empty front matter",
			path: "a.md",
			src:  "---\n---\nBody.",
			want: Doc{Path: "a.md", Title: "A", Vendor: "generic", Arch: "generic", Body: "Body."},
		},
		{name: "unclosed front matter", path: "bad/open.md", src: "---\ntitle: x\nBody.", wantErr: "bad/open.md: front matter opened"},
		{name: "malformed yaml", path: "bad/yaml.md", src: "---\ntitle: [unclosed\n---\nBody.", wantErr: "bad/yaml.md: front matter"},
		{name: "topics not a list", path: "bad/topics.md", src: "---\ntopics: {a: b}\n---\nBody.", wantErr: "bad/topics.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.path, []byte(tt.src))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Hash) != 64 {
				t.Errorf("hash %q", got.Hash)
			}
			got.Hash = ""
			if !equalDoc(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func equalDoc(a, b Doc) bool {
	return a.Path == b.Path && a.Title == b.Title && a.Summary == b.Summary && a.Vendor == b.Vendor &&
		a.Arch == b.Arch && slices.Equal(a.Topics, b.Topics) && slices.Equal(a.Bottlenecks, b.Bottlenecks) &&
		slices.Equal(a.Languages, b.Languages) && slices.Equal(a.Operators, b.Operators) && a.Body == b.Body
}

func TestValidate(t *testing.T) {
	ok := Doc{Path: "p.md", Title: "T", Vendor: "nvidia", Arch: "hopper", Bottlenecks: []string{"memory-bound"}, Body: "b"}
	tests := []struct {
		name    string
		mut     func(*Doc)
		wantErr string
	}{
		{"valid", func(*Doc) {}, ""},
		{"unknown bottleneck", func(d *Doc) { d.Bottlenecks = []string{"slow"} }, `bottleneck "slow"`},
		{"unknown vendor", func(d *Doc) { d.Vendor = "intel" }, `vendor "intel"`},
		{"arch of another vendor", func(d *Doc) { d.Arch = "cdna3" }, `belongs to vendor "amd"`},
		{"unknown operator", func(d *Doc) { d.Operators = []string{"fft"} }, `operator "fft"`},
		{"empty body", func(d *Doc) { d.Body = " " }, "empty body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := ok
			tt.mut(&d)
			err := d.Validate()
			if tt.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "p.md")) {
				t.Fatalf("err = %v, want %q naming the file", err, tt.wantErr)
			}
		})
	}
}

func TestLoadSkipsAndSorts(t *testing.T) {
	fsys := fstest.MapFS{
		"b/two.md":        {Data: []byte("---\ntitle: Two\n---\nx")},
		"a/one.md":        {Data: []byte("---\ntitle: One\n---\nx")},
		"README.md":       {Data: []byte("# about this tree")},
		".hidden/x.md":    {Data: []byte("x")},
		"a/_draft.md":     {Data: []byte("x")},
		"a/notes.txt":     {Data: []byte("x")},
		"c/deep/three.MD": {Data: []byte("x")},
	}
	docs, err := Load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, d := range docs {
		paths = append(paths, d.Path)
	}
	want := []string{"a/one.md", "b/two.md", "c/deep/three.MD"}
	if !slices.Equal(paths, want) {
		t.Fatalf("paths %v, want %v", paths, want)
	}
}

// TestEmbedded holds the shipped knowledge base to its own format: every
// document parses, uses the vocabularies, and each folder of the tree is
// present.
func TestEmbedded(t *testing.T) {
	docs, err := Load(Embedded())
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	titles := map[string]string{}
	for _, d := range docs {
		if err := d.Validate(); err != nil {
			t.Error(err)
		}
		if !slices.Contains(Kinds, d.Kind()) {
			t.Errorf("%s: outside the tree's folders %v", d.Path, Kinds)
		}
		if d.Summary == "" {
			t.Errorf("%s: no summary", d.Path)
		}
		if prev, ok := titles[d.Title]; ok {
			t.Errorf("%s and %s share the title %q", prev, d.Path, d.Title)
		}
		titles[d.Title] = d.Path
		kinds[d.Kind()]++
		// Hardware documents must say which hardware in their front matter
		// and agree with their folder, or scoping would misplace them.
		if d.Kind() == "hardware" {
			v, a := scopeFromPath(d.Path)
			if d.Vendor != v || (a != "generic" && d.Arch != a) {
				t.Errorf("%s: front matter %s/%s disagrees with its folder %s/%s", d.Path, d.Vendor, d.Arch, v, a)
			}
		}
	}
	for _, k := range Kinds {
		if kinds[k] == 0 {
			t.Errorf("no documents under %s/", k)
		}
	}
	t.Logf("%d documents: %v", len(docs), kinds)
}
